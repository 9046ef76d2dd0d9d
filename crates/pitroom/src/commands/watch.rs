//! `pitroom watch`: follows runs live. For agents (`--json`), one JSON object per line, flushed
//! at once (PRODUCT.md §8); for people, a table redrawn in place, or one line per finished run.
//!
//! It sleeps on inotify: a supervisor publishes its record by renaming a new file into the run
//! directory (`IN_MOVED_TO`), and a run joining the group appends to the group's index
//! (`IN_MODIFY`), so a worker's new step reaches the output within milliseconds. A slow tick
//! still re-reads everything, which is also when a run whose supervisor died is settled.

use std::collections::{BTreeMap, HashSet};
use std::io::Write;
use std::os::fd::AsFd;
use std::path::Path;
use std::time::{Duration, Instant};

use nix::poll::{PollFd, PollFlags, PollTimeout};
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};
use pitroom_core::duration::parse_duration;
use pitroom_core::{exit, report, Home, RunRecord, RunState};
use serde_json::{json, Value};

use crate::cli::WatchArgs;
use crate::output;

/// The slow tick: settles runs whose supervisor died, even without any event.
const TICK: Duration = Duration::from_millis(500);

/// Which runs are watched.
enum Members {
    Group(String),
    Fixed(Vec<String>),
}

impl Members {
    fn ids(&self, home: &Home) -> Vec<String> {
        match self {
            Members::Group(g) => home.group_ids(g),
            Members::Fixed(ids) => ids.clone(),
        }
    }
}

/// What was last reported for one run.
#[derive(Debug, Clone, Default, PartialEq)]
struct Seen {
    state: Option<RunState>,
    steps: u32,
    tools: u32,
    attempts: usize,
}

#[derive(Clone, Copy, PartialEq)]
enum Style {
    Json,
    Brief,
    Table,
}

pub fn watch(args: WatchArgs) -> i32 {
    let limit = match args.timeout.as_deref().map(parse_duration).transpose() {
        Ok(l) => l,
        Err(why) => {
            output::error(format!("--timeout {why}"));
            return exit::USAGE;
        }
    };
    let home = super::home();
    let members = match members(&home, &args) {
        Ok(m) => m,
        Err(code) => return code,
    };
    let style = if args.json {
        Style::Json
    } else if args.brief || !std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        Style::Brief
    } else {
        Style::Table
    };
    let mut watcher = Watcher::new(&home, style);
    let deadline = limit.map(|l| Instant::now() + l);
    loop {
        let ids = members.ids(&home);
        let records = watcher.refresh(&home, &ids);
        if !records.is_empty() && records.iter().all(|r| !r.state.is_active()) {
            return watcher.finish(&records);
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            eprintln!(
                "pitroom: still running; call again: pitroom watch{}",
                again(&args)
            );
            return exit::STILL_RUNNING;
        }
        watcher.sleep(TICK);
    }
}

fn again(args: &WatchArgs) -> String {
    match &args.group {
        Some(g) => format!(" -g {g}"),
        None => args.runs.iter().map(|r| format!(" {r}")).collect(),
    }
}

/// The runs to follow: the given ones, a group, the latest run's group, or the active runs.
fn members(home: &Home, args: &WatchArgs) -> Result<Members, i32> {
    if let Some(g) = &args.group {
        return super::resolve_runs(home, &[], Some(g)).map(|_| Members::Group(g.clone()));
    }
    if !args.runs.is_empty() {
        return super::resolve_runs(home, &args.runs, None).map(Members::Fixed);
    }
    let latest = super::resolve_runs(home, &[], None)?;
    let latest_group = latest
        .first()
        .and_then(|id| home.load(id).ok())
        .and_then(|r| r.spec.group);
    if let Some(g) = latest_group {
        return Ok(Members::Group(g));
    }
    let active: Vec<String> = home
        .run_ids()
        .into_iter()
        .rev()
        .take(200)
        .filter(|id| home.load_settled(id).is_ok_and(|r| r.state.is_active()))
        .collect();
    Ok(Members::Fixed(if active.is_empty() {
        latest
    } else {
        active
    }))
}

struct Watcher {
    inotify: Option<Inotify>,
    watched: HashSet<String>,
    seen: BTreeMap<String, Seen>,
    style: Style,
    /// Lines of the table drawn last (to redraw it in place).
    drawn: usize,
}

