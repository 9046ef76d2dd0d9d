//! Stream: the worker's stdout, line by line, into `events.jsonl` (redacted) and into a
//! [`Stream`] of what was learned (tally, answer, tool log, watchdog state), until the worker
//! ends, is stopped, times out, stalls or runs out of retries. Its stderr is followed too: some
//! CLIs report their silent retries, or whole events, only there.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use pitroom_proc::{spawn_keeper, AfterLine, Bounds, Decision, KeeperSpec, Watcher};
use pitroom_workers::{Adapter, StreamParser, ToolOutcome, WorkerEvent};

use super::interrupt::{Cause, Interrupt};
use super::launch::{AttemptCtx, GRACE};
use super::paths::project_relative;
use super::spend::Meter;
use super::tree::TreeSetup;
use super::{io, Engine, EngineError, Observer, STOP_REQUESTED};
use crate::record::RunRecord;

/// How the worker's process ended, from the supervisor's point of view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ending {
    Exited(i32),
    Stopped,
    TimedOut,
    /// The watchdog saw no progress: OpenCode's endless loop on replies without a finish reason.
    Stalled,
    /// The CLI kept retrying a failing model call; the last error it reported.
    RetriesExhausted,
    /// The run reached a budget cap (`Stream::over_budget` says which).
    OverBudget,
}

/// Consecutive empty steps before the watchdog considers the worker looping.
const EMPTY_STEP_STREAK: u32 = 3;
/// Tool calls kept for a hand-off account.
const TOOL_LOG_MAX: usize = 40;
/// How often the record is rewritten with progress while a run goes on.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);
/// The run's event log: every line the worker printed, redacted.
const EVENTS_LOG: &str = "events.jsonl";

/// Appends one line to the event log, flushed so watchers see it at once.
fn log_line(file: &mut std::fs::File, line: &str) -> std::io::Result<()> {
    file.write_all(line.as_bytes())?;
    file.write_all(b"\n")?;
    file.flush()
}

impl Engine {
    /// Runs the keeper and streams the worker's events until it ends, is stopped, times out or
    /// stalls.
    pub(super) fn stream_attempt(
        &self,
        record: &mut RunRecord,
        ctx: &mut AttemptCtx<'_>,
        spec: &KeeperSpec,
        adapter: &dyn Adapter,
        stream: &mut Stream,
    ) -> Result<Ending, EngineError> {
        let run_dir = ctx.run_dir;
        let events_path = run_dir.join(EVENTS_LOG);
        // Appended to: a run that falls back keeps every attempt's events.
        let events_file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&events_path)
            .map_err(io("creating events.jsonl"))?;
        let mut keeper =
            spawn_keeper(&self.exe, spec).map_err(|e| EngineError::Refused(e.to_string()))?;
        let meter = Meter::for_attempt(record, stream);
        let mut follow = Follow {
            engine: self,
            watchdog: record.spec.watchdog,
            published: (record.tally.steps, record.tally.tool_calls),
            record,
            stop_file: run_dir.join(STOP_REQUESTED),
            adapter,
            interrupt: ctx.interrupt,
            stream,
            observer: &mut *ctx.observer,
            // One parser per attempt: each attempt is a fresh stream of the CLI.
            parser: adapter.parser(),
            events_file,
            events_path,
            stderr_tail: FileTail::new(run_dir.join("stderr.log")),
            last_saved: Instant::now(),
            dirty: false,
            requested: None,
            meter,
        };
        follow.meter.refresh(self, follow.record);
        follow.check_budget();
        let bounds = Bounds {
            exit_wait: GRACE + Duration::from_secs(5),
            drain: Duration::from_secs(2),
        };
        let driven = pitroom_proc::drive(&mut keeper, &mut follow, bounds);
        // What the CLI wrote to stderr after the last poll (Codex logs refused commands there).
        follow.poll_stderr();
        let requested = follow.requested;
        if let Some(problem) = stream.storage_error.take() {
            // Fails the run with the first write that failed; every later write would too.
            return Err(EngineError::Storage(format!(
                "{problem}. Pitroom stopped the worker; your tree is untouched"
            )));
        }
        Ok(requested.unwrap_or(Ending::Exited(driven.code)))
    }

    /// A redactor for this run: well-known key formats, plus the values of the secret-looking
    /// files at the top of the project and in the worker's directory.
    pub(super) fn redactor(&self, record: &RunRecord, tree: &TreeSetup) -> crate::redact::Redactor {
        let mut dirs: Vec<&Path> = vec![record.spec.dir.as_path(), tree.workdir.as_path()];
        if let Some(repo) = &tree.repo {
            dirs.push(repo.toplevel.as_path());
        }
        crate::redact::Redactor::for_dirs(&dirs)
    }
}

