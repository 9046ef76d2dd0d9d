//! One run as a database row.

use pitroom_core::record::target_text;
use pitroom_core::RunRecord;
use pitroom_workers::FailureKind;
use rusqlite::{named_params, Connection};

use crate::docs::{cap, RunDocs};

/// Answers longer than this are cut for the index; the run directory keeps all of it.
const ANSWER_LIMIT: usize = 200_000;

/// A run's ledger row.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRow {
    pub id: String,
    /// Unix milliseconds: when the worker started (when it was created, if it never did).
    pub started_ms: i64,
    pub ended_ms: Option<i64>,
    pub state: String,
    pub mode: String,
    pub backend: String,
    /// `None`: the worker CLI's own default model.
    pub model: Option<String>,
    pub group: Option<String>,
    pub dir: String,
    pub task: String,
    pub duration_ms: Option<i64>,
    pub steps: i64,
    pub tool_calls: i64,
    pub tokens: i64,
    pub returned_tokens: Option<i64>,
    /// USD; `None` when neither the CLI nor `worker_prices` gave a figure.
    pub cost: Option<f64>,
    /// The cost was estimated from `worker_prices`, not reported by the CLI.
    pub cost_estimated: bool,
    /// Estimated saving in USD (always an estimate).
    pub saved: Option<f64>,
    pub primary: Option<String>,
    /// `rate_limited`, `model_unavailable`, `auth`, `transient`, `other`.
    pub failure: Option<String>,
    pub files_changed: i64,
    pub applied: bool,
    pub discarded: bool,
    pub error: Option<String>,
    pub answer: Option<String>,
    pub steps_text: String,
    pub patch: Option<String>,
}

impl RunRow {
    pub fn new(record: &RunRecord, docs: &RunDocs) -> RunRow {
        let receipt = record.receipt.as_ref();
        RunRow {
            id: record.id.clone(),
            // A run that never started sorts by when it was made; one whose stamps did not
            // read at all (`RunRecord::created_known`) at the very start, as before.
            started_ms: record
                .started_at
                .or(record.created_known())
                .map(|t| t.as_millisecond())
                .unwrap_or_default(),
            ended_ms: record.ended_at.map(|t| t.as_millisecond()),
            state: record.state.as_str().to_string(),
            mode: record.spec.mode.as_str().to_string(),
            backend: record.backend().to_string(),
            model: record.model_ran().map(str::to_string),
            group: record.spec.group.clone(),
            dir: record.spec.dir.display().to_string(),
            task: record.spec.task.clone(),
            duration_ms: record.duration_ms().map(clamp),
            steps: i64::from(record.tally.steps),
            tool_calls: i64::from(record.tally.tool_calls),
            tokens: clamp(
                receipt
                    .map(|r| r.worker_tokens)
                    .unwrap_or_else(|| record.tally.usage.total()),
            ),
            returned_tokens: receipt.map(|r| clamp(r.returned_tokens)),
            cost: receipt.and_then(|r| r.cost).or(record.tally.cost),
            cost_estimated: record.tally.cost.is_none() && receipt.and_then(|r| r.cost).is_some(),
            saved: receipt.and_then(|r| r.saved),
            primary: receipt.map(|r| r.primary.clone()),
            failure: record.failure.map(failure_name),
            files_changed: record.changes.len() as i64,
            applied: record.patch.is_applied(),
            discarded: record.patch.is_discarded(),
            error: record.error.clone(),
            answer: record.answer.as_deref().map(|a| cap(a, ANSWER_LIMIT)),
            steps_text: docs.steps.clone(),
            patch: docs.patch.clone(),
        }
    }

    /// `backend:model`, or the backend alone for the CLI's default model.
    pub fn worker(&self) -> String {
        worker_label(&self.backend, self.model.as_deref())
    }
}

/// A row's worker as a run's target is named everywhere (`backend[:model]`).
pub(crate) fn worker_label(backend: &str, model: Option<&str>) -> String {
    target_text(backend, model)
}

fn failure_name(kind: FailureKind) -> String {
    match kind {
        FailureKind::ModelUnavailable => "model_unavailable",
        FailureKind::RateLimited => "rate_limited",
        FailureKind::Auth => "auth",
        FailureKind::Transient => "transient",
        FailureKind::Other => "other",
    }
    .to_string()
}

fn clamp(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// A record's RFC 3339 time as unix milliseconds.
const UPSERT: &str = "
INSERT INTO runs (id, started_ms, ended_ms, state, mode, backend, model, grp, dir, task,
    duration_ms, steps, tool_calls, tokens, returned_tokens, cost, cost_estimated, saved,
    primary_label, failure, files_changed, applied, discarded, error, answer, steps_text, patch)
VALUES (:id, :started_ms, :ended_ms, :state, :mode, :backend, :model, :grp, :dir, :task,
    :duration_ms, :steps, :tool_calls, :tokens, :returned_tokens, :cost, :cost_estimated, :saved,
    :primary_label, :failure, :files_changed, :applied, :discarded, :error, :answer, :steps_text,
    :patch)
ON CONFLICT(id) DO UPDATE SET
    started_ms = excluded.started_ms, ended_ms = excluded.ended_ms, state = excluded.state,
    mode = excluded.mode, backend = excluded.backend, model = excluded.model,
    grp = excluded.grp, dir = excluded.dir, task = excluded.task,
    duration_ms = excluded.duration_ms, steps = excluded.steps,
    tool_calls = excluded.tool_calls, tokens = excluded.tokens,
    returned_tokens = excluded.returned_tokens, cost = excluded.cost,
    cost_estimated = excluded.cost_estimated, saved = excluded.saved,
    primary_label = excluded.primary_label, failure = excluded.failure,
    files_changed = excluded.files_changed, applied = excluded.applied,
    discarded = excluded.discarded, error = excluded.error, answer = excluded.answer,
    steps_text = excluded.steps_text, patch = excluded.patch
";

pub(crate) fn upsert(conn: &Connection, row: &RunRow) -> rusqlite::Result<()> {
    let mut stmt = conn.prepare_cached(UPSERT)?;
    stmt.execute(named_params! {
        ":id": row.id,
        ":started_ms": row.started_ms,
        ":ended_ms": row.ended_ms,
        ":state": row.state,
        ":mode": row.mode,
        ":backend": row.backend,
        ":model": row.model,
        ":grp": row.group,
        ":dir": row.dir,
        ":task": row.task,
        ":duration_ms": row.duration_ms,
        ":steps": row.steps,
        ":tool_calls": row.tool_calls,
        ":tokens": row.tokens,
        ":returned_tokens": row.returned_tokens,
        ":cost": row.cost,
        ":cost_estimated": row.cost_estimated,
        ":saved": row.saved,
        ":primary_label": row.primary,
        ":failure": row.failure,
        ":files_changed": row.files_changed,
        ":applied": row.applied,
        ":discarded": row.discarded,
        ":error": row.error,
        ":answer": row.answer,
        ":steps_text": row.steps_text,
        ":patch": row.patch,
    })?;
    Ok(())
}
