//! The run record: one versioned JSON document per run, written atomically.

use std::path::{Path, PathBuf};
use std::time::Duration;

use jiff::Timestamp;
use pitroom_workers::{FailureKind, Mode, Usage};
use serde::{Deserialize, Serialize};

use crate::exit::Exit;

/// Bumped when a field changes meaning; readers accept older versions (missing fields default).
pub const RECORD_VERSION: u32 = 1;

/// Where a run is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunState {
    Queued,
    Running,
    Done,
    Failed,
    Timeout,
    Stopped,
    /// Stopped at a budget cap (docs/budgets.md); what the worker did is kept.
    #[serde(rename = "over_budget")]
    OverBudget,
}

impl RunState {
    pub fn is_active(self) -> bool {
        matches!(self, RunState::Queued | RunState::Running)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            RunState::Queued => "queued",
            RunState::Running => "running",
            RunState::Done => "done",
            RunState::Failed => "failed",
            RunState::Timeout => "timeout",
            RunState::Stopped => "stopped",
            RunState::OverBudget => "over_budget",
        }
    }
}

/// Which stage of its life a run is in (or, once it ended, the last one it reached): what a
/// stop or a timeout interrupted, when it ends `stopped` or `timeout`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunPhase {
    /// Waiting for a worker slot.
    Queued,
    /// Waiting for a rate limit to reset: every target of the chain is cooling down.
    Held,
    /// Preparing the tree: the "before" snapshot, a read or isolated copy.
    Tree,
    /// The worker (every attempt of the fallback chain).
    Worker,
    /// Recording what the worker did: citations, the "after" snapshot and the diff, the verdict.
    Finishing,
    /// `--verify`.
    Verify,
}

impl RunPhase {
    pub fn as_str(self) -> &'static str {
        match self {
            RunPhase::Queued => "queued",
            RunPhase::Held => "held",
            RunPhase::Tree => "tree",
            RunPhase::Worker => "worker",
            RunPhase::Finishing => "finishing",
            RunPhase::Verify => "verify",
        }
    }

    /// The phase as a report says it ("while preparing the tree").
    pub fn described(self) -> &'static str {
        match self {
            RunPhase::Queued => "while queued for a worker slot",
            RunPhase::Held => "while held for a rate limit to reset",
            RunPhase::Tree => "while preparing the tree",
            RunPhase::Worker => "while the worker ran",
            RunPhase::Finishing => "while recording the worker's changes",
            RunPhase::Verify => "during --verify",
        }
    }
}

/// A changed file, as the report lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangedFile {
    pub status: char,
    pub path: String,
    /// Where a renamed file came from.
    #[serde(default)]
    pub old_path: Option<String>,
    pub added: Option<u64>,
    pub deleted: Option<u64>,
}

/// What a run asked for: everything a detached supervisor needs to carry it out.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunSpec {
    pub task: String,
    pub mode: Mode,
    pub backend: String,
    pub model: Option<String>,
    pub effort: Option<String>,
    pub web: bool,
    /// The directory the user asked to work in (canonical).
    pub dir: PathBuf,
    /// The run's time limit, from the start of its tree to the end of `--verify`.
    #[serde(rename = "timeout_secs", with = "secs")]
    pub timeout: Duration,
    /// How long the worker may go without progress before it is judged stalled.
    #[serde(rename = "watchdog_secs", with = "secs")]
    pub watchdog: Duration,
    pub background: bool,
    pub allow_non_git: bool,
    /// `--continue`: the run this one follows up.
    pub parent: Option<String>,
    pub primary: String,
    pub price: Option<String>,
    /// The config's `worker_prices` when the run started: a background run is priced with
    /// them, not with what the config says when it ends. `None` in records written before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_prices: Option<crate::receipt::WorkerPrices>,
    /// A group the run belongs to (`-g`), for `apply -g`.
    #[serde(default)]
    pub group: Option<String>,
    /// Isolate: ignored paths made available in the copy (`--link`).
    #[serde(default)]
    pub link: Vec<String>,
    /// A command run after the worker (`--verify`); its failure fails the run (exit 6).
    #[serde(default)]
    pub verify: Option<String>,
    #[serde(
        rename = "verify_timeout_secs",
        with = "secs",
        default = "default_verify_timeout"
    )]
    pub verify_timeout: Duration,
    /// The longest a run waits, held, for its chain's rate limits to reset before it starts
    /// (config `max_hold`; 0 with `--no-hold`, and in older records).
    #[serde(
        rename = "max_hold_secs",
        with = "secs",
        default,
        skip_serializing_if = "Duration::is_zero"
    )]
    pub max_hold: Duration,
    /// How many rounds the worker gets to make `--verify` pass (`--attempts`): a failed check
    /// goes back to the worker with its output until it passes or the rounds run out. 1 (the
    /// default, and in older records) sends nothing back.
    #[serde(default = "one_round", skip_serializing_if = "is_one_round")]
    pub attempts: u32,
    /// The targets to move to, in order, when a worker is unavailable (rate limited, out of
    /// quota, unknown model, auth), resolved when the run was asked for; stored as
    /// `backend[:model]`. Empty with `--no-fallback`.
    #[serde(default, with = "targets_as_text")]
    pub fallback: Vec<ChainTarget>,
    /// The CLIs described in the config (`[workers.<name>]`), so the supervisor and the
    /// fallback chain can drive them.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub custom_workers: std::collections::BTreeMap<String, pitroom_workers::WorkerDef>,
    /// Extra directories a worker may write under Landlock (config `sandbox_writable`), e.g. a
    /// package cache its builds need. Opt-in: a worker could poison what it may write.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sandbox_writable: Vec<PathBuf>,
    /// How many workers may run at once across all Pitroom processes (the queue's slot count).
    #[serde(default = "default_max_parallel")]
    pub max_parallel: usize,
    /// The asked target's own limit (`max_parallel_per`), when it has one: its runs queue for
    /// that many places, within `max_parallel`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lane: Option<crate::slots::Lane>,
    /// Files attached to the task (`run -f`), absolute; their paths and, within a size cap,
    /// their contents go into the prompt (read when the prompt is written).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<PathBuf>,
    /// A review (`pitroom review`): the run (or `A..B` range) it reviews. Its answer must end
    /// with a verdict, or the review fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_of: Option<String>,
    /// The plan step the run carries out (`run --plan PLAN --step N`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<crate::plan::PlanRef>,
    /// A contender of a race (`run --race`): its group is the race, and of the group only the
    /// winner is applied.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub race: bool,
    /// A background run that shows a desktop notification when it (or, in a group, the last
    /// of the group) ends: config `notify`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub notify: bool,
    /// The caps the run is held to (`--max-usd`, `--max-tokens`, a crew's, the day's).
    #[serde(default, skip_serializing_if = "crate::budget::Budget::is_unset")]
    pub budget: crate::budget::Budget,
}

