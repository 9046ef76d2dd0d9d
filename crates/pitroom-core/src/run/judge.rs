//! Judge: how an attempt's outcome is classified, from how the worker ended, its events, its
//! answer and what the tree showed. [`judge`] is a pure function of that evidence, so the
//! fallback decision (is this a failure the next target may fix?) and the run's final
//! judgement are one rule applied to the same facts, and neither needs a copy of the record.

use std::fs::File;
use std::path::Path;

use pitroom_workers::{Adapter, FailureEvidence, FailureKind, WorkerEvent};

use super::stream::{Ending, Stream};
use crate::duration::format_duration;
use crate::record::{RunRecord, RunSpec, RunState};
use crate::verdict::{Verdict, VERDICT_FORMAT};

/// How much of the worker's stderr the classifier sees.
const STDERR_TAIL: u64 = 8 * 1024;

/// What an attempt is judged by, gathered by the caller.
pub(super) struct Evidence<'a> {
    pub(super) spec: &'a RunSpec,
    pub(super) ending: Ending,
    pub(super) stream: &'a Stream,
    /// The answer as it is judged: the record's (redacted, in project paths) for the run, the
    /// stream's own while the fallback decision is made.
    pub(super) answer: Option<&'a str>,
    /// The end of the worker's stderr.log.
    pub(super) stderr_tail: &'a str,
    /// The worker changed its read-only copy; `changed_files` says how many files.
    pub(super) read_only_violation: bool,
    pub(super) changed_files: usize,
}

impl<'a> Evidence<'a> {
    /// The evidence in `record` as it stands, with `answer` and the stderr tail given.
    pub(super) fn of(
        record: &'a RunRecord,
        ending: Ending,
        stream: &'a Stream,
        answer: Option<&'a str>,
        stderr_tail: &'a str,
    ) -> Evidence<'a> {
        Evidence {
            spec: &record.spec,
            ending,
            stream,
            answer,
            stderr_tail,
            read_only_violation: record.read_only_violation,
            changed_files: record.changes.len(),
        }
    }
}

/// The verdict on an attempt: the fields it sets on the record. A `None` leaves the record's
/// field as it is (a run's record carries no judgement before this one).
#[derive(Debug, PartialEq)]
pub(super) struct Judgement {
    pub(super) state: RunState,
    pub(super) error: Option<String>,
    pub(super) failure: Option<FailureKind>,
    pub(super) worker_exit: Option<i32>,
    /// A review's parsed verdict line.
    pub(super) verdict: Option<Verdict>,
    /// A warning for the record (an answer despite an error exit).
    pub(super) warning: Option<String>,
}

impl Judgement {
    /// A judgement that decides only the state and, when given, the error.
    fn new(state: RunState, error: Option<String>) -> Judgement {
        Judgement {
            state,
            error,
            failure: None,
            worker_exit: None,
            verdict: None,
            warning: None,
        }
    }

    /// Writes the judgement into the record; a warning is added to the ones it has.
    pub(super) fn apply(self, record: &mut RunRecord) {
        record.state = self.state;
        if let Some(error) = self.error {
            record.error = Some(error);
        }
        if let Some(failure) = self.failure {
            record.failure = Some(failure);
        }
        if let Some(code) = self.worker_exit {
            record.worker_exit = Some(code);
        }
        if let Some(verdict) = self.verdict {
            record.verdict = Some(verdict);
        }
        if let Some(warning) = self.warning {
            record.warnings.push(warning);
        }
    }
}

/// Judges the run from its record and stream, and writes the judgement into the record.
pub(super) fn judge_run(
    record: &mut RunRecord,
    run_dir: &Path,
    adapter: &dyn Adapter,
    stream: &Stream,
    ending: Ending,
) {
    let stderr = stderr_tail(run_dir);
    let judgement = judge(
        &Evidence::of(record, ending, stream, record.answer.as_deref(), &stderr),
        adapter,
    );
    judgement.apply(record);
}

/// The end of the worker's stderr.log, which the keeper wrote as the worker printed it.
pub(super) fn stderr_tail(run_dir: &Path) -> String {
    tail(&run_dir.join("stderr.log"), STDERR_TAIL)
}