/// One attempt's follower of the worker: each stdout line into the event log and the
/// [`Stream`], progress into the record, and, between lines, whether the worker must stop.
struct Follow<'a> {
    engine: &'a Engine,
    record: &'a mut RunRecord,
    stop_file: PathBuf,
    adapter: &'a dyn Adapter,
    interrupt: &'a Interrupt,
    stream: &'a mut Stream,
    observer: &'a mut dyn Observer,
    parser: Box<dyn StreamParser>,
    events_file: File,
    events_path: PathBuf,
    stderr_tail: FileTail,
    watchdog: Duration,
    last_saved: Instant,
    /// The steps and tool calls last published.
    published: (u32, u32),
    /// The record has news not saved yet.
    dirty: bool,
    /// Why the supervisor ended the worker, when it did.
    requested: Option<Ending>,
    /// The run's spend against its budget.
    meter: Meter,
}

impl Follow<'_> {
    /// Counts the run's spend into its record and notes the cap it reached, if it did.
    fn check_budget(&mut self) -> bool {
        if self.record.spec.budget.is_unset() {
            return false;
        }
        let own = self.meter.own(self.record, &self.stream.tally);
        self.record.spend = Some(own);
        if self.stream.over_budget.is_none() {
            self.stream.over_budget = self.meter.reached(self.record, &own);
        }
        self.stream.over_budget.is_some()
    }

    /// Logs (redacted) and parses one line.
    fn take(&mut self, text: &str) {
        let logged = log_line(&mut self.events_file, &self.stream.redact(text));
        self.stream.note_storage(logged, &self.events_path);
        absorb_line(self.stream, self.parser.as_mut(), text, self.record);
    }

    fn save_progress(&mut self) {
        let saved = self.engine.save_progress(self.record);
        let path = self.engine.home.record_path(&self.record.id);
        self.stream.note_storage(saved, &path);
    }

    fn poll_stderr(&mut self) {
        let (stream, adapter, record) = (&mut *self.stream, self.adapter, &mut *self.record);
        self.stderr_tail
            .poll(|line| follow_stderr(stream, adapter, line, record));
    }

    /// Why the worker must end now, if it must.
    fn reason_to_end(&self) -> Option<Ending> {
        if let Some(cause) = self.interrupt.cause() {
            Some(match cause {
                Cause::Stopped => Ending::Stopped,
                Cause::TimedOut => Ending::TimedOut,
            })
        } else if self.stop_file.exists() {
            Some(Ending::Stopped)
        } else if self.stream.over_budget.is_some() {
            Some(Ending::OverBudget)
        } else if self.stream.stalled(self.watchdog) {
            Some(Ending::Stalled)
        } else if self.stream.retry_errors >= self.adapter.retry_cut() {
            // The adapter's cut: OpenCode alone retries a 429 for ~75 s.
            Some(Ending::RetriesExhausted)
        } else if self.stream.storage_error.is_some() {
            // The run cannot keep what the worker does: stop it (the error follows).
            Some(Ending::Stopped)
        } else {
            None
        }
    }
}

