//! Fall back: the chain of targets (the chosen one, then `--fallback`), walked one attempt at
//! a time. A target that is cooling down or has no adapter is skipped; an attempt that failed in
//! a way the next target may fix (model unavailable, rate limited or out of quota, auth) hands
//! over to it, with an account of what it did when it did anything. An attempt that tripped
//! over a passing fault of its CLI's own (a busy session database) runs once more on the same
//! target, the last one included.

use std::path::Path;
use std::time::{Duration, Instant};

use pitroom_proc::terminate_descendants;
use pitroom_workers::{Adapter, FailureKind};

use super::changes::snapshot_after;
use super::judge::{judge, stderr_tail, Evidence};
use super::launch::{AttemptCtx, Brief};
use super::paths::display_roots;
use super::stream::{Ending, Stream};
use super::tree::TreeSetup;
use super::{Engine, EngineError};
use crate::cooldown::Cooldowns;
use crate::record::{Attempt, AttemptState, ChainTarget, RunRecord, RunSpec, RunState, Tally};

/// The attempt that ended the chain: the one the run is judged by.
pub(super) struct LastAttempt {
    pub(super) adapter: Box<dyn Adapter>,
    pub(super) stream: Stream,
    pub(super) ending: Ending,
    pub(super) started: Instant,
    /// The tally of the attempts before it, which its stream's tally includes.
    pub(super) prior: Tally,
    /// Whether it was given an account of an earlier attempt's work.
    pub(super) handed_off: bool,
    /// Its place in the chain: 0 is the target the run was asked for.
    pub(super) index: usize,
    /// Its repair round: 1 for the task itself, 2 and on for a failed `--verify` sent back.
    pub(super) round: u32,
}

impl Engine {
    /// Launches and streams one attempt per target of `chain` until one ends in a way no other
    /// target could improve on (or the chain runs out), recording every earlier attempt.
    pub(super) fn run_chain(
        &self,
        record: &mut RunRecord,
        ctx: &mut AttemptCtx<'_>,
        chain: &[ChainTarget],
        parent_session: Option<(String, pitroom_workers::Usage)>,
    ) -> Result<LastAttempt, EngineError> {
        let (run_dir, tree) = (ctx.run_dir, ctx.tree);
        let cooldowns = Cooldowns::load(&self.home);
        let mut handoff: Option<String> = None;
        let mut prior = Tally::default();
        let mut index = 0;
        // Worker attempts started so far (skipped targets start none): names kept stderr logs.
        let mut launched = 0;
        // Whether the target at `index` has had its one rerun after a passing fault.
        let mut rerun = false;
        loop {
            let next = &chain[index];
            let last = index + 1 == chain.len();
            let target = next.to_string();
            if let (false, Some(cooling)) = (last, cooldowns.get(&target)) {
                let why = format!(
                    "cooling down until {}: {}",
                    cooling.until_short(),
                    cooling.reason
                );
                record.attempts.push(skipped_attempt(&target, why));
                index += 1;
                continue;
            }
            let adapter = match self.adapter_for_spec(&record.spec, &next.backend) {
                Ok(a) => a,
                Err(e) if !last => {
                    record
                        .attempts
                        .push(skipped_attempt(&target, e.to_string()));
                    index += 1;
                    continue;
                }
                Err(e) => return Err(e),
            };
            // The spec keeps what was asked; the record notes which target this attempt is.
            record.attempt_on(next);
            if launched > 0 {
                // The next worker has its own session; `--continue` follows the last one.
                record.session = None;
                record.reported_model = None;
                rotate_stderr(run_dir, launched);
            }
            launched += 1;
            let (session, session_usage_before) = match (&parent_session, index) {
                (Some((session, used)), 0) => (
                    Some(session.clone()),
                    if adapter.resumed_usage_is_cumulative() {
                        *used
                    } else {
                        Default::default()
                    },
                ),
                _ => (None, Default::default()),
            };
            let attempt_started = Instant::now();
            let mut stream = Stream {
                redactor: Some(self.redactor(record, tree)),
                tally: prior.clone(),
                roots: display_roots(tree),
                session_usage_before,
                ..Stream::default()
            };
            let brief = match handoff.as_deref() {
                Some(account) => Brief::HandOff(account),
                None => Brief::Task,
            };
            let ending =
                self.attempt(record, ctx, adapter.as_ref(), session, brief, &mut stream)?;
            // Anything the worker left behind that escaped the keeper is ours to end.
            terminate_descendants(Duration::from_millis(500));
            // The last target's failure is judged only while its one rerun is still to come:
            // after that, whatever it did is how the run ends.
            let failure = if last && rerun {
                None
            } else {
                attempt_failure(record, run_dir, adapter.as_ref(), &stream, ending)
                    .filter(|(kind, ..)| !last || *kind == FailureKind::Transient)
            };
            let Some((kind, error, retry_after)) = failure else {
                return Ok(LastAttempt {
                    adapter,
                    stream,
                    ending,
                    started: attempt_started,
                    prior,
                    handed_off: handoff.is_some(),
                    index,
                    round: 1,
                });
            };
            if kind == FailureKind::RateLimited {
                note_cooldown(&self.home, &target, &error, retry_after);
            }
            let steps = stream.tally.steps - prior.steps;
            let tool_calls = stream.tally.tool_calls - prior.tool_calls;
            let handed_off = handoff.is_some();
            handoff = (steps > 0 || tool_calls > 0)
                .then(|| handoff_account(record, run_dir, tree, &stream, &target, &error));
            record.attempts.push(Attempt {
                target,
                state: AttemptState::Ended(RunState::Failed),
                failure: Some(kind),
                error: Some(stream.redact(&error)),
                steps,
                tool_calls,
                duration: crate::record::whole_millis(attempt_started.elapsed()),
                fell_back: true,
                handed_off,
                tokens: tokens_since(&prior, &stream.tally),
                ..Attempt::default()
            });
            prior = stream.tally.clone();
            record.tally = prior.clone();
            self.save(record)?;
            if kind == FailureKind::Transient && !rerun {
                rerun = true;
            } else {
                (index, rerun) = (index + 1, false);
            }
        }
    }

