//! Starting runs (one or a crew, foreground or background), the background supervisor, and
//! following them: status, wait, stop.

use std::time::{Duration, Instant};

use pitroom_core::exit::Exit;
use pitroom_core::home::WriterLock;
use pitroom_core::slots::Ticket;
use pitroom_core::{Home, Observer, Prepared, RunRecord, Silent};
use pitroom_workers::Mode;

use crate::events::{ChangeWait, TICK};
use crate::{RunRequest, Service, ServiceError};

/// Which runs an operation works on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selector {
    /// The latest run.
    Latest,
    /// These runs (resolved ids).
    Runs(Vec<String>),
    /// Every run of a group, including runs that join it later.
    Group(String),
}

impl Selector {
    /// The run ids as of now.
    pub fn ids(&self, home: &Home) -> Vec<String> {
        match self {
            Selector::Latest => home.resolve(None).map(|id| vec![id]).unwrap_or_default(),
            Selector::Runs(ids) => ids.clone(),
            Selector::Group(g) => home.group_ids(g),
        }
    }

    /// Whether the selection stands for one run (a report, not a table).
    pub fn is_single(&self) -> bool {
        match self {
            Selector::Latest => true,
            Selector::Runs(ids) => ids.len() <= 1,
            Selector::Group(_) => false,
        }
    }
}

/// What starting a crew did: the runs started, and the error that stopped it part-way (the
/// runs already started go on).
#[derive(Debug)]
pub struct CrewOutcome {
    pub group: String,
    pub started: Vec<RunRecord>,
    pub warnings: Vec<String>,
    pub error: Option<ServiceError>,
}

/// Where a wait ended.
#[derive(Debug, Clone)]
pub struct WaitOutcome {
    pub records: Vec<RunRecord>,
    /// The runs ended (all of them, or with `any` at least one) before the deadline.
    pub satisfied: bool,
}

impl WaitOutcome {
    pub fn active(&self) -> usize {
        self.records.iter().filter(|r| r.state.is_active()).count()
    }
}

/// How a set of runs ends: still running while any is active, ok when all are ok, else as the
/// first failure does.
pub fn set_exit(records: &[RunRecord]) -> Exit {
    if records.iter().any(|r| r.state.is_active()) {
        return Exit::StillRunning;
    }
    records
        .iter()
        .map(RunRecord::exit)
        .find(|&e| e != Exit::Ok)
        .unwrap_or(Exit::Ok)
}

