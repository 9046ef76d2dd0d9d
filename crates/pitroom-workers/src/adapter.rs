//! The contract every worker adapter implements.

use std::ffi::OsString;
use std::path::PathBuf;

use serde_json::Value;

use crate::events::{FailureKind, Mode, WorkerEvent};
use crate::{find_binary, program_of, BinaryNotFound};

/// Directories a run gives its worker, so it never writes into the user's home.
#[derive(Debug, Clone)]
pub struct StateDirs {
    /// Persistent per-backend state shared by runs (sessions live here, so `--continue` works).
    pub shared: PathBuf,
    /// Per-run scratch (temp files, locks, daemon discovery); removed after the run.
    pub scratch: PathBuf,
}

/// Everything an adapter needs to build one invocation.
#[derive(Debug, Clone)]
pub struct InvocationRequest {
    pub mode: Mode,
    pub model: Option<String>,
    pub effort: Option<String>,
    pub web: bool,
    /// The directory the worker works in (the project, or a copy of it).
    pub workdir: PathBuf,
    pub dirs: StateDirs,
    /// A session to resume (`--continue`).
    pub resume_session: Option<String>,
    /// A short title for the CLI's session list.
    pub title: String,
    /// The file the engine writes the prompt to before the launch (a config-described CLI
    /// may name it in an argument as `{prompt_file}`).
    pub prompt_file: PathBuf,
    /// The caller's environment, as (name, value) pairs.
    pub env: Vec<(String, String)>,
}

impl InvocationRequest {
    /// A request for unit tests: work dir `/w`, state dirs `/s` (shared) and `/t` (scratch),
    /// no model, and the environment `env`.
    #[cfg(test)]
    pub(crate) fn for_test<K: ToString>(mode: Mode, env: Vec<(K, String)>) -> Self {
        InvocationRequest {
            mode,
            model: None,
            effort: None,
            web: false,
            workdir: "/w".into(),
            dirs: StateDirs {
                shared: "/s".into(),
                scratch: "/t".into(),
            },
            resume_session: None,
            title: "t".into(),
            prompt_file: "/t/prompt.md".into(),
            env: env.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
        }
    }

    /// A request for unit tests of `backend` whose binary is `/bin/true` (named by the backend's
    /// override variable), otherwise as [`InvocationRequest::for_test`].
    #[cfg(test)]
    pub(crate) fn for_test_of(backend: &str, mode: Mode, env: Vec<(&str, String)>) -> Self {
        let mut env: Vec<(String, String)> =
            env.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        env.push((crate::override_var(backend), "/bin/true".into()));
        Self::for_test(mode, env)
    }

    pub fn env_var(&self, name: &str) -> Option<String> {
        self.env
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    }

    /// `dir` inside the shared per-backend state dir: the CLI's private home, which its sessions
    /// outlive a run in.
    pub(crate) fn private_home(&self, dir: &str) -> PathBuf {
        self.dirs.shared.join(dir)
    }

    /// The directory the caller's `$var` names when set and not empty, else `under_home` in the
    /// caller's `$HOME` (`None` without either): a CLI's home override, an XDG base directory.
    pub(crate) fn dir_from_env(&self, var: &str, under_home: &str) -> Option<PathBuf> {
        self.env_var(var)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| {
                self.env_var("HOME")
                    .map(|h| PathBuf::from(h).join(under_home))
            })
    }

    /// For a CLI with no effort setting: the note that the chosen effort was dropped, and `why`.
    pub(crate) fn dropped_effort(&self, why: &str) -> Option<String> {
        self.effort
            .as_ref()
            .map(|effort| format!("--effort {effort} dropped: {why}"))
    }

    /// The binary of `backend`: its override variable when set, else its program on `PATH`.
    pub(crate) fn find_program(&self, backend: &str) -> Result<PathBuf, AdapterError> {
        let lookup = |k: &str| self.env_var(k);
        Ok(find_binary(backend, program_of(backend), &lookup)?)
    }
}

/// `name value` when there is a value, else nothing: an optional flag of a command line
/// (`--model`, `--resume`).
pub(crate) fn flag(name: &str, value: Option<&String>) -> Vec<OsString> {
    value
        .map(|v| vec![OsString::from(name), OsString::from(v)])
        .unwrap_or_default()
}