impl RunSpec {
    /// A spec of `task` in `mode` for `backend` in `dir`, with every other field at its
    /// default (no model, no limits beyond the defaults, no group, no fallback). The resolver
    /// and tests set the rest with struct update syntax, so a new field has one default.
    pub fn new(
        task: impl Into<String>,
        mode: Mode,
        backend: impl Into<String>,
        dir: impl Into<PathBuf>,
    ) -> RunSpec {
        RunSpec {
            task: task.into(),
            mode,
            backend: backend.into(),
            model: None,
            effort: None,
            web: false,
            dir: dir.into(),
            timeout: Duration::from_secs(1800),
            watchdog: Duration::from_secs(60),
            background: false,
            allow_non_git: false,
            parent: None,
            primary: "sonnet".into(),
            price: None,
            worker_prices: None,
            group: None,
            link: Vec::new(),
            verify: None,
            verify_timeout: default_verify_timeout(),
            attempts: 1,
            max_hold: Duration::ZERO,
            fallback: Vec::new(),
            custom_workers: Default::default(),
            sandbox_writable: Vec::new(),
            max_parallel: default_max_parallel(),
            lane: None,
            attachments: Vec::new(),
            review_of: None,
            plan: None,
            race: false,
            notify: false,
            budget: Default::default(),
        }
    }
}

fn default_max_parallel() -> usize {
    crate::slots::DEFAULT_MAX_PARALLEL
}

fn default_verify_timeout() -> Duration {
    Duration::from_secs(900)
}

/// A spec's time limits as records have always stored them: seconds, as a number (`60.0`).
/// Reading never fails on a number: a negative one is no time, and one too large for a
/// `Duration` is the longest there is (no record Pitroom wrote holds either).
mod secs {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(limit: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(limit.as_secs_f64())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
        let secs = f64::deserialize(deserializer)?;
        Ok(Duration::try_from_secs_f64(secs.max(0.0)).unwrap_or(Duration::MAX))
    }
}

fn one_round() -> u32 {
    1
}

fn is_one_round(n: &u32) -> bool {
    *n == 1
}

/// The outcome of `--verify`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct VerifyOutcome {
    pub command: String,
    pub passed: bool,
    /// The command's exit code; `None` when it was stopped at its time limit.
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    /// How long the command ran, whole milliseconds (written as `duration_ms`).
    #[serde(rename = "duration_ms", with = "span_millis")]
    pub duration: Duration,
    /// The last lines of its output (all of it is in verify.log).
    pub tail: String,
}

/// One worker attempt of a run. A run moves to the next target of its chain when a worker is
/// unavailable, and sends a failed `--verify` back to the worker for another round while it has
/// rounds left (`--attempts`); every attempt stays on record.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Attempt {
    /// `backend[:model]`.
    pub target: String,
    /// How the attempt ended.
    pub state: AttemptState,
    pub failure: Option<FailureKind>,
    pub error: Option<String>,
    pub steps: u32,
    pub tool_calls: u32,
    /// How long the attempt took, whole milliseconds (written as `duration_ms`).
    #[serde(rename = "duration_ms", with = "span_millis")]
    pub duration: Duration,
    /// The run moved on to another attempt after this one: the next target, or the same
    /// target once more after a passing fault of its CLI.
    pub fell_back: bool,
    /// This attempt finished the task another worker started (it got a hand-off account).
    #[serde(default)]
    pub handed_off: bool,
    /// Which repair round this attempt was (1 is the task itself; 2 and on got a failed
    /// `--verify` back). 1 in older records.
    #[serde(default = "one_round", skip_serializing_if = "is_one_round")]
    pub round: u32,
    /// The `--verify` that judged this round; `None` when none ran after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<VerifyOutcome>,
    /// The tokens this attempt used (input and output, as its CLI reported them).
    #[serde(default, skip_serializing_if = "is_zero_bytes")]
    pub tokens: u64,
    /// The run sent this round's failed `--verify` back to the worker for another round.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub repaired: bool,
}

/// How an attempt ended: stored as a run state's name, or `skipped`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum AttemptState {
    /// The chain passed over the target without starting a worker (cooling down, no adapter).
    #[default]
    Skipped,
    /// A worker ran and the attempt ended in this state.
    Ended(RunState),
}

impl AttemptState {
    pub fn as_str(self) -> &'static str {
        match self {
            AttemptState::Skipped => "skipped",
            AttemptState::Ended(state) => state.as_str(),
        }
    }
}

impl std::fmt::Display for AttemptState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<AttemptState> for String {
    fn from(state: AttemptState) -> String {
        state.as_str().to_string()
    }
}

impl TryFrom<String> for AttemptState {
    type Error = String;

    fn try_from(text: String) -> Result<AttemptState, String> {
        if text == "skipped" {
            return Ok(AttemptState::Skipped);
        }
        serde_json::from_value(serde_json::Value::String(text.clone()))
            .map(AttemptState::Ended)
            .map_err(|_| format!("unknown attempt state {text:?}"))
    }
}

/// Counters the receipt is computed from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Tally {
    pub usage: Usage,
    pub steps: u32,
    pub tool_calls: u32,
    pub failed_calls: u32,
    pub denied_calls: u32,
    /// USD as the CLI reported it; `None` when it reported nothing.
    pub cost: Option<f64>,
}

impl Tally {
    /// Adds another attempt's counters (a run's receipt covers every attempt).
    pub fn absorb(&mut self, other: &Tally) {
        self.usage.add(&other.usage);
        self.steps += other.steps;
        self.tool_calls += other.tool_calls;
        self.failed_calls += other.failed_calls;
        self.denied_calls += other.denied_calls;
        if let Some(c) = other.cost {
            *self.cost.get_or_insert(0.0) += c;
        }
    }
}

/// How the answer's `path:line` citations checked out on disk.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Refs {
    pub verified: u32,
    pub total: u32,
    /// One line per citation that did not check out, with the reason.
    pub bad: Vec<String>,
}

/// The receipt, as printed and stored.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Receipt {
    pub worker_tokens: u64,
    pub returned_tokens: u64,
    pub compression: f64,
    pub cost: Option<f64>,
    /// The primary model the saving is estimated against.
    pub primary: String,
    /// Estimated saving in USD (always an estimate).
    pub saved: Option<f64>,
}