impl Watcher for Follow<'_> {
    fn line(&mut self, line: Vec<u8>) -> AfterLine {
        let text = String::from_utf8_lossy(&line);
        self.take(&text);
        let over_budget = self.check_budget();
        // Some CLIs report their silent retries on stdout (Codex's "Reconnecting…").
        if let Some(error) = self.adapter.retry_signal(&text) {
            self.stream.retry_errors += 1;
            self.stream.last_retry_error = Some(error);
        }
        // A new step or tool call is published at once (watchers follow the record);
        // anything else at most every PROGRESS_EVERY.
        let counters = (self.record.tally.steps, self.record.tally.tool_calls);
        self.dirty = true;
        if counters != self.published || self.last_saved.elapsed() >= PROGRESS_EVERY {
            self.save_progress();
            self.observer.progress(self.record);
            (self.published, self.dirty, self.last_saved) = (counters, false, Instant::now());
        }
        // A worker that prints without pause is stopped all the same.
        if self.interrupt.cause().is_none() && !over_budget {
            AfterLine::ReadOn
        } else {
            AfterLine::Check
        }
    }

    fn drained(&mut self, line: Vec<u8>) {
        self.take(&String::from_utf8_lossy(&line));
        // Counted, too late to stop anything: the spend on record is what the worker used.
        self.check_budget();
    }

    fn poll(&mut self) -> Decision {
        self.poll_stderr();
        self.meter.refresh(self.engine, self.record);
        self.check_budget();
        if let Some(ending) = self.reason_to_end() {
            self.requested = Some(ending);
            return Decision::Stop;
        }
        if self.last_saved.elapsed() >= PROGRESS_EVERY {
            if self.dirty {
                self.save_progress();
                self.dirty = false;
            }
            self.observer.progress(self.record);
            self.last_saved = Instant::now();
        }
        Decision::Continue
    }
}

/// What the supervisor learned from the event stream.
#[derive(Default)]
pub(super) struct Stream {
    pub(super) tally: crate::record::Tally,
    pub(super) texts: Vec<(Option<String>, String)>,
    pub(super) edited: Vec<String>,
    /// Errors and nothing else, for classification.
    pub(super) events_of_interest: Vec<WorkerEvent>,
    pub(super) lines: u64,
    pub(super) empty_streak: u32,
    pub(super) empty_steps_total: u32,
    pub(super) last_progress: Option<Instant>,
    /// Masks secrets in everything written or shown.
    pub(super) redactor: Option<crate::redact::Redactor>,
    /// Failed model calls the CLI reported retrying since the last progress.
    pub(super) retry_errors: u32,
    pub(super) last_retry_error: Option<String>,
    /// The latest tool calls, one line each, for a hand-off account.
    pub(super) tool_log: Vec<String>,
    /// Every tool call's name and input summary in project paths, for the claims check (which
    /// files the worker could have seen).
    pub(super) calls: Vec<crate::claims::ToolCallSeen>,
    /// Directory prefixes (with a trailing `/`, longest first) shown relative: the read copy's
    /// root and the project's, so a step reads `read calc.py`, not the copy's absolute path.
    pub(super) roots: Vec<String>,
    /// The first write of the run's state that failed (the event log, a progress record):
    /// the run cannot keep what the worker does, so it ends.
    pub(super) storage_error: Option<String>,
    /// The budget cap the run reached, as its report says it (`budget::reached`).
    pub(super) over_budget: Option<String>,
    /// What a resumed session had used before this attempt, for a CLI that reports the
    /// session's total (Codex): usage the budget must not count again (zero otherwise).
    pub(super) session_usage_before: pitroom_workers::Usage,
}

impl Stream {
    /// Keeps the first failed write of the run's state, in words that say what to do.
    pub(super) fn note_storage(&mut self, written: std::io::Result<()>, path: &Path) {
        if let (Err(e), None) = (written, &self.storage_error) {
            self.storage_error = Some(crate::home::storage_problem(path, &e));
        }
    }

    pub(super) fn redact(&self, text: &str) -> String {
        match &self.redactor {
            Some(r) => r.redact(text),
            None => text.to_string(),
        }
    }