/// Where a CLI takes the run's prompt.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PromptInput {
    /// On stdin, then end of file: nothing of the task is in argv, which any local user can
    /// read in `/proc`.
    #[default]
    Stdin,
    /// Whole, as the argument inserted at `index` of `args`, with stdin closed. Only for a CLI
    /// with no other way: the kernel caps one argument at 128 KiB, and a longer prompt fails
    /// the launch with "Argument list too long" instead of being cut.
    Argument { index: usize },
}

/// A file the engine writes (mode 0600, replacing any earlier one whole) before it launches
/// the CLI: settings and policies of CLIs that read them only from files. Adapters never touch
/// the disk themselves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingsFile {
    pub path: PathBuf,
    pub content: String,
}

/// A fully built command and what the engine must do to start it: write `files`, then run
/// `program args` with the prompt placed as `prompt` says.
#[derive(Debug, Clone)]
pub struct Invocation {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    pub prompt: PromptInput,
    pub files: Vec<SettingsFile>,
    /// Variables to set on top of the caller's environment.
    pub env: Vec<(OsString, OsString)>,
    /// Variables to remove from the caller's environment.
    pub env_remove: Vec<OsString>,
    /// Things the report should mention (a dropped `--effort`, an ignored setting).
    pub notes: Vec<String>,
    /// Symlinks to create before launch, `(link, target)`: the user's credentials made visible
    /// inside the worker's private state directories.
    pub links: Vec<(PathBuf, PathBuf)>,
}

impl Invocation {
    /// `program args`, with the prompt on stdin and nothing else to set up; adapters add their
    /// files, environment, notes and links with struct update syntax.
    pub fn new(program: PathBuf, args: Vec<OsString>) -> Invocation {
        Invocation {
            program,
            args,
            prompt: PromptInput::Stdin,
            files: Vec::new(),
            env: Vec::new(),
            env_remove: Vec::new(),
            notes: Vec::new(),
            links: Vec::new(),
        }
    }

    /// The arguments as text, for tests to look into.
    #[cfg(test)]
    pub(crate) fn args_text(&self) -> Vec<String> {
        self.args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    /// For a CLI with no command that lists models: an invocation that prints `ids`, one per
    /// line (read back with [`ModelInfo::lines`]), so model listing runs the same way for every
    /// CLI.
    pub fn printing_models(ids: Vec<String>) -> Invocation {
        let mut args: Vec<OsString> =
            vec!["-c".into(), "printf '%s\\n' \"$@\"".into(), "models".into()];
        args.extend(ids.into_iter().map(OsString::from));
        Invocation::new(PathBuf::from("/bin/sh"), args)
    }
}

/// What a failed run left behind, for classification.
#[derive(Debug, Clone, Default)]
pub struct FailureEvidence<'a> {
    pub events: &'a [WorkerEvent],
    pub stderr_tail: &'a str,
    pub exit_code: Option<i32>,
}

/// A model a backend offers.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ModelInfo {
    pub id: String,
    pub efforts: Vec<String>,
}

impl ModelInfo {
    /// A model the CLI lists with no effort levels.
    pub fn without_efforts(id: &str) -> ModelInfo {
        ModelInfo {
            id: id.to_string(),
            efforts: Vec::new(),
        }
    }

