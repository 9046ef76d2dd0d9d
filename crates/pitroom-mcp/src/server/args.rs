//! The tools' parameters. The doc comments are the descriptions in the input schemas the
//! model reads: keep them short, and change them only on purpose.

use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct RunArgs {
    /// The task for one worker (or give `tasks`).
    #[serde(default)]
    pub task: Option<String>,
    /// Or up to 30 tasks, run in parallel.
    #[serde(default)]
    pub tasks: Vec<String>,
    /// read (default), isolate (edit a private copy) or write (edit in place).
    #[serde(default)]
    pub mode: Option<String>,
    /// backend[:model], e.g. codex.
    #[serde(default)]
    pub worker: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    /// cheap, standard, capable, review.
    #[serde(default)]
    pub tier: Option<String>,
    #[serde(default)]
    pub effort: Option<String>,
    /// Directory (default: the project).
    #[serde(default)]
    pub dir: Option<String>,
    /// Command that checks the result.
    #[serde(default)]
    pub verify: Option<String>,
    /// Ignored paths to copy (isolate).
    #[serde(default)]
    pub link: Vec<String>,
    /// Files to attach.
    #[serde(default)]
    pub files: Vec<String>,
    /// Plan file (with step).
    #[serde(default)]
    pub plan: Option<String>,
    #[serde(default)]
    pub step: Option<u32>,
    #[serde(default)]
    pub web: bool,
    /// Group name.
    #[serde(default)]
    pub group: Option<String>,
    /// Follow up a run (id or last).
    #[serde(default, rename = "continue")]
    pub continue_run: Option<String>,
    /// Per run: 90s, 20m (default 30m).
    #[serde(default)]
    pub timeout: Option<String>,
    /// Default 50, max 540.
    #[serde(default)]
    pub wait_seconds: Option<u64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct WaitArgs {
    /// Run ids (default: the latest run).
    #[serde(default)]
    pub runs: Vec<String>,
    /// Every run of this group.
    #[serde(default)]
    pub group: Option<String>,
    /// Return when one run ends.
    #[serde(default)]
    pub any: bool,
    /// Default 50, max 540.
    #[serde(default)]
    pub wait_seconds: Option<u64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReviewArgs {
    /// Run id (default: the latest run).
    #[serde(default)]
    pub run: Option<String>,
    /// Or commits A..B.
    #[serde(default)]
    pub range: Option<String>,
    /// The reviewer.
    #[serde(default)]
    pub worker: Option<String>,
    #[serde(default)]
    pub tier: Option<String>,
    #[serde(default)]
    pub wait_seconds: Option<u64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ShowArgs {
    /// Run id (default: the latest run).
    #[serde(default)]
    pub run: Option<String>,
    /// report (default), patch, full (with stderr) or record (JSON).
    #[serde(default)]
    pub view: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ApplyArgs {
    /// Run id (default: the latest run).
    #[serde(default)]
    pub run: Option<String>,
    /// Land a group's runs in start order.
    #[serde(default)]
    pub group: Option<String>,
    /// Allow deleting files.
    #[serde(default)]
    pub allow_delete: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct RunRef {
    /// Run id (default: the latest run).
    #[serde(default)]
    pub run: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct StopArgs {
    /// Run id (default: the latest run).
    #[serde(default)]
    pub run: Option<String>,
    /// Every run of this group.
    #[serde(default)]
    pub group: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct InfoArgs {
    /// runs, history, stats, savings, cooldown, config, models or doctor.
    pub topic: String,
    /// history: words to search for.
    #[serde(default)]
    pub query: Option<String>,
    /// models: the backend.
    #[serde(default)]
    pub worker: Option<String>,
    /// runs, history: how many (default 20).
    #[serde(default)]
    pub limit: Option<usize>,
}
