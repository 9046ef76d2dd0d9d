//! The tools' parameters. The doc comments are the descriptions in the input schemas the
//! model reads: keep them short, and change them only on purpose. Every parameter but
//! `pitroom_info`'s topic may be left out (`#[serde(default)]` on the struct).

use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(default)]
pub struct RunArgs {
    /// The task.
    pub task: Option<String>,
    /// Or up to 30 tasks.
    pub tasks: Vec<String>,
    /// read (default), isolate (a copy) or write (in place).
    pub mode: Option<String>,
    /// backend[:model], e.g. codex.
    pub worker: Option<String>,
    pub model: Option<String>,
    /// cheap, standard, capable, review.
    pub tier: Option<String>,
    pub effort: Option<String>,
    pub dir: Option<String>,
    /// A check command.
    pub verify: Option<String>,
    /// Verify rounds.
    pub attempts: Option<u32>,
    /// Ignored paths to copy.
    pub link: Vec<String>,
    pub files: Vec<String>,
    /// Plan file (with step).
    pub plan: Option<String>,
    pub step: Option<u32>,
    pub web: bool,
    pub group: Option<String>,
    /// Or 2-5 targets to race.
    pub race: Vec<String>,
    /// Follow up a run (id or last).
    #[serde(rename = "continue")]
    pub continue_run: Option<String>,
    /// Default 30m.
    pub timeout: Option<String>,
    /// Spend cap (tasks: shared).
    pub max_usd: Option<f64>,
    /// Token cap (tasks: shared).
    pub max_tokens: Option<u64>,
    /// Don't wait out rate limits.
    pub no_hold: bool,
    /// Default 50, max 540.
    pub wait_seconds: Option<u64>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(default)]
pub struct WaitArgs {
    /// Run ids (default: latest).
    pub runs: Vec<String>,
    /// Every run of this group.
    pub group: Option<String>,
    /// Return when one run ends.
    pub any: bool,
    /// Default 50, max 540.
    pub wait_seconds: Option<u64>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(default)]
pub struct ReviewArgs {
    /// Default: latest.
    pub run: Option<String>,
    /// Or commits A..B.
    pub range: Option<String>,
    /// Or HEAD from merge base with ref.
    pub base: Option<String>,
    /// Or uncommitted work.
    pub uncommitted: bool,
    pub focus: Option<String>,
    pub worker: Option<String>,
    /// Or 2-5 reviewers.
    pub panel: Vec<String>,
    pub tier: Option<String>,
    pub wait_seconds: Option<u64>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(default)]
pub struct ShowArgs {
    /// Default: latest.
    pub run: Option<String>,
    /// report (default), patch, full (with stderr) or record (JSON).
    pub view: Option<String>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(default)]
pub struct ApplyArgs {
    /// Default: latest.
    pub run: Option<String>,
    /// Land a group's runs in start order.
    pub group: Option<String>,
    /// Allow deleting files.
    pub allow_delete: bool,
}

impl ApplyArgs {
    /// What the call allows beyond a patch shown whole. Files shown redacted and binary
    /// content have no override here: the agent calling may be acting on the very worker's
    /// words that hid them, so the refusal's hint sends the user to the CLI
    /// (`pitroom apply --allow-redacted`/`--allow-binary`) once they have read the files.
    pub fn allow(&self) -> pitroom_service::changes::Allow {
        pitroom_service::changes::Allow {
            delete: self.allow_delete,
            ..Default::default()
        }
    }
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(default)]
pub struct RunRef {
    /// Default: latest.
    pub run: Option<String>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(default)]
pub struct StopArgs {
    /// Default: latest.
    pub run: Option<String>,
    /// Every run of this group.
    pub group: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct InfoArgs {
    /// runs, history, stats, savings, cooldown, config, models, doctor or probe.
    pub topic: String,
    /// history: words to search for.
    #[serde(default)]
    pub query: Option<String>,
    /// models, probe: the backend.
    #[serde(default)]
    pub worker: Option<String>,
    /// runs, history: how many.
    #[serde(default)]
    pub limit: Option<usize>,
}