impl Service {
    /// Resolves what a front end was given: run references (ids, prefixes, `last`), a group,
    /// or nothing (the latest run). Fails if a reference matches nothing or a group is empty.
    pub fn select(&self, runs: &[String], group: Option<&str>) -> Result<Selector, ServiceError> {
        let home = self.home();
        if let Some(group) = group {
            if home.group_ids(group).is_empty() {
                return Err(ServiceError::usage(format!(
                    "group {group} has no runs; start some with: pitroom crew -g {group} \"task\" …"
                )));
            }
            return Ok(Selector::Group(group.to_string()));
        }
        if runs.is_empty() {
            home.resolve(None)?;
            return Ok(Selector::Latest);
        }
        let mut ids = Vec::new();
        for given in runs {
            let id = home.resolve(Some(given))?;
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        Ok(Selector::Runs(ids))
    }

    /// The selected runs' settled records (and the problems of records that could not be read).
    pub fn status(&self, selector: &Selector) -> (Vec<RunRecord>, Vec<String>) {
        self.load_many(&selector.ids(self.home()))
    }

    /// Runs one request in this process to its end (the caller's observer sees progress) and
    /// writes its ledger row; returns the final record and the ledger's notes. Errors are the
    /// ones that keep a run from starting.
    pub fn run_foreground(
        &self,
        spec: pitroom_core::RunSpec,
        observer: &mut dyn Observer,
    ) -> Result<(RunRecord, Vec<String>), ServiceError> {
        let prepared = self.engine().prepare(spec)?;
        let mut record = self.engine().execute(prepared, observer);
        let notes = self.settle(&mut record);
        Ok((record, notes))
    }

    /// Creates a run and starts its detached supervisor; returns the queued record at once.
    /// The record's warnings are what a report would have shown.
    pub fn start_background(
        &self,
        mut spec: pitroom_core::RunSpec,
    ) -> Result<RunRecord, ServiceError> {
        spec.background = true;
        let prepared = self.engine().prepare(spec)?;
        Ok(self.engine().spawn_background(prepared)?)
    }

    /// Starts one background run per task, as one group, in the order given. A crew of several
    /// write runs is refused (one writer per tree). Stops at the first run that cannot start.
    pub fn start_crew(
        &self,
        template: &RunRequest,
        tasks: &[String],
        group: Option<&str>,
    ) -> Result<CrewOutcome, ServiceError> {
        if tasks.is_empty() {
            return Err(ServiceError::usage(
                "no tasks; give each as an argument, or --task-file with tasks separated by --- lines",
            ));
        }
        if template.mode == Some(Mode::Write) && tasks.len() > 1 {
            return Err(ServiceError::usage(format!(
                "a crew of {} write runs would edit one tree at once; use -i (each run edits its own copy) or a single task",
                tasks.len()
            )));
        }
        let group = group.map(str::to_string).unwrap_or_else(default_group_name);
        pitroom_core::home::check_group_name(&group).map_err(ServiceError::usage)?;
        let mut outcome = CrewOutcome {
            group: group.clone(),
            started: Vec::new(),
            warnings: Vec::new(),
            error: None,
        };
        // One pass for the crew: the config, the worker and its CLI, the directory and its
        // repository are resolved and checked once; each run differs only in its task.
        let request = RunRequest {
            task: tasks[0].clone(),
            background: true,
            continue_run: None,
            group: Some(group.clone()),
            ..template.clone()
        };
        let prepared = self.resolve(&request).and_then(|resolved| {
            outcome.warnings.extend(resolved.warnings);
            let mut spec = resolved.spec;
            spec.background = true;
            let checked = self.engine().check(&spec)?;
            Ok((spec, checked))
        });
        let (spec, checked) = match prepared {
            Ok(both) => both,
            Err(e) => {
                outcome.error = Some(e);
                return Ok(outcome);
            }
        };
        for task in tasks {
            let spec = pitroom_core::RunSpec {
                task: task.clone(),
                ..spec.clone()
            };
            let started = self
                .engine()
                .create(spec, &checked)
                .and_then(|prepared| self.engine().spawn_background(prepared))
                .map_err(ServiceError::from);
            match started {
                Ok(record) => {
                    outcome.warnings.extend(record.warnings.iter().cloned());
                    outcome.started.push(record);
                }
                Err(e) => {
                    outcome.error = Some(e);
                    break;
                }
            }
        }
        outcome.warnings.dedup();
        Ok(outcome)
    }

    /// The detached supervisor's work (`pitroom __supervise ID`): carries out a run prepared by
    /// a background start, with the writer lock and queue ticket it was handed.
    ///
    /// # Safety
    /// `lock_fd` and `ticket_fd` must be descriptors handed down for exactly this run.
    pub unsafe fn run_detached(
        &self,
        id: &str,
        lock_fd: Option<i32>,
        ticket_fd: Option<i32>,
    ) -> Result<RunRecord, ServiceError> {
        let record = self.home().load(id)?;
        // SAFETY: the caller promises the descriptors are this run's.
        let lock = lock_fd.map(|fd| unsafe { WriterLock::from_raw_fd(fd) });
        let ticket = ticket_fd.map(|fd| {
            let slots = self.engine().slots(&record.spec);
            // SAFETY: as above.
            unsafe { Ticket::from_raw_fd(fd, &slots, &record.id) }
        });
        let mut record = self.engine().execute(
            Prepared {
                record,
                lock,
                ticket,
                repo: None,
            },
            &mut Silent,
        );
        // A detached supervisor has no terminal (its stderr is /dev/null): its run log is where
        // the ledger's notes are read, so they go there and nowhere else.
        for note in self.settle(&mut record) {
            tracing::warn!("{note}");
        }
        if record.spec.notify {
            self.notify_ended(&record);
        }
        Ok(record)
    }

    /// Blocks until the selected runs have ended (with `any`: until one has), or the deadline
    /// passes. A group is re-read each time, so runs that join it later are waited for too.
    /// Sleeps on inotify, not on a timer.
    pub fn wait(&self, selector: &Selector, deadline: Instant, any: bool) -> WaitOutcome {
        let home = self.home();
        let mut waiter = ChangeWait::new(home);
        loop {
            let ids = selector.ids(home);
            waiter.follow(home, &ids);
            let (records, _) = self.load_many(&ids);
            let finished = records.iter().filter(|r| !r.state.is_active()).count();
            let satisfied = finished == records.len() || (any && finished > 0);
            if satisfied || Instant::now() >= deadline {
                return WaitOutcome { records, satisfied };
            }
            waiter.sleep(TICK.min(deadline.saturating_duration_since(Instant::now())));
        }
    }

    /// Stops the selected runs that are running or queued: each supervisor ends its worker's
    /// whole tree (or leaves the queue) and records `stopped`. Waits up to `settle` for them to
    /// say so; returns their records as they are then.
    pub fn stop(
        &self,
        selector: &Selector,
        settle: Duration,
    ) -> Result<Vec<RunRecord>, ServiceError> {
        let (records, _) = self.status(selector);
        let active: Vec<&RunRecord> = records.iter().filter(|r| r.state.is_active()).collect();
        if active.is_empty() {
            return Err(ServiceError::refused(
                match (selector, records.as_slice()) {
                    (Selector::Group(g), _) => format!("no run of group {g} is running or queued"),
                    (_, [one]) => format!(
                        "run {} is not running (it is {})",
                        one.id,
                        one.state.as_str()
                    ),
                    _ => "none of these runs is running or queued".into(),
                },
            ));
        }
        for record in &active {
            self.request_stop(record)?;
        }
        let ids: Vec<String> = active.iter().map(|r| r.id.clone()).collect();
        let outcome = self.wait(&Selector::Runs(ids), Instant::now() + settle, false);
        if !outcome.satisfied {
            let left: Vec<&str> = outcome
                .records
                .iter()
                .filter(|r| r.state.is_active())
                .map(|r| r.id.as_str())
                .collect();
            return Err(ServiceError::new(
                crate::ErrorKind::StillRunning,
                format!(
                    "asked to stop, but still running: {}; check again with: pitroom status {}",
                    left.join(" "),
                    left.join(" ")
                ),
            ));
        }
        Ok(outcome.records)
    }

    /// The note first: a supervisor that has not started yet finds it and stops at once; then
    /// SIGTERM to the exact process that started the run (never one that reused its pid).
    fn request_stop(&self, record: &RunRecord) -> Result<(), ServiceError> {
        let id = &record.id;
        let note = self.home().run_dir(id).join(pitroom_core::STOP_REQUESTED);
        std::fs::write(&note, b"stop\n")
            .map_err(|e| ServiceError::refused(format!("cannot ask run {id} to stop: {e}")))?;
        if let (Some(pid), Some(start)) = (record.pid, record.pid_start) {
            pitroom_proc::terminate_exact(pid as i32, start);
        }
        Ok(())
    }
}

/// A name each crew must have to itself: the wall clock, since under a fixed clock every
/// unnamed crew would join the same group.
fn default_group_name() -> String {
    format!("crew-{}", crate::wall_stamp())
}

/// Splits a task file on lines that are exactly `---` (surrounding blanks allowed).
pub fn split_tasks(text: &str) -> Vec<String> {
    let mut tasks = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        if line.trim() == "---" {
            tasks.push(std::mem::take(&mut current));
        } else {
            current.push_str(line);
            current.push('\n');
        }
    }
    tasks.push(current);
    tasks
        .into_iter()
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
        .collect()
}