/// What became of a run's changes after it ended. Each is final but one: a discarded copy
/// keeps its patch, which may still be applied.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PatchFate {
    /// Nothing yet: an isolated run's patch waits in its copy, a write run's changes stand.
    #[default]
    Pending,
    /// Isolate: the patch landed in the user's tree and the copy was removed.
    Applied,
    /// Isolate: the copy was removed; the patch is kept and may still be applied.
    Discarded,
    /// Write: the changes were taken back out of the user's tree.
    Reverted,
}

impl PatchFate {
    pub fn is_applied(self) -> bool {
        self == PatchFate::Applied
    }

    pub fn is_discarded(self) -> bool {
        self == PatchFate::Discarded
    }

    pub fn is_reverted(self) -> bool {
        self == PatchFate::Reverted
    }
}

/// [`PatchFate`] as the record stores it: three flags, in the order records have always had
/// them. An older record may carry both `discarded` and `applied` (a discarded copy's patch
/// applied later); the patch landed, so it reads as applied.
mod patch_flags {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::PatchFate;

    #[derive(Serialize, Deserialize)]
    struct Flags {
        #[serde(default)]
        reverted: bool,
        #[serde(default)]
        applied: bool,
        #[serde(default)]
        discarded: bool,
    }

    pub fn serialize<S: Serializer>(fate: &PatchFate, serializer: S) -> Result<S::Ok, S::Error> {
        Flags {
            reverted: *fate == PatchFate::Reverted,
            applied: *fate == PatchFate::Applied,
            discarded: *fate == PatchFate::Discarded,
        }
        .serialize(serializer)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<PatchFate, D::Error> {
        let flags = Flags::deserialize(deserializer)?;
        Ok(if flags.applied {
            PatchFate::Applied
        } else if flags.reverted {
            PatchFate::Reverted
        } else if flags.discarded {
            PatchFate::Discarded
        } else {
            PatchFate::Pending
        })
    }
}

/// One target of a run's fallback chain: a backend and the model pinned for it, if any
/// (`backend[:model]` when shown).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChainTarget {
    pub backend: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

impl RunSpec {
    /// The target this run asked for: the head of its fallback chain.
    pub fn asked(&self) -> ChainTarget {
        ChainTarget {
            backend: self.backend.clone(),
            model: self.model.clone(),
        }
    }

    /// The worker this run asked for with its effort, as people name it
    /// (`backend[:model][#effort]`).
    pub fn worker(&self) -> crate::target::Target {
        crate::target::Target {
            backend: self.backend.clone(),
            model: self.model.clone(),
            effort: self.effort.clone(),
        }
    }
}

impl ChainTarget {
    /// A target from its text as records store it, `backend[:model]`: what comes before the
    /// first `:` is the backend (a resolved target always names one; a model may hold `:`).
    /// An `#effort` that older records kept is dropped: a target's effort was never used.
    pub fn from_stored(text: &str) -> ChainTarget {
        let body = text.rsplit_once('#').map_or(text, |(body, _)| body);
        match body.split_once(':') {
            Some((backend, model)) => ChainTarget {
                backend: backend.to_string(),
                model: Some(model.to_string()).filter(|m| !m.is_empty()),
            },
            None => ChainTarget {
                backend: body.to_string(),
                model: None,
            },
        }
    }
}

/// The fallback targets as records have always stored them: a list of `backend[:model]`.
mod targets_as_text {
    use serde::{Deserialize, Deserializer, Serializer};

    use super::ChainTarget;

    pub fn serialize<S: Serializer>(
        targets: &[ChainTarget],
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(targets.iter().map(ToString::to_string))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Vec<ChainTarget>, D::Error> {
        let texts = Vec::<String>::deserialize(deserializer)?;
        Ok(texts.iter().map(|t| ChainTarget::from_stored(t)).collect())
    }
}

impl std::fmt::Display for ChainTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&target_text(&self.backend, self.model.as_deref()))
    }
}

