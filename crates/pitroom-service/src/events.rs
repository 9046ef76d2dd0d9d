//! The typed event stream `watch --json` prints, and the inotify-driven change
//! wait under it and under `wait`.
//!
//! A supervisor publishes its record by renaming a new file into the run directory
//! (`IN_MOVED_TO`), and a run joining a group appends to the group's index (`IN_MODIFY`), so a
//! worker's new step reaches a follower within milliseconds. A slow tick still re-reads
//! everything, which is also when a run whose supervisor died is settled.

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

use pitroom_core::fs_watch::{Interest, Watch};
use pitroom_core::{report, Home, RunRecord, RunState};
use serde::{Deserialize, Serialize};

use crate::runs::Selector;
use crate::Service;

/// The slow tick: settles runs whose supervisor died, even without any event.
pub const TICK: Duration = Duration::from_millis(500);

/// One line of `watch --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum WatchEvent {
    Queued {
        run: String,
        mode: String,
        task: String,
    },
    Started {
        run: String,
        mode: String,
        task: String,
    },
    Progress {
        run: String,
        steps: u32,
        tools: u32,
        last: String,
    },
    Fallback {
        run: String,
        failed: String,
        reason: String,
    },
    /// Every target of the run's chain is cooling down after a rate limit: the run waits until
    /// `until` (RFC 3339) before it starts.
    Held {
        run: String,
        until: String,
    },
    /// A failed `--verify` went back to the worker (`--attempts`): `round` is the one starting.
    Repair {
        run: String,
        round: u32,
        of: u32,
        check: String,
    },
    Done(Finished),
    Failed(Finished),
    Timeout(Finished),
    Stopped(Finished),
    /// Stopped at a budget cap: named as the run's state is.
    #[serde(rename = "over_budget")]
    OverBudget(Finished),
    AllDone {
        runs: usize,
        ok: usize,
        failed: usize,
    },
}

/// What a terminal event says of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finished {
    pub run: String,
    /// Seconds, to a tenth.
    pub time: Option<f64>,
    pub worker: String,
    pub changes: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// `verified/total`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refs: Option<String>,
}

impl WatchEvent {
    /// The run the event is about (`None` for `all-done`).
    pub fn run(&self) -> Option<&str> {
        match self {
            WatchEvent::Queued { run, .. }
            | WatchEvent::Started { run, .. }
            | WatchEvent::Progress { run, .. }
            | WatchEvent::Fallback { run, .. }
            | WatchEvent::Repair { run, .. }
            | WatchEvent::Held { run, .. } => Some(run),
            WatchEvent::Done(f)
            | WatchEvent::Failed(f)
            | WatchEvent::Timeout(f)
            | WatchEvent::Stopped(f)
            | WatchEvent::OverBudget(f) => Some(&f.run),
            WatchEvent::AllDone { .. } => None,
        }
    }

    /// Whether the event ends its run.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            WatchEvent::Done(_)
                | WatchEvent::Failed(_)
                | WatchEvent::Timeout(_)
                | WatchEvent::Stopped(_)
                | WatchEvent::OverBudget(_)
        )
    }
}

/// What was last reported for one run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Seen {
    state: Option<RunState>,
    steps: u32,
    tools: u32,
    attempts: usize,
    held: bool,
}

impl Seen {
    pub fn of(record: &RunRecord) -> Seen {
        Seen {
            state: Some(record.state),
            steps: record.tally.steps,
            tools: record.tally.tool_calls,
            attempts: record.attempts.len(),
            held: record.is_held(),
        }
    }
}