    pub(super) fn absorb(&mut self, events: Vec<WorkerEvent>, record: &mut RunRecord) {
        self.lines += 1;
        // The clock for "no progress" starts with the first event.
        self.last_progress.get_or_insert_with(Instant::now);
        for event in events {
            // Progress is judged per step: text repeats inside the endless loop, so only a
            // step with a finish reason or a tool call counts.
            if event.is_empty_step() {
                self.empty_streak += 1;
                self.empty_steps_total += 1;
            } else if matches!(
                event,
                WorkerEvent::StepFinished { .. } | WorkerEvent::ToolCall { .. }
            ) {
                self.empty_streak = 0;
                self.retry_errors = 0;
                self.last_progress = Some(Instant::now());
            }
            match event {
                WorkerEvent::Session { id } => {
                    if record.session.is_none() {
                        record.session = Some(id);
                    }
                }
                WorkerEvent::Model { name } => record.reported_model = Some(name),
                WorkerEvent::StepStarted => {}
                WorkerEvent::StepFinished { usage, cost, .. } => {
                    self.tally.steps += 1;
                    if let Some(u) = usage {
                        self.tally.usage.add(&u);
                    }
                    if let Some(c) = cost {
                        *self.tally.cost.get_or_insert(0.0) += c;
                    }
                }
                WorkerEvent::ToolCall {
                    name,
                    summary,
                    outcome,
                    edited,
                    ..
                } => {
                    self.tally.tool_calls += 1;
                    match outcome {
                        ToolOutcome::Ok => {}
                        ToolOutcome::Failed => self.tally.failed_calls += 1,
                        ToolOutcome::Denied => self.tally.denied_calls += 1,
                    }
                    self.edited.extend(edited);
                    self.calls.push(seen_call(&name, &summary, &self.roots));
                    let line = project_relative(
                        &self.redact(&pitroom_workers::tool_line(&name, &summary, outcome)),
                        &self.roots,
                    );
                    if self.tool_log.len() == TOOL_LOG_MAX {
                        self.tool_log.remove(0);
                    }
                    self.tool_log.push(line.clone());
                    record.last_step = Some(line);
                }
                WorkerEvent::Text { message, text } => {
                    self.texts.push((message, text));
                }
                e @ WorkerEvent::Error { .. } => self.events_of_interest.push(e),
            }
        }
        record.tally = self.tally.clone();
    }

    /// The wait the provider asked for in the latest error, in seconds.
    pub(super) fn retry_after(&self) -> Option<u64> {
        self.events_of_interest.iter().rev().find_map(|e| match e {
            WorkerEvent::Error { retry_after, .. } => *retry_after,
            _ => None,
        })
    }

    /// Several empty steps in a row and nothing useful for `limit`: the endless loop.
    pub(super) fn stalled(&self, limit: Duration) -> bool {
        self.empty_streak >= EMPTY_STEP_STREAK
            && self.last_progress.is_some_and(|t| t.elapsed() >= limit)
    }

    /// The answer: the text of the last message that said anything (earlier narration dropped).
    pub(super) fn answer(&self) -> Option<String> {
        let (last_message, _) = self
            .texts
            .iter()
            .rev()
            .find(|(_, t)| !t.trim().is_empty())?;
        let parts: Vec<&str> = self
            .texts
            .iter()
            .filter(|(m, t)| m == last_message && !t.trim().is_empty())
            .map(|(_, t)| t.as_str())
            .collect();
        Some(parts.join("\n")).filter(|a| !a.trim().is_empty())
    }

    pub(super) fn errors(&self) -> impl Iterator<Item = &str> {
        self.events_of_interest.iter().filter_map(|e| match e {
            WorkerEvent::Error { message, .. } => Some(message.as_str()),
            _ => None,
        })
    }
}