/// How a target is written everywhere, `backend[:model]`, from its parts as borrowed (a
/// history row, a [`crate::target::Target`]) without building a [`ChainTarget`].
pub fn target_text(backend: &str, model: Option<&str>) -> String {
    match model {
        Some(m) => format!("{backend}:{m}"),
        None => backend.to_string(),
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunRecord {
    pub version: u32,
    pub id: String,
    pub state: RunState,
    pub spec: RunSpec,
    /// The repository's top directory, when the dir is in one.
    pub repo: Option<PathBuf>,
    /// Where the worker actually ran (the dir, or its place in a read copy).
    pub workdir: Option<PathBuf>,
    /// The read copy's root, when the worker read a copy.
    pub copy: Option<PathBuf>,
    /// A read run's view of the project: the live tree in place, or a copy (`None` for edit
    /// runs and older records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub view: Option<ReadView>,
    /// Why a read run got a copy rather than the live tree (or why its in-place view has no
    /// copy to compare, e.g. not a git repository).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub view_reason: Option<String>,
    /// The stage the run is in, or the last one it reached (`None` in older records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<RunPhase>,
    /// Until when the run was held because every target of its chain was cooling down (the
    /// wall clock); `None` when it never was.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "stamps::optional"
    )]
    pub held_until: Option<Timestamp>,
    /// The stage a stop or the timeout interrupted, for a run that ended `stopped` or `timeout`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted_in: Option<RunPhase>,
    /// When the run was made (the stamping clock, `crate::clock::now`). Written as RFC 3339
    /// (`2026-01-02T03:04:05Z`, with fractional seconds when there are any); one that does not
    /// read is [`UNKNOWN_CREATED`] (see the `stamps` module).
    #[serde(deserialize_with = "stamps::created")]
    pub created_at: Timestamp,
    /// When the worker started (`None` while queued, and for a run that never started).
    #[serde(default, deserialize_with = "stamps::optional")]
    pub started_at: Option<Timestamp>,
    /// When the run ended (`None` while active).
    #[serde(default, deserialize_with = "stamps::optional")]
    pub ended_at: Option<Timestamp>,
    /// How long the worker's time lasted (every attempt), in whole milliseconds as the JSON's
    /// `duration_ms` keeps it; `None` until it ended.
    #[serde(rename = "duration_ms", default, with = "millis")]
    pub duration: Option<Duration>,
    /// Time spent queued for a slot before the worker started (not counted in `duration`), in
    /// whole milliseconds as the JSON's `queued_ms` keeps it.
    #[serde(rename = "queued_ms", default, with = "millis")]
    pub queued: Option<Duration>,
    /// The scheduler's grant number for the run's slot (1, 2, 3, … per state directory): the
    /// order runs were let go in, exact even when two start within the same millisecond.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot_grant: Option<u64>,
    /// The supervising process and its start time (to tell it from a reused pid).
    pub pid: Option<u32>,
    pub pid_start: Option<u64>,
    pub session: Option<String>,
    /// The model the worker CLI said it ran (its start-up event), for the latest attempt;
    /// `None` where the CLI says nothing. What a run without a pinned model really used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reported_model: Option<String>,
    /// The target of the latest attempt where the fallback chain moved off the one asked for:
    /// `spec` keeps what was asked, always. `None` while the asked target runs, and in records
    /// written before the spec stopped changing (their `spec` names the last target that ran,
    /// which the accessors below then read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fell_back_to: Option<ChainTarget>,
    pub base_tree: Option<String>,
    pub after_tree: Option<String>,
    #[serde(default)]
    pub tally: Tally,
    pub answer: Option<String>,
    #[serde(default)]
    pub changes: Vec<ChangedFile>,
    /// Write mode: changed files the worker's events never mention.
    #[serde(default)]
    pub unreported: Vec<String>,
    /// Write mode: ignored files the worker added, removed or changed. No patch holds them
    /// and `revert` cannot undo them; the report lists them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignored_changes: Vec<String>,
    /// Write mode: secret-looking files the worker added, removed or changed. Pitroom never
    /// stages them (their contents stay out of git's object store), so no patch holds them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secret_changes: Vec<String>,
    /// Bytes the worker left in its CLI's shared state dir (which persists between runs).
    #[serde(default, skip_serializing_if = "is_zero_bytes")]
    pub state_growth_bytes: u64,
    #[serde(default)]
    pub read_only_violation: bool,
    pub error: Option<String>,
    pub failure: Option<FailureKind>,
    pub worker_exit: Option<i32>,
    /// The last thing the worker did, for progress displays.
    #[serde(rename = "last")]
    pub last_step: Option<String>,
    #[serde(default)]
    pub warnings: Vec<String>,
    /// Set (never stored) when the final record could not be written: nothing on disk will
    /// say how the run ended, so whoever holds this record must say it.
    #[serde(skip)]
    pub unsaved: Option<String>,
    pub receipt: Option<Receipt>,
    /// Citation check of the answer (`crate::citations`).
    pub refs: Option<Refs>,
    /// The answer's claims held against the record (`crate::claims`): a read run that called no
    /// tool, cited files no tool call read, a `FILES CHANGED:` line the diff disagrees with.
    /// Each flag is also one of `warnings`. Left out when nothing was flagged, and absent from
    /// older records.
    #[serde(default, skip_serializing_if = "crate::claims::Claims::is_clear")]
    pub claims: crate::claims::Claims,
    /// What became of the run's changes since it ended. Stored as the three flags `reverted`,
    /// `applied` and `discarded` that records have always carried.
    #[serde(flatten, with = "patch_flags")]
    pub patch: PatchFate,
    pub verify: Option<VerifyOutcome>,
    /// For a CLI that reports a session's total usage (Codex): the total after this run, so a
    /// follow-up can tell its own share.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_usage: Option<Usage>,
    /// Every worker attempt, in order (one unless the run fell back to another target).
    #[serde(default)]
    pub attempts: Vec<Attempt>,
    /// Pitroom's own peak resident memory while supervising, in KiB.
    pub supervisor_peak_kb: Option<u64>,
    /// A review's verdict, parsed from its answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<crate::verdict::Verdict>,
    /// Which safety layers held around the worker (`None` in records from before layer 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub safety: Option<Safety>,
    /// What a run with a budget has spent so far, as its caps count it (`None` without one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spend: Option<crate::budget::Spend>,
}

/// How a read run's worker saw the project (docs/safety.md, "Read runs in place").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReadView {
    /// The live tree, read-only under Landlock, its secret-looking files hidden in the worker's
    /// mount namespace.
    InPlace,
    /// A read-only copy of the tree's state at the start, snapshotted before and after.
    Copy,
}

impl ReadView {
    pub fn as_str(self) -> &'static str {
        match self {
            ReadView::InPlace => "in_place",
            ReadView::Copy => "copy",
        }
    }
}

/// Which layers of the safety floor held for a run (see `docs/safety.md`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Safety {
    /// Layer 1: the `git` shim first on the worker's `PATH`.
    pub guard_shim: bool,
    /// Layer 2: the ref-refusing hook and push rewrite in git's environment config.
    pub git_env_config: bool,
    /// Layer 3, as the keeper enforced it for the latest attempt.
    pub landlock: Option<pitroom_proc::SandboxReport>,
    /// What held the worker's process tree for the latest attempt (a PID namespace whose init
    /// dies with the keeper, or only the keeper's sweep). `None` in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub containment: Option<pitroom_proc::ContainmentReport>,
    /// Tool results that read like a refused write ("Permission denied", "Read-only file
    /// system", EACCES): the only trace a denied write leaves.
    #[serde(default)]
    pub blocked_writes: u32,
    /// The sandbox `--verify` ran in (it runs the worker's code, so it is confined like the
    /// worker). `None` when the run had no `--verify`, or in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify_sandbox: Option<pitroom_proc::SandboxReport>,
}

impl RunRecord {
    /// Whether the run waits out a rate limit: queued, with every target of its chain cooling
    /// down ([`RunPhase::Held`]).
    pub fn is_held(&self) -> bool {
        self.state == RunState::Queued && self.phase == Some(RunPhase::Held)
    }

    /// When a held run starts at the latest, as people read it (`14:05 UTC`); `None` unless
    /// the run [`is_held`](Self::is_held) with a recorded time.
    pub fn held_until_short(&self) -> Option<String> {
        if !self.is_held() {
            return None;
        }
        let until = self.held_until?;
        Some(until.strftime("%H:%M UTC").to_string())
    }

    /// [`duration`](Self::duration) in whole milliseconds: what the record's JSON says, and the
    /// views and rows built from it.
    pub fn duration_ms(&self) -> Option<u64> {
        self.duration.map(millis_of)
    }

    /// [`created_at`](Self::created_at), unless it is [`UNKNOWN_CREATED`] (a stamp that did
    /// not read): what ages a run, so an unreadable stamp never makes a run look ancient.
    pub fn created_known(&self) -> Option<Timestamp> {
        (self.created_at != UNKNOWN_CREATED).then_some(self.created_at)
    }

    /// What refuses a run that has not ended yet says, and what to do: `apply`, `revert`, a
    /// review or a follow-up of it all need a finished run.
    pub fn ensure_finished(&self) -> Result<(), String> {
        if self.state.is_active() {
            let id = &self.id;
            return Err(format!(
                "run {id} is still running; wait for it first: pitroom wait {id}"
            ));
        }
        Ok(())
    }