    /// Models listed one id per line (blank lines skipped), with no efforts.
    pub fn lines(stdout: &str) -> Vec<ModelInfo> {
        stdout
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(ModelInfo::without_efforts)
            .collect()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum AdapterError {
    #[error(transparent)]
    NotFound(#[from] BinaryNotFound),
    #[error("{backend} cannot enforce {mode} mode: {why}")]
    ModeUnsupported {
        backend: String,
        mode: String,
        why: String,
    },
    #[error("{0}")]
    Config(String),
}

/// Reads one run's stdout stream, a line at a time.
pub trait StreamParser: Send {
    /// The events one line of the stream carries. Lines that are not events (banners, torn
    /// JSON, unknown event types) yield nothing.
    fn parse_line(&mut self, line: &str) -> Vec<WorkerEvent>;
}

/// A stream of JSON events, one a line: each line that parses as JSON is one event for the
/// parser, and anything else (a banner, a warning, a torn last line) yields nothing.
pub(crate) trait JsonEvents: Send {
    /// The events one JSON line of the stream carries.
    fn parse_event(&mut self, value: &Value) -> Vec<WorkerEvent>;
}

impl<T: JsonEvents> StreamParser for T {
    fn parse_line(&mut self, line: &str) -> Vec<WorkerEvent> {
        match serde_json::from_str::<Value>(line.trim()) {
            Ok(value) => self.parse_event(&value),
            Err(_) => Vec::new(),
        }
    }
}

/// The parser of a stream whose lines stand alone (nothing carries over between them).
pub struct LineByLine(pub fn(&str) -> Vec<WorkerEvent>);

impl StreamParser for LineByLine {
    fn parse_line(&mut self, line: &str) -> Vec<WorkerEvent> {
        (self.0)(line)
    }
}

/// Every event of a whole recorded stream (the history's search index, the dashboard's steps,
/// tests), parsed with a fresh parser of `adapter`.
pub fn parse_stream(adapter: &dyn Adapter, stream: &str) -> Vec<WorkerEvent> {
    let mut parser = adapter.parser();
    stream.lines().flat_map(|l| parser.parse_line(l)).collect()
}

/// One agent CLI, as Pitroom drives it.
pub trait Adapter: Send + Sync {
    /// The backend id (`opencode`, `codex`, …).
    fn id(&self) -> &'static str;

    /// The command line and environment for one run in `req.mode`, with the mode's safety
    /// floor applied through the CLI's own mechanism.
    fn invocation(&self, req: &InvocationRequest) -> Result<Invocation, AdapterError>;

    /// A parser for one run's stdout stream. Each run gets its own: whatever a CLI's stream
    /// makes the parser remember (a tool call awaiting its result, text still streaming) lives
    /// in it, never in the adapter.
    fn parser(&self) -> Box<dyn StreamParser>;

    /// Classifies a failed run from the CLI's own error texts.
    fn classify(&self, evidence: &FailureEvidence<'_>) -> FailureKind;

    /// When a line of the CLI's stderr reports a failed model call that the CLI is about to
    /// retry (silently, for minutes), the error it reports; the engine stops the worker after a
    /// few of these so the failure surfaces in seconds.
    fn retry_signal(&self, _stderr_line: &str) -> Option<String> {
        None
    }

    /// How many failed model calls the engine lets the CLI retry before it stops the worker
    /// (each reported through [`Adapter::retry_signal`] or an error event). Three by default; a
    /// CLI whose own start-up is slow gets fewer, so its failures still surface in seconds.
    fn retry_cut(&self) -> u32 {
        3
    }

    /// Events a line of the CLI's stderr reports that its stdout stream does not: Codex logs a
    /// command or patch its sandbox refused only there. The engine absorbs them like stdout
    /// events.
    fn stderr_events(&self, _stderr_line: &str) -> Vec<WorkerEvent> {
        Vec::new()
    }

    /// Whether the usage a resumed run reports still counts the earlier turns of the session
    /// (Codex's `turn.completed` after `exec resume` does), so the engine must subtract the
    /// parent run's usage to get the follow-up's own.
    fn resumed_usage_is_cumulative(&self) -> bool {
        false
    }

    /// Whether `resume_session` is honoured.
    fn can_resume(&self) -> bool;

    /// Whether the CLI confines itself in an OS sandbox of its own. Pitroom then does not put
    /// its Landlock layer around it: a Landlocked process cannot set up that sandbox (Codex's
    /// bubblewrap cannot write its uid map or mount), so every command would fail.
    fn has_own_sandbox(&self) -> bool {
        false
    }

    /// The model a session ran, read back from the CLI's own session data after the run, for
    /// CLIs whose stream never names it (OpenCode). `None`: unknown. Reads, never writes.
    fn session_model(&self, _dirs: &StateDirs, _session: &str) -> Option<String> {
        None
    }

    /// The invocation that lists models, and how to read its output: by default one id per
    /// line, as [`Invocation::printing_models`] prints them.
    fn models_invocation(&self, req: &InvocationRequest) -> Result<Invocation, AdapterError>;
    fn parse_models(&self, stdout: &str) -> Vec<ModelInfo> {
        ModelInfo::lines(stdout)
    }
}