/// Whether the run is held for a rate limit to reset (it has not started yet).
/// The events that take a follower from `before` to `record`.
pub fn events_between(record: &RunRecord, before: &Seen) -> Vec<WatchEvent> {
    let mut events = Vec::new();
    let run = record.id.clone();
    let task: String = record
        .spec
        .task
        .chars()
        .take(60)
        .collect::<String>()
        .replace('\n', " ");
    let mode = record.spec.mode.as_str().to_string();
    let first_sight = before.state.is_none();
    if first_sight && record.state.is_active() {
        events.push(WatchEvent::Queued {
            run: run.clone(),
            mode: mode.clone(),
            task: task.clone(),
        });
    }
    let was_waiting = matches!(before.state, None | Some(RunState::Queued));
    // A run first seen finished gets only its terminal line.
    let seen_running = !first_sight || record.state.is_active();
    if was_waiting && record.started_at.is_some() && seen_running {
        events.push(WatchEvent::Started {
            run: run.clone(),
            mode,
            task,
        });
    }
    if record.is_held() && !before.held {
        events.push(WatchEvent::Held {
            run: run.clone(),
            until: record.held_until.map(|t| t.to_string()).unwrap_or_default(),
        });
    }
    // Attempts that failed over to the next target, one line each.
    for attempt in record.attempts.iter().skip(before.attempts) {
        if attempt.repaired {
            events.push(WatchEvent::Repair {
                run: run.clone(),
                round: attempt.round + 1,
                of: record.spec.attempts,
                check: attempt
                    .verify
                    .as_ref()
                    .map(|v| v.command.clone())
                    .unwrap_or_default(),
            });
        }
        if attempt.fell_back {
            events.push(WatchEvent::Fallback {
                run: run.clone(),
                failed: attempt.target.clone(),
                reason: attempt
                    .error
                    .clone()
                    .unwrap_or_else(|| attempt.state.to_string()),
            });
        }
    }
    let progressed = record.tally.steps > before.steps || record.tally.tool_calls > before.tools;
    if record.state.is_active() && progressed {
        events.push(WatchEvent::Progress {
            run,
            steps: record.tally.steps,
            tools: record.tally.tool_calls,
            last: record.last_step.clone().unwrap_or_default(),
        });
    }
    if !record.state.is_active() && before.state.is_none_or(RunState::is_active) {
        events.push(terminal_event(record));
    }
    events
}

/// The terminal event of a finished run.
pub fn terminal_event(record: &RunRecord) -> WatchEvent {
    let finished = Finished {
        run: record.id.clone(),
        time: record
            .duration_ms()
            .map(|ms| (ms as f64 / 100.0).round() / 10.0),
        worker: record.worker_target(),
        changes: record.changes.len(),
        summary: record
            .answer
            .as_deref()
            .and_then(report::summary_line)
            .map(str::to_string),
        error: record.error.clone(),
        refs: record
            .refs
            .as_ref()
            .map(|r| format!("{}/{}", r.verified, r.total)),
    };
    match record.state {
        RunState::Done => WatchEvent::Done(finished),
        RunState::Timeout => WatchEvent::Timeout(finished),
        RunState::Stopped => WatchEvent::Stopped(finished),
        RunState::OverBudget => WatchEvent::OverBudget(finished),
        _ => WatchEvent::Failed(finished),
    }
}

/// The `all-done` line of a set of finished runs.
pub fn all_done(records: &[RunRecord]) -> WatchEvent {
    let ok = records.iter().filter(|r| r.state == RunState::Done).count();
    WatchEvent::AllDone {
        runs: records.len(),
        ok,
        failed: records.len() - ok,
    }
}

/// Sleeps until a watched record or group index changes (or a tick passes). Without inotify it
/// falls back to short sleeps.
pub struct ChangeWait {
    /// Closed off the stream's path when it ends (`fs_watch::Watch`).
    inotify: Option<Watch>,
    watched: HashSet<String>,
}

impl ChangeWait {
    pub fn new(home: &Home) -> ChangeWait {
        let inotify = Watch::new().ok();
        if let Some(ino) = &inotify {
            let groups = home.groups();
            // Without the directory no group exists yet; a failed watch only costs latency.
            if std::fs::create_dir_all(&groups).is_ok() {
                let _ = ino.add(&groups, Interest::MODIFY);
            }
        }
        ChangeWait {
            inotify,
            watched: HashSet::new(),
        }
    }

    /// Watches the run directories of `ids` for published records.
    pub fn follow(&mut self, home: &Home, ids: &[String]) {
        let Some(ino) = &self.inotify else { return };
        for id in ids {
            if self.watched.contains(id) {
                continue;
            }
            if ino.add(&home.run_dir(id), Interest::MOVED_TO).is_ok() {
                self.watched.insert(id.clone());
            }
        }
    }

    /// Sleeps until something watched changes, or `limit` passes.
    pub fn sleep(&self, limit: Duration) {
        let Some(ino) = &self.inotify else {
            std::thread::sleep(limit.min(Duration::from_millis(100)));
            return;
        };
        // A failed wait only means an early re-read.
        let _ = ino.wait(limit);
        while ino.read().is_ok_and(|e| !e.is_empty()) {}
    }
}

/// What the stream yields: an event, or (between events) nothing new before the deadline.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    Event(WatchEvent),
    /// The deadline passed with runs still active.
    TimedOut,
}

