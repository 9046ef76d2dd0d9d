//! Repair rounds (`--attempts N`): a `--verify` that fails goes back to the worker that made the
//! change, with the command and the end of its output, until the check passes or the rounds run
//! out. The worker continues its own session where its CLI can resume one, and starts afresh on
//! the same tree (which holds its changes) otherwise. Each round is judged and verified like the
//! first, and each is an attempt on record with its own check.

use std::path::Path;
use std::time::{Duration, Instant};

use pitroom_proc::terminate_descendants;
use pitroom_workers::Usage;

use super::fallback::{rotate_stderr, LastAttempt};
use super::launch::{AttemptCtx, Brief};
use super::paths::display_roots;
use super::stream::{usage_minus, Stream};
use super::{Engine, EngineError};
use crate::prompt::RepairBrief;
use crate::record::{AttemptState, RunPhase, RunRecord, RunState, VerifyOutcome};

/// Whether the run's check failed and the worker has a round left to repair it in: an edit run
/// whose worker finished, whose `--verify` then failed, and that nobody stopped.
pub(super) fn repair_due(record: &RunRecord, last: &LastAttempt) -> bool {
    record.spec.mode.may_edit()
        && last.round < record.spec.attempts
        && record.state == RunState::Failed
        && record.verify_failed()
        && record.interrupted_in.is_none()
}

impl Engine {
    /// Sends the failed check back to the worker of `last` and runs its next round, up to the
    /// worker's ending; the caller judges and verifies it as it did the first.
    pub(super) fn repair_round(
        &self,
        record: &mut RunRecord,
        ctx: &mut AttemptCtx<'_>,
        last: LastAttempt,
    ) -> Result<LastAttempt, EngineError> {
        let (run_dir, tree) = (ctx.run_dir, ctx.tree);
        let round = last.round + 1;
        let brief = match &record.verify {
            Some(check) => repair_brief(check, round, record.spec.attempts, &last.stream),
            None => return Ok(last),
        };
        // The round that failed stays on record, with its check.
        self.note_last_attempt(record, &last);
        if let Some(failed) = record.attempts.last_mut() {
            failed.repaired = true;
        }
        keep_verify_log(run_dir, last.round);
        reopen(record);
        self.enter(record, RunPhase::Worker)?;
        let session = if last.adapter.can_resume() {
            record.session.clone()
        } else {
            None
        };
        let launched = record
            .attempts
            .iter()
            .filter(|a| a.state != AttemptState::Skipped)
            .count();
        rotate_stderr(run_dir, launched);
        let own_usage_before = usage_minus(last.stream.tally.usage, last.prior.usage);
        let session_before = record.session_usage.unwrap_or(own_usage_before);
        let prior = last.stream.tally.clone();
        let mut stream = Stream {
            redactor: Some(self.redactor(record, tree)),
            tally: prior.clone(),
            roots: display_roots(tree),
            // What the worker read and edited in earlier rounds counts for this one's answer:
            // it cites and reports its work as a whole.
            calls: last.stream.calls.clone(),
            edited: last.stream.edited.clone(),
            session_usage_before: if session.is_some() && last.adapter.resumed_usage_is_cumulative()
            {
                session_before
            } else {
                Usage::default()
            },
            ..Stream::default()
        };
        let started = Instant::now();
        let ending = self.attempt(
            record,
            ctx,
            last.adapter.as_ref(),
            session.clone(),
            Brief::Repair(&brief),
            &mut stream,
        )?;
        // Anything the worker left behind that escaped the keeper is ours to end.
        terminate_descendants(Duration::from_millis(500));
        if session.is_some() && last.adapter.resumed_usage_is_cumulative() {
            own_usage_of_resumed_round(record, &mut stream, &prior.usage, session_before);
        }
        Ok(LastAttempt {
            adapter: last.adapter,
            stream,
            ending,
            started,
            prior,
            handed_off: false,
            index: last.index,
            round,
        })
    }
}

/// Keeps a failed round's `verify.log` as `verify.round-N.log` before the next check writes its
/// own, so the run dir holds every round's output.
fn keep_verify_log(run_dir: &Path, round: u32) {
    let kept = run_dir.join(format!("verify.round-{round}.log"));
    if let Err(e) = crate::log::unless_gone(std::fs::rename(run_dir.join("verify.log"), &kept)) {
        tracing::warn!(
            "could not keep round {round}'s check output as {}: {e}; the next round's check replaces verify.log",
            kept.display()
        );
    }
}

/// The failed check as the next round's prompt tells it.
fn repair_brief(check: &VerifyOutcome, round: u32, of: u32, stream: &Stream) -> RepairBrief {
    let how = match (check.timed_out, check.exit_code) {
        (true, _) => format!(
            "timed out after {}",
            crate::duration::format_duration(check.duration)
        ),
        (false, Some(code)) => format!("failed with exit code {code}"),
        (false, None) => "could not run".to_string(),
    };
    RepairBrief {
        round,
        of,
        command: check.command.clone(),
        how,
        tail: stream.redact(&check.tail),
    }
}

/// Clears the judgement of the round that failed, so the next round is judged on its own:
/// its state, error, check and the claims flagged on its answer.
fn reopen(record: &mut RunRecord) {
    let flagged = record.claims.warnings();
    record.warnings.retain(|w| !flagged.contains(w));
    record.claims = Default::default();
    record.state = RunState::Running;
    record.error = None;
    record.failure = None;
    record.worker_exit = None;
    record.verify = None;
    record.verdict = None;
}

/// A CLI that reports a resumed session's usage as the session's total (Codex): the round's
/// own usage is that total minus what the session had used before the round.
fn own_usage_of_resumed_round(
    record: &mut RunRecord,
    stream: &mut Stream,
    prior: &Usage,
    session_before: Usage,
) {
    let reported = usage_minus(stream.tally.usage, *prior);
    let mut usage = *prior;
    usage.add(&usage_minus(reported, session_before));
    stream.tally.usage = usage;
    record.session_usage = Some(reported);
}