/// A call as the claims check compares it: its input summary in project paths (the root
/// itself, named bare, is `.`), as a report's step line shows it.
fn seen_call(name: &str, summary: &str, roots: &[String]) -> crate::claims::ToolCallSeen {
    // Made relative as the step line `name summary` is, so a bare root becomes `.` too.
    let line = project_relative(&format!("{name} {summary}"), roots);
    let target = line.strip_prefix(name).unwrap_or(&line).trim_start();
    crate::claims::ToolCallSeen {
        name: name.to_string(),
        target: target.to_string(),
    }
}

/// Follows a file another process appends to (the worker's stderr.log), line by line.
pub(super) struct FileTail {
    path: PathBuf,
    offset: u64,
    partial: String,
}

impl FileTail {
    pub(super) fn new(path: PathBuf) -> FileTail {
        FileTail {
            path,
            offset: 0,
            partial: String::new(),
        }
    }

    /// Hands every complete line added since the last call to `each`.
    pub(super) fn poll(&mut self, mut each: impl FnMut(&str)) {
        use std::io::{Read, Seek, SeekFrom};
        let Ok(mut file) = File::open(&self.path) else {
            return;
        };
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        if len <= self.offset || file.seek(SeekFrom::Start(self.offset)).is_err() {
            return;
        }
        let mut fresh = Vec::new();
        if file
            .take(len - self.offset)
            .read_to_end(&mut fresh)
            .is_err()
        {
            return;
        }
        self.offset += fresh.len() as u64;
        self.partial.push_str(&String::from_utf8_lossy(&fresh));
        while let Some(end) = self.partial.find('\n') {
            let line: String = self.partial.drain(..=end).collect();
            each(line.trim_end());
        }
    }
}
/// A CLI that reports a resumed session's usage as the session's total (Codex after `exec
/// resume`): the record keeps that total as `session_usage`, and the run's own usage is the
/// total minus what the session had used before.
pub(super) fn own_usage_of_follow_up(
    record: &mut RunRecord,
    stream: &mut Stream,
    parent: Option<&RunRecord>,
) {
    let total = stream.tally.usage;
    if let Some(parent) = parent {
        let before = parent.session_usage.unwrap_or(parent.tally.usage);
        stream.tally.usage = usage_minus(total, before);
    }
    record.session_usage = Some(total);
}

/// `total` less `before`, count by count (never below zero: the counts are what a CLI said).
pub(super) fn usage_minus(
    total: pitroom_workers::Usage,
    before: pitroom_workers::Usage,
) -> pitroom_workers::Usage {
    pitroom_workers::Usage {
        input: total.input.saturating_sub(before.input),
        output: total.output.saturating_sub(before.output),
        reasoning: total.reasoning.saturating_sub(before.reasoning),
        cache_read: total.cache_read.saturating_sub(before.cache_read),
        cache_write: total.cache_write.saturating_sub(before.cache_write),
    }
}

/// One line of the worker's stderr: a retry the CLI is about to make silently, or events it
/// reports only there.
fn follow_stderr(stream: &mut Stream, adapter: &dyn Adapter, line: &str, record: &mut RunRecord) {
    if let Some(error) = adapter.retry_signal(line) {
        stream.retry_errors += 1;
        stream.last_retry_error = Some(error);
    }
    let events = adapter.stderr_events(line);
    if !events.is_empty() {
        stream.absorb(events, record);
    }
}

/// One stdout line of the worker: its events, and whether a tool result in it reads like a
/// write the sandbox refused (a denied write leaves no other trace).
fn absorb_line(
    stream: &mut Stream,
    parser: &mut dyn StreamParser,
    text: &str,
    record: &mut RunRecord,
) {
    let events = parser.parse_line(text);
    let is_tool_result = events
        .iter()
        .any(|e| matches!(e, WorkerEvent::ToolCall { .. }));
    if is_tool_result && pitroom_proc::looks_like_blocked_write(text) {
        record
            .safety
            .get_or_insert_with(Default::default)
            .blocked_writes += 1;
    }
    stream.absorb(events, record);
}