impl Watcher {
    fn new(home: &Home, style: Style) -> Watcher {
        let inotify = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC).ok();
        if let Some(ino) = &inotify {
            let groups = home.groups();
            let _ = std::fs::create_dir_all(&groups);
            let _ = ino.add_watch(&groups, AddWatchFlags::IN_MODIFY);
        }
        Watcher {
            inotify,
            watched: HashSet::new(),
            seen: BTreeMap::new(),
            style,
            drawn: 0,
        }
    }

    /// Re-reads every member, reports what changed, and returns the records.
    fn refresh(&mut self, home: &Home, ids: &[String]) -> Vec<RunRecord> {
        for id in ids {
            self.watch_dir(id, &home.run_dir(id));
        }
        let records = super::load_runs(home, ids);
        let mut changed = false;
        for record in &records {
            let before = self.seen.get(&record.id).cloned().unwrap_or_default();
            let lines = events_for(record, &before);
            changed |= !lines.is_empty();
            for line in lines {
                self.emit(record, line);
            }
            self.seen.insert(record.id.clone(), seen_now(record));
        }
        if self.style == Style::Table && changed {
            self.draw(&records);
        }
        records
    }

    fn watch_dir(&mut self, id: &str, dir: &Path) {
        if self.watched.contains(id) {
            return;
        }
        if let Some(ino) = &self.inotify {
            if ino.add_watch(dir, AddWatchFlags::IN_MOVED_TO).is_ok() {
                self.watched.insert(id.to_string());
            }
        }
    }

    fn emit(&mut self, record: &RunRecord, event: Value) {
        match self.style {
            Style::Json => {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{event}");
                let _ = out.flush();
            }
            Style::Brief => {
                if !record.state.is_active() && event["event"] != "progress" {
                    println!("{}", report::brief(record));
                }
            }
            Style::Table => {}
        }
    }

    fn draw(&mut self, records: &[RunRecord]) {
        let mut out = std::io::stdout().lock();
        if self.drawn > 0 {
            // Up to the table's first line, then clear everything below.
            let _ = write!(out, "\x1b[{}F\x1b[J", self.drawn);
        }
        for r in records {
            let _ = writeln!(out, "{}", report::brief(r));
        }
        let _ = writeln!(out, "{}", super::wait::tally_line(records));
        let _ = out.flush();
        self.drawn = records.len() + 1;
    }

    /// The last line: `all-done` for agents, the tally for people.
    fn finish(&mut self, records: &[RunRecord]) -> i32 {
        let ok = records.iter().filter(|r| r.state == RunState::Done).count();
        match self.style {
            Style::Json => {
                let line = json!({"event": "all-done", "runs": records.len(), "ok": ok, "failed": records.len() - ok});
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{line}");
                let _ = out.flush();
            }
            Style::Brief => println!("{}", super::wait::tally_line(records)),
            Style::Table => {}
        }
        if ok == records.len() {
            exit::OK
        } else {
            exit::FAILED
        }
    }

    /// Sleeps until a record or the group's index changes, or `tick` passes.
    fn sleep(&self, tick: Duration) {
        let Some(ino) = &self.inotify else {
            std::thread::sleep(tick.min(Duration::from_millis(100)));
            return;
        };
        let ms = u16::try_from(tick.as_millis()).unwrap_or(u16::MAX);
        let mut fds = [PollFd::new(ino.as_fd(), PollFlags::POLLIN)];
        let _ = nix::poll::poll(&mut fds, PollTimeout::from(ms));
        while ino.read_events().is_ok_and(|e| !e.is_empty()) {}
    }
}

fn seen_now(record: &RunRecord) -> Seen {
    Seen {
        state: Some(record.state),
        steps: record.tally.steps,
        tools: record.tally.tool_calls,
        attempts: record.attempts.len(),
    }
}

/// The NDJSON events that take a watcher from `before` to `record` (PRODUCT.md §8).
fn events_for(record: &RunRecord, before: &Seen) -> Vec<Value> {
    let mut events = Vec::new();
    let id = &record.id;
    let task: String = record
        .spec
        .task
        .chars()
        .take(60)
        .collect::<String>()
        .replace('\n', " ");
    let mode = record.spec.mode.as_str();
    let first_sight = before.state.is_none();
    if first_sight && record.state.is_active() {
        events.push(json!({"event": "queued", "run": id, "mode": mode, "task": task}));
    }
    let was_waiting = matches!(before.state, None | Some(RunState::Queued));
    // A run first seen finished gets only its terminal line.
    let seen_running = !first_sight || record.state.is_active();
    if was_waiting && record.started_at.is_some() && seen_running {
        events.push(json!({"event": "started", "run": id, "mode": mode, "task": task}));
    }
    // Attempts that failed over to the next target, one line each.
    for attempt in record.attempts.iter().skip(before.attempts) {
        if attempt.fell_back {
            events.push(json!({
                "event": "fallback",
                "run": id,
                "failed": attempt.target,
                "reason": attempt.error.clone().unwrap_or_else(|| attempt.state.clone()),
            }));
        }
    }
    let progressed = record.tally.steps > before.steps || record.tally.tool_calls > before.tools;
    if record.state.is_active() && progressed {
        events.push(json!({
            "event": "progress",
            "run": id,
            "steps": record.tally.steps,
            "tools": record.tally.tool_calls,
            "last": record.last.clone().unwrap_or_default(),
        }));
    }
    if !record.state.is_active() && before.state.is_none_or(RunState::is_active) {
        events.push(terminal_event(record));
    }
    events
}