    /// The model that ran: the one pinned for the latest attempt, else the one the CLI
    /// reported; `None` when neither is known (the CLI's default, unnamed).
    pub fn model_ran(&self) -> Option<&str> {
        self.model().or(self.reported_model.as_deref())
    }

    /// The backend of the latest attempt (the one asked for, unless the run fell back).
    pub fn backend(&self) -> &str {
        match &self.fell_back_to {
            Some(t) => &t.backend,
            None => &self.spec.backend,
        }
    }

    /// The model pinned for the latest attempt (the one asked for, unless the run fell back).
    pub fn model(&self) -> Option<&str> {
        match &self.fell_back_to {
            Some(t) => t.model.as_deref(),
            None => self.spec.model.as_deref(),
        }
    }

    /// The adapter that reads the latest attempt's events.
    pub fn adapter(&self) -> Option<Box<dyn pitroom_workers::Adapter>> {
        self.spec.adapter_of(self.backend())
    }

    /// The target of the latest attempt: the one asked for, unless the run fell back.
    pub fn attempt_target(&self) -> ChainTarget {
        self.fell_back_to
            .clone()
            .unwrap_or_else(|| self.spec.asked())
    }

    /// Notes which target of the chain makes the next attempt.
    pub fn attempt_on(&mut self, target: &ChainTarget) {
        self.fell_back_to = (*target != self.spec.asked()).then(|| target.clone());
    }

    pub fn new(id: String, spec: RunSpec, created_at: Timestamp) -> RunRecord {
        RunRecord {
            version: RECORD_VERSION,
            id,
            state: RunState::Queued,
            spec,
            repo: None,
            workdir: None,
            copy: None,
            view: None,
            view_reason: None,
            phase: None,
            held_until: None,
            interrupted_in: None,
            created_at,
            started_at: None,
            ended_at: None,
            duration: None,
            queued: None,
            slot_grant: None,
            session_usage: None,
            attempts: Vec::new(),
            pid: None,
            pid_start: None,
            session: None,
            reported_model: None,
            fell_back_to: None,
            unsaved: None,
            base_tree: None,
            after_tree: None,
            tally: Tally::default(),
            answer: None,
            changes: Vec::new(),
            unreported: Vec::new(),
            ignored_changes: Vec::new(),
            secret_changes: Vec::new(),
            state_growth_bytes: 0,
            read_only_violation: false,
            error: None,
            failure: None,
            worker_exit: None,
            last_step: None,
            warnings: Vec::new(),
            receipt: None,
            refs: None,
            claims: Default::default(),
            patch: PatchFate::Pending,
            verify: None,
            supervisor_peak_kb: None,
            safety: None,
            verdict: None,
            spend: None,
        }
    }

    /// How a process that carried out (or waits for) this run ends (the exit codes of `crate::exit`).
    pub fn exit(&self) -> Exit {
        match self.state {
            RunState::Queued | RunState::Running => Exit::StillRunning,
            RunState::Done => Exit::Ok,
            RunState::Timeout => Exit::Timeout,
            RunState::Failed if self.read_only_violation => Exit::ReadOnlyViolation,
            RunState::Failed if self.verify_failed() => Exit::VerifyFailed,
            RunState::Failed | RunState::Stopped | RunState::OverBudget => Exit::Failed,
        }
    }

    /// [`RunRecord::exit`]'s code, for reports that carry it as a number.
    pub fn exit_code(&self) -> i32 {
        self.exit().code()
    }

    /// The worker that did (or is doing) the run: `backend[:model]`.
    pub fn worker_target(&self) -> String {
        self.attempt_target().to_string()
    }

    /// Whether `--verify` ran and failed.
    pub fn verify_failed(&self) -> bool {
        self.verify.as_ref().is_some_and(|v| !v.passed)
    }

    /// For a run given more than one round (`--attempts`): the round it ended on, and how
    /// many it had.
    pub fn final_round(&self) -> Option<(u32, u32)> {
        if self.spec.attempts <= 1 {
            return None;
        }
        let round = self.attempts.last().map_or(1, |a| a.round);
        Some((round, self.spec.attempts))
    }

    pub fn read(path: &Path) -> std::io::Result<RunRecord> {
        let text = std::fs::read(path)?;
        serde_json::from_slice(&text)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
    }

    /// Writes the record atomically: a temp file in the same directory, then a rename, so a
    /// reader never sees half a record.
    ///
    /// Only a record in its final state is synced to disk: progress saves happen at every step
    /// and stay atomic for readers without paying a flush (tens of ms on some disks) each time.
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        let json = serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?;
        write_replacing(path, &json, !self.state.is_active())
    }
}

/// Writes `data` to `path` through a temp file and a rename.
pub fn write_atomic(path: &Path, data: &[u8]) -> std::io::Result<()> {
    write_replacing(path, data, true)
}

/// Writes `data` to `path` through a temp file and a rename, synced first when `durable`.
fn write_replacing(path: &Path, data: &[u8], durable: bool) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let written = std::fs::File::create(&tmp).and_then(|mut f| {
        f.write_all(data)?;
        if durable {
            f.sync_data()?;
        }
        Ok(())
    });
    let replaced = written.and_then(|()| std::fs::rename(&tmp, path));
    if replaced.is_err() {
        // A half-written temp file on a full disk only takes the space the next write needs;
        // the file it was to replace is untouched.
        let _ = std::fs::remove_file(&tmp);
    }
    replaced
}

fn is_zero_bytes(n: &u64) -> bool {
    *n == 0
}

/// What a record's `created_at` reads as when its stamp does not (see the `stamps` module): the Unix
/// epoch, which no run of Pitroom can have been made at. [`RunRecord::created_known`] tells it
/// apart, so what ages runs (`clean`) keeps such a run rather than take it for the oldest.
pub const UNKNOWN_CREATED: Timestamp = Timestamp::UNIX_EPOCH;

/// How a record's stamps read. They are written as `jiff::Timestamp`'s `Display`, which is what
/// `clock::stamp()` wrote before the record held typed stamps, so a record's JSON is unchanged.
///
/// Reading is lenient, because a record must never become unreadable over one stamp (its
/// answer, its patch and its receipt matter more than when it started): any RFC 3339 stamp with
/// an offset reads (`Z`, `+00:00`, `+02:00`), and is written back in UTC with `Z`. A stamp that
/// does not read at all (hand-edited, or not a string) reads as no stamp: `None` for the
/// optional ones, [`UNKNOWN_CREATED`] for `created_at`, which every record has (and which a
/// record rewritten after such a read keeps: it still reads as unknown). A record without a
/// `created_at` field still does not read: that is not a run record.
mod stamps {
    use jiff::Timestamp;
    use serde::{Deserialize, Deserializer};

