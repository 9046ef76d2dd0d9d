//! The life cycle of one run (docs/architecture.md). This file reads in the order a run lives; each
//! stage has its own file:
//!
//! 1. prepare ([`Engine::prepare`], here): refuse early, create the record, take the writer
//!    lock and a place in the queue; `queue.rs` hands both to a background supervisor.
//! 2. resolve the fallback chain (`fallback.rs`): the chosen target, then `--fallback`.
//! 3. wait for a slot (`queue.rs`).
//! 4. prepare the tree (`tree.rs`): for a read run the live tree in place where the kernel
//!    allows it, else a read copy; an isolated copy; or the user's tree; and the "before"
//!    snapshot (none in place).
//! 5. launch (`launch.rs`): invocation, prompt, environment and sandbox, under the keeper.
//! 6. stream (`stream.rs`): the worker's events to disk and into a tally, until it ends (or
//!    reaches a budget cap: `spend.rs` counts the run's spend and the others' its caps span).
//! 7. judge / fall back (`judge.rs`, `fallback.rs`): an attempt that failed in a way the next
//!    target may fix hands over to it; 5 to 7 repeat down the chain.
//! 8. citations (`paths.rs`), then the "after" snapshot and diff (`changes.rs`).
//! 9. judge the run (`judge.rs`), then `--verify` (`verify.rs`).
//! 10. finish (`finish.rs`): redaction, the receipt, the last attempt, the record written.
//!
//! The report is the caller's, rendered from the record (`crate::report`); so is the ledger row
//! (`pitroom-service`). `models.rs` lists a CLI's models, outside any run.

mod changes;
mod confidential;
mod fallback;
mod finish;
mod hold;
mod interrupt;
mod judge;
mod launch;
mod models;
mod paths;
mod queue;
mod repair;
mod spend;
mod stream;
#[cfg(test)]
mod tests;
mod tree;
mod verify;

use std::path::{Path, PathBuf};
use std::time::Instant;

use pitroom_git::Repo;
use pitroom_workers::{adapter_for, Adapter, Mode};

use crate::exit::Exit;
use crate::home::{Home, HomeError, WriterLock};
use crate::record::{RunPhase, RunRecord, RunSpec, RunState};
use crate::slots::Ticket;
use interrupt::Interrupt;
use launch::AttemptCtx;

