//! Pieces several adapters share, kept here rather than in one sibling's folder: the settings
//! files of the CLIs configured only through files, the error texts of the providers most CLIs
//! reach, and the tool-call events of the CLIs whose tools take Gemini CLI's inputs.

pub(crate) mod failure_texts;
pub(crate) mod settings_files;
pub(crate) mod tool_calls;