    /// Any JSON value: a string that reads as a timestamp is one, anything else is none.
    pub(super) fn optional<'de, D: Deserializer<'de>>(
        de: D,
    ) -> Result<Option<Timestamp>, D::Error> {
        Ok(match serde_json::Value::deserialize(de)? {
            serde_json::Value::String(text) => text.trim().parse().ok(),
            _ => None,
        })
    }

    pub(super) fn created<'de, D: Deserializer<'de>>(de: D) -> Result<Timestamp, D::Error> {
        Ok(optional(de)?.unwrap_or(super::UNKNOWN_CREATED))
    }
}

/// A span in whole milliseconds: how a record's `duration_ms` and `queued_ms` are written (one
/// too long for a `u64` of milliseconds, half a billion years, is written as the longest).
pub fn millis_of(span: Duration) -> u64 {
    u64::try_from(span.as_millis()).unwrap_or(u64::MAX)
}

/// A span as the record keeps it: cut to whole milliseconds, so what a record says in memory is
/// what it says once written and read back.
pub fn whole_millis(span: Duration) -> Duration {
    Duration::from_millis(millis_of(span))
}

/// How a record's spans are written: a number of milliseconds, or `null`.
mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub(super) fn serialize<S: Serializer>(
        span: &Option<Duration>,
        ser: S,
    ) -> Result<S::Ok, S::Error> {
        span.map(super::millis_of).serialize(ser)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        de: D,
    ) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<u64>::deserialize(de)?.map(Duration::from_millis))
    }
}

/// How an attempt's and a verify's spans are written: a number of milliseconds.
mod span_millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(span: &Duration, ser: S) -> Result<S::Ok, S::Error> {
        ser.serialize_u64(super::millis_of(*span))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(de: D) -> Result<Duration, D::Error> {
        u64::deserialize(de).map(Duration::from_millis)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attempts_of_older_records_read_with_their_state_names_and_one_round() {
        let old = r#"[
            {"target": "gemini", "state": "skipped", "failure": null, "error": "cooling down",
             "steps": 0, "tool_calls": 0, "duration_ms": 0, "fell_back": true},
            {"target": "opencode:a/b", "state": "failed", "failure": "rate_limited", "error": "429",
             "steps": 2, "tool_calls": 1, "duration_ms": 900, "fell_back": true, "handed_off": false}
        ]"#;
        let attempts: Vec<Attempt> = serde_json::from_str(old).expect("older attempts read");
        assert_eq!(attempts[0].state, AttemptState::Skipped);
        assert_eq!(attempts[1].state, AttemptState::Ended(RunState::Failed));
        assert!(attempts.iter().all(|a| a.round == 1 && !a.repaired));
        // And they are written back the same way.
        let again = serde_json::to_value(&attempts[1]).expect("serialises");
        assert_eq!(again["state"], "failed");
        assert!(again.get("round").is_none(), "round 1 is left out");
        assert_eq!(attempts[1].duration, Duration::from_millis(900));
        assert_eq!(
            again["duration_ms"], 900,
            "the span is written as it was read"
        );
        assert!(serde_json::from_str::<Attempt>(
            r#"{"target":"x","state":"exploded","failure":null,"error":null,"steps":0,"tool_calls":0,"duration_ms":0,"fell_back":false}"#
        )
        .is_err());
    }

    #[test]
    fn a_budget_stop_is_its_own_state_and_exits_1() {
        let spec = RunSpec::new("t", Mode::Isolate, "opencode", "/tmp");
        let mut r = RunRecord::new("x".into(), spec, at("2026-01-01T00:00:00Z"));
        r.state = RunState::OverBudget;
        assert_eq!(r.state.as_str(), "over_budget");
        assert!(!r.state.is_active());
        assert_eq!(r.exit(), Exit::Failed);
        let value = serde_json::to_value(&r).expect("serialises");
        assert_eq!(value["state"], "over_budget");
        assert!(value["spec"].get("budget").is_none(), "no budget, no field");
        let back: RunRecord = serde_json::from_value(value).expect("reads");
        assert_eq!(back.state, RunState::OverBudget);
        assert_eq!(
            AttemptState::try_from("over_budget".to_string()),
            Ok(AttemptState::Ended(RunState::OverBudget))
        );
    }

    #[test]
    fn a_spec_without_attempts_has_one_round() {
        let mut value = serde_json::to_value(RunSpec::new("t", Mode::Write, "opencode", "/tmp"))
            .expect("serialises");
        assert!(value.get("attempts").is_none(), "one round is not written");
        if let Some(fields) = value.as_object_mut() {
            fields.remove("attempts");
        }
        let spec: RunSpec = serde_json::from_value(value).expect("reads");
        assert_eq!(spec.attempts, 1);
    }