fn terminal_event(record: &RunRecord) -> Value {
    let mut event = json!({
        "event": record.state.as_str(),
        "run": record.id,
        "time": record.duration_ms.map(|ms| (ms as f64 / 100.0).round() / 10.0),
        "worker": record.worker_target(),
        "changes": record.changes.len(),
    });
    if let Some(summary) = record.answer.as_deref().and_then(report::summary_line) {
        event["summary"] = json!(summary);
    }
    if let Some(error) = &record.error {
        event["error"] = json!(error);
    }
    if let Some(refs) = &record.refs {
        event["refs"] = json!(format!("{}/{}", refs.verified, refs.total));
    }
    event
}

#[cfg(test)]
mod tests {
    use super::*;
    use pitroom_core::RunSpec;
    use pitroom_workers::Mode;

    fn record(state: RunState) -> RunRecord {
        let spec = RunSpec {
            task: "find the cookie reader".into(),
            mode: Mode::Read,
            backend: "opencode".into(),
            model: Some("fake/m".into()),
            effort: None,
            web: false,
            dir: "/tmp".into(),
            timeout_secs: 60.0,
            watchdog_secs: 60.0,
            background: true,
            allow_non_git: false,
            parent: None,
            primary: "sonnet".into(),
            price: None,
            group: Some("g".into()),
            link: vec![],
            verify: None,
            verify_timeout_secs: 60.0,
            fallback: vec![],
            custom_workers: Default::default(),
            sandbox_writable: vec![],
            max_parallel: 20,
        };
        let mut r = RunRecord::new("20261130-000000-000a".into(), spec, "t".into());
        r.state = state;
        r
    }

    fn names(events: &[Value]) -> Vec<&str> {
        events.iter().filter_map(|e| e["event"].as_str()).collect()
    }

    #[test]
    fn a_queued_run_is_announced_once_then_started_then_progress() {
        let mut r = record(RunState::Queued);
        let e = events_for(&r, &Seen::default());
        assert_eq!(names(&e), ["queued"]);
        let seen = seen_now(&r);
        r.state = RunState::Running;
        r.started_at = Some("now".into());
        assert_eq!(names(&events_for(&r, &seen)), ["started"]);
        let seen = seen_now(&r);
        assert!(events_for(&r, &seen).is_empty(), "nothing changed");
        r.tally.steps = 2;
        r.tally.tool_calls = 3;
        r.last = Some("read calc.py".into());
        let e = events_for(&r, &seen);
        assert_eq!(names(&e), ["progress"]);
        assert_eq!(e[0]["steps"], 2);
        assert_eq!(e[0]["tools"], 3);
        assert_eq!(e[0]["last"], "read calc.py");
    }

    #[test]
    fn a_run_already_finished_yields_only_its_terminal_line() {
        let mut r = record(RunState::Done);
        r.started_at = Some("then".into());
        r.duration_ms = Some(12_340);
        r.answer = Some("SUMMARY: found it\nDETAILS: a.rs:3".into());
        let e = events_for(&r, &Seen::default());
        assert_eq!(names(&e), ["done"]);
        assert_eq!(e[0]["time"], 12.3);
        assert_eq!(e[0]["summary"], "found it");
        assert_eq!(e[0]["changes"], 0);
        assert!(events_for(&r, &seen_now(&r)).is_empty(), "reported once");
    }

    #[test]
    fn a_failed_run_carries_its_error() {
        let mut r = record(RunState::Failed);
        r.error = Some("rate limited".into());
        let e = events_for(&r, &seen_now(&record(RunState::Running)));
        assert_eq!(names(&e), ["failed"]);
        assert_eq!(e[0]["error"], "rate limited");
    }
}