impl Service {
    /// What `watch` follows when given nothing: the latest run's group, else the runs still
    /// active, else the latest run. Given runs or a group, those.
    pub fn select_to_follow(
        &self,
        runs: &[String],
        group: Option<&str>,
    ) -> Result<Selector, ServiceError> {
        if group.is_some() || !runs.is_empty() {
            return self.select(runs, group);
        }
        let home = self.home();
        let latest = home.resolve(None)?;
        if let Some(g) = home.load(&latest).ok().and_then(|r| r.spec.group) {
            return Ok(Selector::Group(g));
        }
        let active: Vec<String> = home
            .run_ids()
            .into_iter()
            .rev()
            .take(200)
            .filter(|id| home.load_settled(id).is_ok_and(|r| r.state.is_active()))
            .collect();
        Ok(Selector::Runs(if active.is_empty() {
            vec![latest]
        } else {
            active
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::split_tasks;

    #[test]
    fn task_files_split_on_dash_lines_only() {
        let text =
            "find the cookie reader\n---\nlist the --- flags\nin main.rs\n  ---  \n\n---\nlast one";
        assert_eq!(
            split_tasks(text),
            [
                "find the cookie reader",
                "list the --- flags\nin main.rs",
                "last one"
            ]
        );
    }

    #[test]
    fn a_file_without_separators_is_one_task() {
        assert_eq!(split_tasks("one\ntask\n"), ["one\ntask"]);
    }
}