    #[test]
    fn a_specs_time_limits_are_durations_stored_as_the_seconds_records_always_had() {
        let mut spec = RunSpec::new("t", Mode::Write, "opencode", "/tmp");
        spec.timeout = Duration::from_millis(90_500);
        spec.max_hold = Duration::from_secs(600);
        let json = serde_json::to_value(&spec).expect("serialises");
        assert_eq!(json["timeout_secs"], 90.5);
        assert_eq!(json["watchdog_secs"], 60.0);
        assert_eq!(json["verify_timeout_secs"], 900.0);
        assert_eq!(json["max_hold_secs"], 600.0);
        let text = serde_json::to_string(&spec).expect("serialises");
        assert!(
            text.contains(r#""timeout_secs":90.5,"watchdog_secs":60.0,"#),
            "{text}"
        );
        let back: RunSpec = serde_json::from_value(json.clone()).expect("reads");
        assert_eq!((back.timeout, back.max_hold), (spec.timeout, spec.max_hold));
        // Older records: no verify limit (900 s) and no hold (none), written as integers too;
        // a number no Pitroom wrote still reads.
        let mut old = json;
        if let Some(fields) = old.as_object_mut() {
            fields.remove("verify_timeout_secs");
            fields.remove("max_hold_secs");
        }
        old["timeout_secs"] = 1800.into();
        old["watchdog_secs"] = (-1.0).into();
        let spec: RunSpec = serde_json::from_value(old).expect("reads");
        assert_eq!(spec.timeout, Duration::from_secs(1800));
        assert_eq!(spec.watchdog, Duration::ZERO);
        assert_eq!(spec.verify_timeout, Duration::from_secs(900));
        assert_eq!(spec.max_hold, Duration::ZERO);
        let text = serde_json::to_string(&spec).expect("serialises");
        assert!(
            !text.contains("max_hold_secs"),
            "no hold is left out: {text}"
        );
    }

    #[test]
    fn fallback_targets_are_stored_as_the_text_records_always_had() {
        let mut spec = RunSpec::new("t", Mode::Read, "opencode", "/tmp");
        spec.fallback = vec![
            ChainTarget {
                backend: "opencode".into(),
                model: Some("ollama/qwen3:8b".into()),
            },
            ChainTarget {
                backend: "codex".into(),
                model: None,
            },
        ];
        let json = serde_json::to_value(&spec).expect("serialises");
        assert_eq!(
            json["fallback"],
            serde_json::json!(["opencode:ollama/qwen3:8b", "codex"])
        );
        let back: RunSpec = serde_json::from_value(json.clone()).expect("reads");
        assert_eq!(back.fallback, spec.fallback);
        // Older records kept a target's `#effort`, which no attempt ever used.
        let mut old = json;
        old["fallback"] = serde_json::json!(["claude:sonnet#high", "gemini#low", "x:"]);
        let shown: Vec<String> = serde_json::from_value::<RunSpec>(old)
            .expect("reads")
            .fallback
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(shown, ["claude:sonnet", "gemini", "x"]);
    }

    fn a_record() -> RunRecord {
        let mut spec = RunSpec::new("t", Mode::Read, "opencode", "/tmp");
        spec.model = Some("fake/limited".into());
        RunRecord::new(
            "20260101-000000-0000".into(),
            spec,
            at("2026-01-01T00:00:00Z"),
        )
    }

    fn at(stamp: &str) -> Timestamp {
        stamp.parse().expect("a test stamp")
    }

    /// A record of the shape written before the record held typed stamps: the stamps as
    /// `clock::stamp()` wrote them, as strings in the JSON.
    const OLD_SHAPE: &str = r#"{
        "version": 1, "id": "20261130-100000-0a1b", "state": "done",
        "spec": {"task": "t", "mode": "read", "backend": "opencode", "model": null,
                 "effort": null, "web": false, "dir": "/r", "timeout_secs": 1.0,
                 "watchdog_secs": 1.0, "background": false, "allow_non_git": false,
                 "parent": null, "primary": "sonnet", "price": null},
        "repo": null, "workdir": null, "copy": null, "phase": "held",
        "held_until": "2026-11-30T14:05:00Z",
        "created_at": "2026-11-30T10:00:00Z",
        "started_at": "2026-11-30T10:00:01.123456789Z",
        "ended_at": "2026-11-30T10:00:09.5+00:00",
        "duration_ms": 8377, "pid": null, "pid_start": null, "session": null,
        "base_tree": null, "after_tree": null, "answer": null, "error": null,
        "failure": null, "worker_exit": null, "last": null, "receipt": null, "refs": null,
        "verify": null, "supervisor_peak_kb": null
    }"#;

    #[test]
    fn a_record_of_the_old_shape_reads_its_stamps_with_nanoseconds_and_offsets() {
        let record: RunRecord = serde_json::from_str(OLD_SHAPE).expect("an old record reads");
        assert_eq!(record.created_at, at("2026-11-30T10:00:00Z"));
        assert_eq!(
            record.started_at.map(|t| t.subsec_nanosecond()),
            Some(123_456_789)
        );
        assert_eq!(
            record.started_at,
            Some(at("2026-11-30T10:00:01.123456789Z"))
        );
        assert_eq!(record.ended_at, Some(at("2026-11-30T10:00:09.500Z")));
        assert_eq!(record.held_until, Some(at("2026-11-30T14:05:00Z")));
        // Written back as the stamping clock writes: the same strings, the offset one in UTC.
        let again = serde_json::to_value(&record).expect("serialises");
        assert_eq!(again["created_at"], "2026-11-30T10:00:00Z");
        assert_eq!(again["started_at"], "2026-11-30T10:00:01.123456789Z");
        assert_eq!(again["ended_at"], "2026-11-30T10:00:09.5Z");
        assert_eq!(again["held_until"], "2026-11-30T14:05:00Z");
        // Another offset is the same instant, in UTC.
        let mut shifted: serde_json::Value = serde_json::from_str(OLD_SHAPE).expect("json");
        shifted["started_at"] = "2026-11-30T12:00:01+02:00".into();
        let record: RunRecord = serde_json::from_value(shifted).expect("reads");
        assert_eq!(record.started_at, Some(at("2026-11-30T10:00:01Z")));
    }

    #[test]
    fn spans_are_whole_milliseconds_written_as_numbers_of_them() {
        let record: RunRecord = serde_json::from_str(OLD_SHAPE).expect("an old record reads");
        assert_eq!(record.duration, Some(Duration::from_millis(8377)));
        assert_eq!(record.duration_ms(), Some(8377));
        assert_eq!(record.queued, None, "older records have no queued_ms");
        let mut record = a_record();
        record.duration = Some(whole_millis(Duration::from_nanos(1_234_567_891)));
        record.queued = Some(whole_millis(Duration::from_micros(999)));
        assert_eq!(record.duration, Some(Duration::from_millis(1234)));
        let written = serde_json::to_value(&record).expect("serialises");
        assert_eq!(written["duration_ms"], 1234);
        assert_eq!(written["queued_ms"], 0);
        assert!(written.get("duration").is_none() && written.get("queued").is_none());
        let back: RunRecord = serde_json::from_value(written).expect("reads");
        assert_eq!(
            (back.duration, back.queued),
            (record.duration, record.queued)
        );
        assert_eq!(
            millis_of(Duration::MAX),
            u64::MAX,
            "the longest span is written whole"
        );
        let mut negative: serde_json::Value = serde_json::from_str(OLD_SHAPE).expect("json");
        negative["duration_ms"] = (-1).into();
        assert!(
            serde_json::from_value::<RunRecord>(negative).is_err(),
            "a span is a number of milliseconds, as before"
        );
    }