/// Classifies an attempt: done only with an answer (and, for a review, a verdict line);
/// otherwise stopped, timed out or failed, with the adapter's reading of the failure.
pub(super) fn judge(e: &Evidence, adapter: &dyn Adapter) -> Judgement {
    let errors: Vec<&str> = e.stream.errors().collect();
    let code = match e.ending {
        Ending::Stopped => {
            return Judgement::new(
                RunState::Stopped,
                Some("stopped before the worker finished; what it did is kept".into()),
            );
        }
        Ending::TimedOut => {
            return Judgement::new(
                RunState::Timeout,
                Some(format!(
                    "timed out after {}; the worker was stopped and what it did is kept",
                    format_duration(e.spec.timeout)
                )),
            );
        }
        Ending::OverBudget => {
            let reached = e
                .stream
                .over_budget
                .as_deref()
                .unwrap_or("it reached its budget");
            return Judgement::new(
                RunState::OverBudget,
                Some(format!(
                    "over budget: {reached}; the worker was stopped and what it did is kept"
                )),
            );
        }
        Ending::Stalled => {
            return Judgement {
                failure: Some(FailureKind::Other),
                ..Judgement::new(
                    RunState::Failed,
                    Some(format!(
                        "the worker made no progress for {} and kept calling the model ({} empty steps); the model's replies probably carry no finish reason. Pitroom stopped it",
                        format_duration(e.spec.watchdog),
                        e.stream.empty_steps_total
                    )),
                )
            };
        }
        Ending::RetriesExhausted => {
            let error = e
                .stream
                .last_retry_error
                .clone()
                .unwrap_or_else(|| "model call failed".into());
            let events = [WorkerEvent::Error {
                message: error.clone(),
                status: None,
                retry_after: None,
            }];
            let evidence = FailureEvidence {
                events: &events,
                stderr_tail: e.stderr_tail,
                exit_code: None,
            };
            return Judgement {
                failure: Some(adapter.classify(&evidence)),
                ..Judgement::new(
                    RunState::Failed,
                    Some(format!(
                        "{error} — the worker kept retrying ({} failed attempts); Pitroom stopped it so the failure surfaces now",
                        e.stream.retry_errors
                    )),
                )
            };
        }
        Ending::Exited(code) => code,
    };
    let exited = |judgement: Judgement| Judgement {
        worker_exit: Some(code),
        ..judgement
    };
    if e.read_only_violation {
        return exited(Judgement::new(
            RunState::Failed,
            Some(format!(
                "READ-ONLY VIOLATION: the worker changed {} file(s) in its read-only copy; your tree is untouched",
                e.changed_files
            )),
        ));
    }
    let mut verdict = None;
    if e.spec.review_of.is_some() {
        if let Some(answer) = e.answer {
            // A review that ends without a verdict did not happen: never report it passed.
            verdict = crate::verdict::parse(answer);
            if verdict.is_none() {
                return exited(Judgement::new(
                    RunState::Failed,
                    Some(format!(
                        "the reviewer answered without a verdict line ({VERDICT_FORMAT}); the review did not happen: run it again, or with another reviewer (-W)"
                    )),
                ));
            }
        }
    }
    if e.answer.is_some() {
        let warning = (code != 0 || !errors.is_empty()).then(|| {
            format!(
                "the worker exited with code {code}{} but gave an answer",
                errors
                    .first()
                    .map(|e| format!(" after an error ({e})"))
                    .unwrap_or_default()
            )
        });
        return exited(Judgement {
            verdict,
            warning,
            ..Judgement::new(RunState::Done, None)
        });
    }
    let evidence = FailureEvidence {
        events: &e.stream.events_of_interest,
        stderr_tail: e.stderr_tail,
        exit_code: Some(code),
    };
    let (error, failure) = if let Some(first) = errors.last() {
        (first.to_string(), Some(adapter.classify(&evidence)))
    } else if code != 0 {
        let last_line = e
            .stderr_tail
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("no output");
        (
            format!("the worker exited with code {code}: {}", last_line.trim()),
            Some(adapter.classify(&evidence)),
        )
    } else if e.stream.tally.denied_calls > 0 {
        (
            "the worker ended without an answer after a permission was denied".into(),
            None,
        )
    } else if e.stream.lines == 0 {
        ("the worker printed no events and no answer".into(), None)
    } else {
        ("the worker ended without an answer".into(), None)
    };
    exited(Judgement {
        failure,
        ..Judgement::new(RunState::Failed, Some(error))
    })
}

/// The last `max` bytes of a file, as text.
fn tail(path: &Path, max: u64) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = File::open(path) else {
        return String::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = f.seek(SeekFrom::Start(len.saturating_sub(max)));
    let mut buf = Vec::new();
    let _ = f.read_to_end(&mut buf);
    String::from_utf8_lossy(&buf).into_owned()
}