    /// Records the attempt the run was judged by, and a cooldown for its target when a rate
    /// limit ended it.
    pub(super) fn note_last_attempt(&self, record: &mut RunRecord, last: &LastAttempt) {
        let stream = &last.stream;
        record.attempts.push(Attempt {
            target: record.worker_target(),
            state: AttemptState::Ended(record.state),
            failure: record.failure,
            error: record.error.clone(),
            steps: stream.tally.steps - last.prior.steps,
            tool_calls: stream.tally.tool_calls - last.prior.tool_calls,
            duration: crate::record::whole_millis(last.started.elapsed()),
            fell_back: false,
            handed_off: last.handed_off,
            round: last.round,
            verify: record.verify.clone(),
            tokens: tokens_since(&last.prior, &stream.tally),
            repaired: false,
        });
        if record.failure == Some(FailureKind::RateLimited) {
            let retry_after = stream.retry_after();
            let error = record.error.clone().unwrap_or_default();
            note_cooldown(&self.home, &record.worker_target(), &error, retry_after);
        }
    }
}

/// The fallback decision for an attempt that just ended, from what it left: its stream, its
/// stderr and the record (which carries no judgement yet while the chain is walked).
fn attempt_failure(
    record: &RunRecord,
    run_dir: &Path,
    adapter: &dyn Adapter,
    stream: &Stream,
    ending: Ending,
) -> Option<(FailureKind, String, Option<u64>)> {
    let answer = stream.answer();
    let stderr = stderr_tail(run_dir);
    fallback_failure(
        &Evidence::of(record, ending, stream, answer.as_deref(), &stderr),
        adapter,
    )
}

/// Whether an attempt failed in a way the next target may fix (model unavailable, rate
/// limited or out of quota, auth): its kind, its error and the provider's retry-after.
/// Timeouts, stops, budget stops, loops and answers never fall back.
pub(super) fn fallback_failure(
    evidence: &Evidence,
    adapter: &dyn Adapter,
) -> Option<(FailureKind, String, Option<u64>)> {
    if matches!(
        evidence.ending,
        Ending::Stopped | Ending::TimedOut | Ending::Stalled | Ending::OverBudget
    ) {
        return None;
    }
    let judgement = judge(evidence, adapter);
    match (judgement.state, judgement.failure) {
        (RunState::Failed, Some(kind)) if kind != FailureKind::Other => Some((
            kind,
            judgement.error.unwrap_or_else(|| kind.describe().into()),
            evidence.stream.retry_after(),
        )),
        _ => None,
    }
}