    #[test]
    fn a_stamp_that_does_not_read_leaves_the_record_readable() {
        let mut bad: serde_json::Value = serde_json::from_str(OLD_SHAPE).expect("json");
        bad["created_at"] = "t".into();
        bad["started_at"] = "now".into();
        bad["ended_at"] = 17.into();
        bad["held_until"] = "2026-11-30T14:05:00".into(); // no offset: not an instant
        let record: RunRecord = serde_json::from_value(bad).expect("still reads");
        assert_eq!(record.created_at, UNKNOWN_CREATED);
        assert_eq!(record.created_known(), None);
        assert_eq!(
            (record.started_at, record.ended_at, record.held_until),
            (None, None, None)
        );
        assert_eq!(
            record.duration,
            Some(Duration::from_millis(8377)),
            "the rest of the record reads"
        );
        // Absent and null optional stamps are none, as before.
        let mut bare: serde_json::Value = serde_json::from_str(OLD_SHAPE).expect("json");
        bare["started_at"] = serde_json::Value::Null;
        if let Some(fields) = bare.as_object_mut() {
            fields.remove("ended_at");
            fields.remove("held_until");
        }
        let record: RunRecord = serde_json::from_value(bare).expect("reads");
        assert_eq!(record.created_known(), Some(at("2026-11-30T10:00:00Z")));
        assert_eq!(
            (record.started_at, record.ended_at, record.held_until),
            (None, None, None)
        );
        let written = serde_json::to_value(&record).expect("serialises");
        assert_eq!(written["started_at"], serde_json::Value::Null);
        assert_eq!(written["ended_at"], serde_json::Value::Null);
        assert!(written.get("held_until").is_none(), "{written:#}");
        // A record without a `created_at` is not a run record.
        let mut headless: serde_json::Value = serde_json::from_str(OLD_SHAPE).expect("json");
        if let Some(fields) = headless.as_object_mut() {
            fields.remove("created_at");
        }
        assert!(serde_json::from_value::<RunRecord>(headless).is_err());
    }

    #[test]
    fn a_record_written_and_read_back_writes_the_same_json_byte_for_byte() {
        // The file a record of the old shape was: its string stamps as `clock::stamp()` wrote
        // them (a wall-clock stamp has nanoseconds), pretty-printed as `RunRecord::write` does.
        let mut old = serde_json::to_value(a_record()).expect("serialises");
        old["held_until"] = "2026-11-30T14:05:00Z".into();
        old["created_at"] = "2026-11-30T10:00:00.000000001Z".into();
        old["started_at"] = "2026-11-30T10:00:01.123456789Z".into();
        old["ended_at"] = "2026-11-30T10:00:09.12Z".into();
        old["duration_ms"] = 8377.into();
        old["queued_ms"] = 0.into();
        let mut fields = old.as_object().cloned().expect("an object");
        // `held_until` sits where the struct writes it, not at the end.
        let held = fields.shift_remove("held_until").expect("set above");
        let mut file = serde_json::Map::new();
        for (key, value) in fields {
            if key == "created_at" {
                file.insert("held_until".into(), held.clone());
            }
            file.insert(key, value);
        }
        let file = serde_json::to_string_pretty(&file).expect("serialises");
        let record: RunRecord = serde_json::from_str(&file).expect("reads");
        assert_eq!(
            serde_json::to_string_pretty(&record).expect("serialises"),
            file
        );
        // And a stamp the clock makes now is written as it displays, which is what
        // `clock::stamp()` wrote.
        let mut record = a_record();
        let now = Timestamp::now();
        record.started_at = Some(now);
        let written = serde_json::to_value(&record).expect("serialises");
        assert_eq!(written["started_at"], now.to_string());
        assert_eq!(written["created_at"], "2026-01-01T00:00:00Z");
        let back: RunRecord = serde_json::from_value(written).expect("reads");
        assert_eq!(back.started_at, Some(now));
    }

    #[test]
    fn a_fallback_leaves_the_spec_as_asked_and_names_the_target_that_ran() {
        let mut record = a_record();
        let fallback = ChainTarget {
            backend: "claude".into(),
            model: None,
        };
        record.attempt_on(&fallback);
        assert_eq!(record.spec.backend, "opencode");
        assert_eq!(record.spec.model.as_deref(), Some("fake/limited"));
        assert_eq!((record.backend(), record.model()), ("claude", None));
        assert_eq!(record.worker_target(), "claude");
        // Back on the asked target (a rerun), nothing is noted and nothing is written.
        record.attempt_on(&record.spec.asked());
        assert_eq!(record.fell_back_to, None);
        assert_eq!(record.worker_target(), "opencode:fake/limited");
        let json = serde_json::to_value(&record).expect("serialises");
        assert!(json.get("fell_back_to").is_none(), "{json:#}");
    }

    #[test]
    fn a_patchs_fate_is_stored_as_the_three_flags_records_always_had() {
        let mut record = a_record();
        for (fate, [reverted, applied, discarded]) in [
            (PatchFate::Pending, [false, false, false]),
            (PatchFate::Reverted, [true, false, false]),
            (PatchFate::Applied, [false, true, false]),
            (PatchFate::Discarded, [false, false, true]),
        ] {
            record.patch = fate;
            let json = serde_json::to_value(&record).expect("serialises");
            assert_eq!(
                (&json["reverted"], &json["applied"], &json["discarded"]),
                (&reverted.into(), &applied.into(), &discarded.into()),
                "{fate:?}"
            );
            let back: RunRecord = serde_json::from_value(json).expect("reads");
            assert_eq!(back.patch, fate);
        }
        // In the same place of the text as ever: between the citations and the verify outcome.
        let text = serde_json::to_string(&a_record()).expect("serialises");
        assert!(
            text.contains(
                r#""refs":null,"reverted":false,"applied":false,"discarded":false,"verify":null"#
            ),
            "{text}"
        );
    }

    #[test]
    fn older_patch_flags_read_as_the_last_thing_done_with_the_patch() {
        let mut old = serde_json::to_value(a_record()).expect("serialises");
        // A discarded copy whose kept patch was applied later carried both flags: it landed.
        old["discarded"] = true.into();
        old["applied"] = true.into();
        let record: RunRecord = serde_json::from_value(old.clone()).expect("reads");
        assert_eq!(record.patch, PatchFate::Applied);
        // The oldest records may carry none of them.
        if let Some(fields) = old.as_object_mut() {
            for flag in ["reverted", "applied", "discarded"] {
                fields.remove(flag);
            }
        }
        let record: RunRecord = serde_json::from_value(old).expect("reads");
        assert_eq!(record.patch, PatchFate::Pending);
    }

    #[test]
    fn a_record_written_when_the_spec_named_the_last_target_reads_the_same() {
        // Records of the older shape had their spec rewritten to the target that ran last,
        // and no `fell_back_to`: the accessors read that target.
        let mut old = serde_json::to_value(a_record()).expect("serialises");
        old["spec"]["backend"] = "claude".into();
        old["spec"]["model"] = serde_json::Value::Null;
        let record: RunRecord = serde_json::from_value(old).expect("reads");
        assert_eq!(record.fell_back_to, None);
        assert_eq!((record.backend(), record.model()), ("claude", None));
        assert_eq!(record.attempt_target().to_string(), "claude");
    }
}