/// Why a run could not start. Each maps to an exit code and says what to do.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// Refused or a setup problem (exit 3).
    #[error("{0}")]
    Refused(String),
    /// The request itself is wrong (exit 2).
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Home(#[from] HomeError),
    #[error("git: {0}")]
    Git(#[from] pitroom_git::GitError),
    /// Pitroom's own state could not be written (a full disk, an unwritable state dir): the
    /// path, the error, the free space and what to do, in one line.
    #[error("{0}")]
    Storage(String),
    /// A stop or the run's deadline cut a step short (`run/interrupt.rs`); the run ends `stopped`
    /// or `timeout`, never `failed`.
    #[error("interrupted")]
    Interrupted,
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

impl EngineError {
    /// How a command that met this error ends: a wrong request is a usage error, anything else
    /// a refusal or a set-up problem.
    pub fn exit(&self) -> Exit {
        match self {
            EngineError::Usage(_) => Exit::Usage,
            EngineError::Home(e) => e.exit(),
            _ => Exit::Refused,
        }
    }
}

fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> EngineError {
    let context = context.into();
    move |source| EngineError::Io { context, source }
}

/// Receives progress while a run goes on (the TTY progress line).
pub trait Observer {
    fn progress(&mut self, record: &RunRecord);
}

/// An observer that ignores everything (background supervisors).
pub struct Silent;
impl Observer for Silent {
    fn progress(&mut self, _: &RunRecord) {}
}

/// A run that has a record and its place in the queue and, for write runs, holds its
/// repository's writer lock.
pub struct Prepared {
    pub record: RunRecord,
    pub lock: Option<WriterLock>,
    /// Its place in the slot queue, taken when the run was created (so a crew's runs queue in
    /// the order they were given). `None` makes the supervisor queue on its own.
    pub ticket: Option<Ticket>,
    /// The repository found when the run was prepared, so the foreground run asks git once;
    /// `None` makes the tree's preparation look for it again (a background supervisor).
    pub repo: Option<Repo>,
}

/// What [`Engine::check`] found, for [`Engine::create`]: the repository's top directory, when
/// the run's directory is in one.
#[derive(Debug, Clone)]
pub struct Checked {
    repo: Option<Repo>,
}

/// Refuses an empty task, with what to do instead. The service asks this before it resolves a
/// request (a plan step's task comes from the plan), and every run is checked again as it is
/// created.
pub fn check_task(task: &str) -> Result<(), EngineError> {
    if task.trim().is_empty() {
        return Err(EngineError::Usage(
            "the task is empty; give it as an argument, with --task-file, or as - to read stdin"
                .into(),
        ));
    }
    Ok(())
}

/// Refuses a run with a budget in dollars when a target it may use has no known price: its
/// spend could not be counted, and unknown cost is never $0.
fn check_prices(spec: &RunSpec) -> Result<(), EngineError> {
    if !spec.budget.counts_dollars() {
        return Ok(());
    }
    let prices = spec.worker_prices.clone().unwrap_or_default();
    let missing = crate::budget::unpriced_targets(&fallback::fallback_chain(spec), &prices);
    if missing.is_empty() {
        return Ok(());
    }
    Err(EngineError::Refused(format!(
        "a budget in dollars needs a price for every target the run may use, and {} no price (unknown cost is never $0); add to your config file (pitroom config shows where it is), with your provider's prices:\n  {}",
        if missing.len() == 1 { "one has" } else { "some have" },
        missing.join("\n  ")
    )))
}

/// The file `pitroom stop` leaves in a run's directory: a stop that races the run's start (before
/// its supervisor can take a signal) is not lost.
pub const STOP_REQUESTED: &str = "stop-requested";

/// The environment variable that chooses a read run's view: `copy` keeps a read-only copy even
/// where the kernel allows reading the live tree in place; anything else (or unset) lets
/// Pitroom choose (docs/configuration.md).
pub const READ_VIEW_ENV: &str = pitroom_env::PITROOM_READ_VIEW;

/// The environment variable that turns layer 3 (Landlock) off when set to `off`.
pub const LANDLOCK_ENV: &str = pitroom_env::PITROOM_LANDLOCK;

/// The internal subcommand that runs a background supervisor.
pub const SUPERVISE_SUBCOMMAND: &str = "__supervise";

/// The run engine, bound to a state directory and the caller's environment.
pub struct Engine {
    pub home: Home,
    pub env: Vec<(String, String)>,
    /// This executable, started again as the keeper and the background supervisor.
    pub exe: PathBuf,
}

impl Engine {
    fn env_var(&self, name: &str) -> Option<String> {
        self.env
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    }

    /// The adapter for `backend` as the run knows it ([`RunSpec::adapter_of`]), or why none.
    fn adapter_for_spec(
        &self,
        spec: &RunSpec,
        backend: &str,
    ) -> Result<Box<dyn Adapter>, EngineError> {
        spec.adapter_of(backend)
            .map_or_else(|| self.adapter(backend), Ok)
    }

    fn adapter(&self, backend: &str) -> Result<Box<dyn Adapter>, EngineError> {
        adapter_for(backend).ok_or_else(|| {
            EngineError::Refused(format!(
                "worker `{backend}` is not supported yet; use -W opencode"
            ))
        })
    }

    /// Checks the request, creates the run's record (state `queued`) and takes the writer lock.
    pub fn prepare(&self, spec: RunSpec) -> Result<Prepared, EngineError> {
        let checked = self.check(&spec)?;
        self.create(spec, &checked)
    }

    /// Everything `prepare` checks that does not depend on the task — the caller's environment,
    /// the worker and its CLI, the directory and its repository — done once for a crew whose
    /// runs differ only in their tasks ([`Engine::create`] then makes each run).
    pub fn check(&self, spec: &RunSpec) -> Result<Checked, EngineError> {
        if self.env_var(pitroom_env::PITROOM_ACTIVE).as_deref() == Some("1") {
            return Err(EngineError::Refused(
                "refusing to delegate from inside a Pitroom worker (PITROOM_ACTIVE=1)".into(),
            ));
        }
        // The variable can be unset; the process tree a worker runs in cannot be left.
        if let Some(holder) = pitroom_proc::worker_tree_holder() {
            return Err(EngineError::Refused(format!(
                "refusing to delegate from inside a Pitroom worker (process {holder} holds this worker's tree)"
            )));
        }
        if let Some(group) = &spec.group {
            crate::home::check_group_name(group).map_err(EngineError::Usage)?;
        }
        let adapter = self.adapter_for_spec(spec, &spec.backend)?;
        if spec.parent.is_some() && !adapter.can_resume() {
            return Err(EngineError::Refused(format!(
                "{} cannot resume a session, so --continue is unavailable",
                spec.backend
            )));
        }
        if !spec.dir.is_dir() {
            return Err(EngineError::Usage(format!(
                "{} is not a directory; pass an existing one with -d",
                spec.dir.display()
            )));
        }
        check_prices(spec)?;
        // Fail now, not in the background, when the CLI is missing.
        self.probe_invocation(adapter.as_ref(), spec)?;
        let repo = Repo::discover(&spec.dir)?;
        if repo.is_none() && spec.mode == Mode::Isolate {
            return Err(EngineError::Refused(format!(
                "{} is not in a git repository; isolate mode copies a repository's current state. Use -w --allow-non-git to edit in place",
                spec.dir.display()
            )));
        }
        if repo.is_none() && spec.mode == Mode::Write && !spec.allow_non_git {
            return Err(EngineError::Refused(format!(
                "{} is not in a git repository, so a write run could not be reverted; pass --allow-non-git to edit it anyway",
                spec.dir.display()
            )));
        }
        Ok(Checked { repo })
    }

    /// Creates a run of `spec`, checked with [`Engine::check`] (for the same worker, mode and
    /// directory): its task checked, the writer lock taken, its record written (state
    /// `queued`), its group joined and its place in the queue taken.
    pub fn create(&self, spec: RunSpec, checked: &Checked) -> Result<Prepared, EngineError> {
        check_task(&spec.task)?;
        let lock = match (&checked.repo, spec.mode) {
            (Some(repo), Mode::Write) => Some(
                WriterLock::try_acquire(&self.home, &repo.toplevel)
                    .map_err(io("taking the repository's writer lock"))?
                    .ok_or_else(|| {
                        EngineError::Refused(format!(
                            "another write run is active in {}; wait for it (pitroom ls --running), or use a read run",
                            repo.toplevel.display()
                        ))
                    })?,
            ),
            _ => None,
        };
        let id = self.home.create_run_dir()?;
        // Kept for the hint that re-runs the task (apply conflicts, timeouts).
        let task_file = self.home.run_dir(&id).join("task.md");
        if let Err(e) = std::fs::write(&task_file, &spec.task) {
            tracing::warn!("could not keep the task in {}: {e}", task_file.display());
        }
        // A stamp on the record: the stamping clock (the deadline and durations use `Instant`).
        let mut record = RunRecord::new(id, spec, crate::clock::now());
        record.repo = checked.repo.as_ref().map(|r| r.toplevel.clone());
        if record.repo.is_none() {
            record.warnings.push(match record.spec.mode {
                Mode::Read => "not a git repository: the worker reads the directory in place, and Pitroom cannot prove it changed nothing".into(),
                _ => "not a git repository: no patch is recorded and `pitroom revert` is unavailable".into(),
            });
        }
        self.save(&record)?;
        if let Some(group) = &record.spec.group {
            self.home.join_group(group, &record.id)?;
        }
        let ticket = self
            .slots(&record.spec)
            .enqueue(&record.id)
            .map_err(io("joining the worker queue"))?;
        Ok(Prepared {
            record,
            lock,
            ticket: Some(ticket),
            repo: checked.repo.clone(),
        })
    }

    /// Writes the record with the run's progress; the error is the file system's, for
    /// [`crate::home::storage_problem`].
    fn save_progress(&self, record: &RunRecord) -> std::io::Result<()> {
        record.write(&self.home.record_path(&record.id))
    }

    fn save(&self, record: &RunRecord) -> Result<(), EngineError> {
        self.save_progress(record).map_err(|e| {
            EngineError::Storage(crate::home::storage_problem(
                &self.home.record_path(&record.id),
                &e,
            ))
        })
    }

    /// Carries a prepared run out to the end and returns its final record.
    pub fn execute(&self, prepared: Prepared, observer: &mut dyn Observer) -> RunRecord {
        let Prepared {
            mut record,
            lock,
            ticket,
            repo,
        } = prepared;
        let run_dir = self.home.run_dir(&record.id);
        // What a best-effort step of this run could not do is told in its own log.
        crate::log::attach_run(&run_dir);
        let mut interrupt = Interrupt::install();
        let outcome = self.execute_inner(
            &mut record,
            &run_dir,
            ticket,
            repo,
            &mut interrupt,
            observer,
        );
        if let Err(e) = outcome {
            match interrupt.caused(&e) {
                Some(cause) => interrupt::end_interrupted(&mut record, cause),
                None => {
                    record.state = RunState::Failed;
                    record.error = Some(e.to_string());
                }
            }
        }
        self.close(&mut record, &run_dir);
        drop(lock);
        record
    }

    /// Moves the run into `phase` and publishes it (watchers, and the record of where a stop
    /// landed).
    fn enter(&self, record: &mut RunRecord, phase: RunPhase) -> Result<(), EngineError> {
        tracing::debug!("run {}: {phase:?}", record.id);
        record.phase = Some(phase);
        if record.state.is_active() {
            return self.save(record);
        }
        // Judged (before --verify) but not finished: to watchers and `pitroom stop` the run
        // still runs until its record is closed.
        let mut running = record.clone();
        running.state = RunState::Running;
        self.save(&running)
    }

    /// The run from its start to its judgement: every stage of the life cycle, in order. An
    /// error here fails the run (or, when a stop or the deadline caused it, ends it `stopped` or
    /// `timeout`); `execute` still closes and saves its record.
    fn execute_inner(
        &self,
        record: &mut RunRecord,
        run_dir: &Path,
        ticket: Option<Ticket>,
        repo: Option<Repo>,
        interrupt: &mut Interrupt,
        observer: &mut dyn Observer,
    ) -> Result<(), EngineError> {
        // The chain depends on the spec alone; the attempts below walk it.
        let chain = fallback::fallback_chain(&record.spec);
        // Orphans of the worker tree come back to us if the keeper itself dies.
        // (Linux; macOS has no subreaper, and the keeper hunts the worker's session instead.)
        pitroom_proc::become_subreaper();
        let pid = std::process::id();
        record.pid = Some(pid);
        record.pid_start = pitroom_proc::process_start_time(pid as i32);
        record.phase = Some(RunPhase::Queued);
        self.save(record)?;
        // A `pitroom stop` that raced the start left a note instead of a signal.
        interrupt.take_stop_note(run_dir);
        // Wait out a rate limit that every target of the chain is under, without a slot.
        let targets: Vec<String> = chain.iter().map(ToString::to_string).collect();
        self.hold_while_cooling(record, &targets, interrupt.stop_flag(), observer)?;
        // Wait for a slot.
        let Some(slot) = self.wait_for_slot(record, ticket, interrupt.stop_flag())? else {
            return Err(EngineError::Interrupted);
        };
        // A crew's or the day's budget that is spent already: the worker never starts.
        if let Some(reached) = spend::budget_spent_before_start(self, record) {
            record.state = RunState::OverBudget;
            record.error = Some(format!("over budget: {reached}; the worker never started"));
            return Ok(());
        }
        // The timeout counts from here: tree, worker, finishing and --verify alike.
        interrupt.start_deadline(record.spec.timeout);
        record.state = RunState::Running;
        record.started_at = Some(crate::clock::now());
        self.enter(record, RunPhase::Tree)?;
        let started = Instant::now();

        // Prepare the tree.
        let parent = match &record.spec.parent {
            Some(id) => Some(self.home.load(id)?),
            None => None,
        };
        let tree = self.prepare_tree(record, run_dir, parent.as_ref(), repo)?;
        if record.spec.mode.may_edit() {
            let reachable = crate::secrets::secret_files_in(&tree.workdir);
            if !reachable.is_empty() {
                record.warnings.push(format!(
                    "secret-looking files within the worker's reach: {} (their values are redacted from everything Pitroom stores or shows)",
                    reachable.join(", ")
                ));
            }
        }
        interrupt.check()?;
        self.enter(record, RunPhase::Worker)?;

        // Launch, stream and judge one attempt per target, falling back down the chain.
        // The session to continue, and what it had used by then (a CLI that reports a resumed
        // session's total counts that usage again).
        let parent_session = parent.as_ref().and_then(|p| {
            let used = p.session_usage.unwrap_or(p.tally.usage);
            p.session.clone().map(|session| (session, used))
        });
        let mut ctx = AttemptCtx {
            run_dir,
            tree: &tree,
            interrupt,
            observer: &mut *observer,
        };
        let mut last = self.run_chain(record, &mut ctx, &chain, parent_session)?;
        // Worker time ends before the slot is freed: a queued run that starts now must never
        // seem to overlap this one.
        self.end_worker_time(record, started, &last, interrupt);
        // A run that may send a failed check back to its worker keeps the worker's slot until
        // its last round; any other run frees it for the next queued run now, while it is
        // judged and verified.
        let held_slot = if record.spec.attempts > 1 && record.spec.verify.is_some() {
            Some(slot)
        } else {
            drop(slot);
            None
        };
        if last.adapter.resumed_usage_is_cumulative() && last.index == 0 {
            stream::own_usage_of_follow_up(record, &mut last.stream, parent.as_ref());
        }
        record.tally = last.stream.tally.clone();
        let finished = self.finish_and_verify(record, run_dir, &tree, &last, interrupt);
        interrupt::unless_interrupted(record, interrupt, finished)?;
        while repair::repair_due(record, &last) {
            let mut ctx = AttemptCtx {
                run_dir,
                tree: &tree,
                interrupt,
                observer: &mut *observer,
            };
            last = self.repair_round(record, &mut ctx, last)?;
            self.end_worker_time(record, started, &last, interrupt);
            record.tally = last.stream.tally.clone();
            let finished = self.finish_and_verify(record, run_dir, &tree, &last, interrupt);
            interrupt::unless_interrupted(record, interrupt, finished)?;
        }
        drop(held_slot);
        // Finish: redaction and the receipt (a run stopped while finishing too: its logs are
        // redacted all the same), then the attempt the run was judged by.
        finish::seal(record, run_dir, &last.stream);
        self.note_last_attempt(record, &last);
        Ok(())
    }

    /// Notes when the worker's time ended and whether a stop cut it short.
    fn end_worker_time(
        &self,
        record: &mut RunRecord,
        started: Instant,
        last: &fallback::LastAttempt,
        interrupt: &mut Interrupt,
    ) {
        record.duration = Some(crate::record::whole_millis(started.elapsed()));
        record.ended_at = Some(crate::clock::now());
        if matches!(
            last.ending,
            stream::Ending::Stopped | stream::Ending::TimedOut | stream::Ending::OverBudget
        ) {
            // What the stopped worker did is still recorded, unless the run is stopped again.
            record.interrupted_in = Some(RunPhase::Worker);
            interrupt.acted_on();
        }
    }

    /// What follows the worker: its citations, changes and verdict, then `--verify` for a run
    /// judged done.
    fn finish_and_verify(
        &self,
        record: &mut RunRecord,
        run_dir: &Path,
        tree: &tree::TreeSetup,
        last: &fallback::LastAttempt,
        interrupt: &Interrupt,
    ) -> Result<(), EngineError> {
        let stream = &last.stream;
        self.enter(record, RunPhase::Finishing)?;
        // Citations, checked before the "after" snapshot: a read copy the worker wrote into is
        // removed by it.
        let cited = paths::take_answer(record, tree, stream);
        // Snapshot and diff.
        changes::capture_changes(record, run_dir, tree, stream)?;
        if let Some(answer) = &record.answer {
            std::fs::write(run_dir.join("answer.md"), answer).map_err(io("writing answer.md"))?;
        }
        // Judge, then verify what the judge called done.
        judge::judge_run(record, run_dir, last.adapter.as_ref(), stream, last.ending);
        // The answer's claims, against the worker's own diff (before --verify may change it).
        let claims = crate::claims::assess(record, &cited, &stream.calls, !last.handed_off);
        record.warnings.extend(claims.warnings());
        record.claims = claims;
        if record.state == RunState::Done && record.spec.verify.is_some() {
            interrupt.check()?;
            self.enter(record, RunPhase::Verify)?;
            self.run_verify(record, run_dir, tree, interrupt)?;
            if record.spec.mode.may_edit() {
                // The check ran the worker's code in the tree: what it changed is recorded too.
                let before = record.after_tree.clone();
                changes::capture_changes(record, run_dir, tree, stream)?;
                let note = "--verify changed the tree after the worker; those changes are in the patch too";
                if record.after_tree != before && !record.warnings.iter().any(|w| w == note) {
                    record.warnings.push(note.into());
                }
            }
        }
        Ok(())
    }
}