/// Follows a set of runs: an iterator of typed events that ends after `all-done` (or once the
/// deadline passes). Runs that join a followed group later appear too.
pub struct EventStream<'a> {
    service: &'a Service,
    selector: Selector,
    deadline: Option<Instant>,
    waiter: ChangeWait,
    seen: BTreeMap<String, Seen>,
    pending: VecDeque<WatchEvent>,
    records: Vec<RunRecord>,
    ended: bool,
}

impl<'a> EventStream<'a> {
    /// The records as of the latest read (what a table shows).
    pub fn records(&self) -> &[RunRecord] {
        &self.records
    }

    fn refresh(&mut self) {
        let home = self.service.home();
        let ids = self.selector.ids(home);
        self.waiter.follow(home, &ids);
        let (records, _) = self.service.load_many(&ids);
        for record in &records {
            let before = self.seen.get(&record.id).cloned().unwrap_or_default();
            self.pending.extend(events_between(record, &before));
            self.seen.insert(record.id.clone(), Seen::of(record));
        }
        if !records.is_empty() && records.iter().all(|r| !r.state.is_active()) {
            self.pending.push_back(all_done(&records));
            self.ended = true;
        }
        self.records = records;
    }
}

impl Iterator for EventStream<'_> {
    type Item = Next;

    fn next(&mut self) -> Option<Next> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Some(Next::Event(event));
            }
            if self.ended {
                return None;
            }
            if self.deadline.is_some_and(|d| Instant::now() >= d) {
                self.ended = true;
                return Some(Next::TimedOut);
            }
            if !self.records.is_empty() || !self.seen.is_empty() {
                let left = self
                    .deadline
                    .map(|d| d.saturating_duration_since(Instant::now()))
                    .unwrap_or(TICK);
                self.waiter.sleep(TICK.min(left));
            }
            self.refresh();
        }
    }
}