/// A compact account of what a failed worker did, for the worker that finishes its task:
/// its tool calls, what it said, and (for edit runs) its diff so far.
fn handoff_account(
    record: &RunRecord,
    run_dir: &Path,
    tree: &TreeSetup,
    stream: &Stream,
    target: &str,
    error: &str,
) -> String {
    let mut account = format!(
        "Another worker ({target}) started this task and stopped part-way ({}).\n",
        stream.redact(error).lines().next().unwrap_or("")
    );
    if !stream.tool_log.is_empty() {
        account.push_str("Its tool calls, in order:\n");
        for call in &stream.tool_log {
            account.push_str(&format!("- {call}\n"));
        }
    }
    if let Some(said) = stream.answer() {
        let said: String = said.chars().take(1500).collect();
        account.push_str(&format!("What it wrote last:\n{}\n", stream.redact(&said)));
    }
    if record.spec.mode.may_edit() {
        if let Some(patch) = changes_so_far(record, run_dir, tree) {
            let patch: String = stream.redact(&patch).chars().take(8000).collect();
            account.push_str(&format!(
                "Its changes so far are already in your working tree (keep them; do not redo them):\n```diff\n{patch}\n```\n"
            ));
        }
    }
    account
}

/// The patch of an edit run's changes so far, for a hand-off account; `None` when there are
/// none or they cannot be read. The patch is kept as `changes.patch` too, as the final snapshot
/// keeps it, so the run directory shows the work the next worker continues from.
fn changes_so_far(record: &RunRecord, run_dir: &Path, tree: &TreeSetup) -> Option<String> {
    let base = record.base_tree.as_deref()?;
    let after = snapshot_after(&record.spec.link, run_dir, tree, Some(base)).ok()??;
    let changes = after.diff_from(base, tree).ok()?;
    if changes.is_empty() {
        return None;
    }
    std::fs::write(run_dir.join("changes.patch"), &changes.patch).ok()?;
    // A patch that is not UTF-8 (binary changes) leaves the account without a diff.
    Some(String::from_utf8(changes.patch).unwrap_or_default())
}

/// The run's chain of targets: the chosen one, then its fallbacks, without repeats. Each is
/// named `backend[:model]` in attempts and cooldowns (its `Display`).
pub(super) fn fallback_chain(spec: &RunSpec) -> Vec<ChainTarget> {
    let mut chain = vec![spec.asked()];
    for target in &spec.fallback {
        if !chain.contains(target) {
            chain.push(target.clone());
        }
    }
    chain
}

/// The tokens an attempt used: its stream's tally past the attempts before it.
pub(super) fn tokens_since(prior: &Tally, now: &Tally) -> u64 {
    now.usage.total().saturating_sub(prior.usage.total())
}

/// A target the chain passed over without starting a worker (cooling down, no adapter).
fn skipped_attempt(target: &str, why: String) -> Attempt {
    Attempt {
        target: target.to_string(),
        state: AttemptState::Skipped,
        error: Some(why),
        fell_back: true,
        ..Attempt::default()
    }
}

/// Keeps a failed attempt's stderr as `stderr.attempt-N.log` before the next one writes its own.
pub(super) fn rotate_stderr(run_dir: &Path, next_attempt: usize) {
    let kept = run_dir.join(format!("stderr.attempt-{next_attempt}.log"));
    if let Err(e) = crate::log::unless_gone(std::fs::rename(run_dir.join("stderr.log"), &kept)) {
        tracing::warn!(
            "could not keep the failed attempt's stderr as {}: {e}; the next attempt appends to stderr.log",
            kept.display()
        );
    }
}

/// Notes a rate-limited target's cooldown, so the next runs skip it; without the note they
/// would only try it again and wait.
fn note_cooldown(
    home: &crate::home::Home,
    target: &str,
    error: &str,
    retry_after_secs: Option<u64>,
) {
    if let Err(e) = Cooldowns::note(home, target, error, retry_after_secs) {
        tracing::warn!("could not note the cooldown of {target}: {e}");
    }
}