impl Service {
    /// The events of the selected runs, from what they are now until all have ended (or the
    /// deadline passes: then the last item is [`Next::TimedOut`]).
    pub fn events(&self, selector: Selector, deadline: Option<Instant>) -> EventStream<'_> {
        EventStream {
            service: self,
            selector,
            deadline,
            waiter: ChangeWait::new(self.home()),
            seen: BTreeMap::new(),
            pending: VecDeque::new(),
            records: Vec::new(),
            ended: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pitroom_core::RunSpec;
    use pitroom_workers::Mode;

    fn record(state: RunState) -> RunRecord {
        let spec = RunSpec {
            model: Some("fake/m".into()),
            timeout: Duration::from_secs(60),
            background: true,
            group: Some("g".into()),
            verify_timeout: Duration::from_secs(60),
            ..RunSpec::new("find the cookie reader", Mode::Read, "opencode", "/tmp")
        };
        let mut r = RunRecord::new(
            "20261130-000000-000a".into(),
            spec,
            stamp("2026-11-30T00:00:00Z"),
        );
        r.state = state;
        r
    }

    fn stamp(text: &str) -> jiff::Timestamp {
        text.parse().expect("a test stamp")
    }

    fn json(events: &[WatchEvent]) -> Vec<String> {
        events
            .iter()
            .map(|e| serde_json::to_string(e).expect("events serialise"))
            .collect()
    }

    #[test]
    fn a_queued_run_is_announced_once_then_started_then_progress() {
        let mut r = record(RunState::Queued);
        assert_eq!(
            json(&events_between(&r, &Seen::default())),
            [
                r#"{"event":"queued","run":"20261130-000000-000a","mode":"read","task":"find the cookie reader"}"#
            ]
        );
        let seen = Seen::of(&r);
        r.state = RunState::Running;
        r.started_at = Some(stamp("2026-11-30T00:00:02Z"));
        assert_eq!(
            json(&events_between(&r, &seen)),
            [
                r#"{"event":"started","run":"20261130-000000-000a","mode":"read","task":"find the cookie reader"}"#
            ]
        );
        let seen = Seen::of(&r);
        assert!(events_between(&r, &seen).is_empty(), "nothing changed");
        r.tally.steps = 2;
        r.tally.tool_calls = 3;
        r.last_step = Some("read calc.py".into());
        assert_eq!(
            json(&events_between(&r, &seen)),
            [
                r#"{"event":"progress","run":"20261130-000000-000a","steps":2,"tools":3,"last":"read calc.py"}"#
            ]
        );
    }

    #[test]
    fn a_run_already_finished_yields_only_its_terminal_line() {
        let mut r = record(RunState::Done);
        r.started_at = Some(stamp("2026-11-29T23:00:00Z"));
        r.duration = Some(std::time::Duration::from_millis(12_340));
        r.answer = Some("SUMMARY: found it\nDETAILS: a.rs:3".into());
        let e = events_between(&r, &Seen::default());
        assert_eq!(
            json(&e),
            [
                r#"{"event":"done","run":"20261130-000000-000a","time":12.3,"worker":"opencode:fake/m","changes":0,"summary":"found it"}"#
            ]
        );
        assert!(
            events_between(&r, &Seen::of(&r)).is_empty(),
            "reported once"
        );
    }

    #[test]
    fn a_round_sent_back_to_the_worker_is_one_repair_event_naming_the_next_round() {
        let mut r = record(RunState::Running);
        r.started_at = Some(stamp("2026-11-30T00:00:02Z"));
        r.spec.attempts = 3;
        let seen = Seen::of(&r);
        r.attempts.push(pitroom_core::record::Attempt {
            target: "opencode:fake/m".into(),
            state: pitroom_core::record::AttemptState::Ended(RunState::Failed),
            round: 1,
            repaired: true,
            verify: Some(pitroom_core::record::VerifyOutcome {
                command: "cargo test".into(),
                exit_code: Some(101),
                ..Default::default()
            }),
            ..Default::default()
        });
        assert_eq!(
            json(&events_between(&r, &seen)),
            [
                r#"{"event":"repair","run":"20261130-000000-000a","round":2,"of":3,"check":"cargo test"}"#
            ]
        );
        assert!(
            events_between(&r, &Seen::of(&r)).is_empty(),
            "reported once"
        );
    }

    #[test]
    fn a_held_run_is_announced_once_with_its_stamp_as_the_record_writes_it() {
        let mut r = record(RunState::Queued);
        let seen = Seen::of(&r);
        r.phase = Some(pitroom_core::record::RunPhase::Held);
        r.held_until = Some(stamp("2026-11-30T14:05:00.25Z"));
        assert_eq!(
            json(&events_between(&r, &seen)),
            [r#"{"event":"held","run":"20261130-000000-000a","until":"2026-11-30T14:05:00.25Z"}"#]
        );
        assert!(
            events_between(&r, &Seen::of(&r)).is_empty(),
            "reported once"
        );
    }

    #[test]
    fn a_failed_run_carries_its_error() {
        let mut r = record(RunState::Failed);
        r.error = Some("rate limited".into());
        let e = events_between(&r, &Seen::of(&record(RunState::Running)));
        assert_eq!(
            json(&e),
            [
                r#"{"event":"failed","run":"20261130-000000-000a","time":null,"worker":"opencode:fake/m","changes":0,"error":"rate limited"}"#
            ]
        );
    }

    #[test]
    fn a_run_stopped_at_its_budget_ends_with_an_event_named_as_its_state() {
        let mut r = record(RunState::OverBudget);
        r.error = Some("over budget: used 1400 tokens of its 1000 cap".into());
        let e = events_between(&r, &Seen::of(&record(RunState::Running)));
        assert_eq!(
            json(&e),
            [
                r#"{"event":"over_budget","run":"20261130-000000-000a","time":null,"worker":"opencode:fake/m","changes":0,"error":"over budget: used 1400 tokens of its 1000 cap"}"#
            ]
        );
        assert!(e[0].is_terminal());
        assert_eq!(e[0].run(), Some("20261130-000000-000a"));
        let back: WatchEvent = serde_json::from_str(&json(&e)[0]).expect("parses");
        assert_eq!(back, e[0]);
    }

    #[test]
    fn all_done_counts_the_runs_that_did_not_finish_done_as_failed() {
        let runs = [
            record(RunState::Done),
            record(RunState::Stopped),
            record(RunState::Timeout),
            record(RunState::OverBudget),
        ];
        assert_eq!(
            serde_json::to_string(&all_done(&runs)).expect("serialises"),
            r#"{"event":"all-done","runs":4,"ok":1,"failed":3}"#
        );
    }

    #[test]
    fn events_read_back_as_the_same_typed_values() {
        let line =
            r#"{"event":"fallback","run":"r1","failed":"opencode:a/b","reason":"rate limited"}"#;
        let event: WatchEvent = serde_json::from_str(line).expect("parses");
        assert_eq!(event.run(), Some("r1"));
        assert!(!event.is_terminal());
        assert_eq!(serde_json::to_string(&event).expect("serialises"), line);
    }
}
