//! The life cycle of one run (PRODUCT.md §4): prepare the tree, launch the worker through the
//! keeper, stream its events to disk, then judge it by its events *and* its tree.

use std::ffi::OsString;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use pitroom_git::Repo;
use pitroom_proc::{
    spawn_keeper, terminate_descendants, ContainmentReport, GitDirState, KeeperSpec, LandlockState,
    Mechanism, SandboxReport, SandboxSpec, TreeAccess,
};
use pitroom_workers::{
    adapter_for, Adapter, AdapterError, FailureEvidence, FailureKind, InvocationRequest, Mode,
    StateDirs, ToolOutcome, WorkerEvent,
};

use crate::cooldown::Cooldowns;
use crate::home::{Home, HomeError, WriterLock};
use crate::record::{Attempt, ChangedFile, RunRecord, RunSpec, RunState, Tally};
use crate::slots::{Slot, Slots, Ticket};
use crate::{prompt, receipt, report};

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
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

impl EngineError {
    pub fn exit_code(&self) -> i32 {
        match self {
            EngineError::Usage(_) => crate::exit::USAGE,
            EngineError::Home(
                HomeError::NoMatch(_) | HomeError::Ambiguous { .. } | HomeError::NoRuns,
            ) => crate::exit::USAGE,
            _ => crate::exit::REFUSED,
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
}

/// How the worker's process ended, from the supervisor's point of view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    Exited(i32),
    Stopped,
    TimedOut,
    /// The watchdog saw no progress: OpenCode's endless loop on replies without a finish reason.
    Stalled,
    /// The CLI kept retrying a failing model call; the last error it reported.
    RetriesExhausted,
}

/// Consecutive empty steps before the watchdog considers the worker looping.
const EMPTY_STEP_STREAK: u32 = 3;
/// How long descendants get between TERM and KILL.
const GRACE: Duration = Duration::from_secs(3);
/// Failed model calls a CLI may retry before Pitroom stops it (OpenCode retries a 429 for ~75 s).
const RETRY_CAP: u32 = 3;
/// Tool calls kept for a hand-off account.
const TOOL_LOG_MAX: usize = 40;
/// How often the record is rewritten with progress while a run goes on.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);

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

    /// The adapter for `backend`: a built-in one, else a CLI described in the config
    /// (`[workers.<name>]`, carried in the run's spec so a background supervisor has it too).
    fn adapter_in(&self, spec: &RunSpec, backend: &str) -> Result<Box<dyn Adapter>, EngineError> {
        if let Some(def) = spec.custom_workers.get(backend) {
            return Ok(Box::new(pitroom_workers::Custom {
                name: backend.to_string(),
                def: def.clone(),
            }));
        }
        self.adapter(backend)
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
        if self.env_var("PITROOM_ACTIVE").as_deref() == Some("1") {
            return Err(EngineError::Refused(
                "refusing to delegate from inside a Pitroom worker (PITROOM_ACTIVE=1)".into(),
            ));
        }
        if spec.task.trim().is_empty() {
            return Err(EngineError::Usage(
                "the task is empty; give it as an argument, with --task-file, or as - to read stdin".into(),
            ));
        }
        if let Some(group) = &spec.group {
            crate::home::check_group_name(group).map_err(EngineError::Usage)?;
        }
        let adapter = self.adapter_in(&spec, &spec.backend)?;
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
        // Fail now, not in the background, when the CLI is missing.
        self.probe_invocation(adapter.as_ref(), &spec)?;
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
        let lock = match (&repo, spec.mode) {
            (Some(r), Mode::Write) => Some(
                WriterLock::try_acquire(&self.home, &r.toplevel)
                    .map_err(io("taking the repository's writer lock"))?
                    .ok_or_else(|| {
                        EngineError::Refused(format!(
                            "another write run is active in {}; wait for it (pitroom ls --running), or use a read run",
                            r.toplevel.display()
                        ))
                    })?,
            ),
            _ => None,
        };
        let id = self.home.create_run_dir()?;
        // Kept for the hint that re-runs the task (apply conflicts, timeouts).
        let _ = std::fs::write(self.home.run_dir(&id).join("task.md"), &spec.task);
        let mut record = RunRecord::new(id, spec, jiff::Timestamp::now().to_string());
        record.repo = repo.map(|r| r.toplevel);
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
        })
    }

    fn probe_invocation(&self, adapter: &dyn Adapter, spec: &RunSpec) -> Result<(), EngineError> {
        let req = self.invocation_request(spec, &spec.dir, &self.home.root, None);
        match adapter.invocation(&req) {
            Ok(_) => Ok(()),
            // The first thing a newcomer without a worker CLI sees: say what to do next.
            Err(AdapterError::NotFound(e)) => Err(EngineError::Refused(
                e.first_steps(&|name| self.env_var(name)),
            )),
            Err(e) => Err(EngineError::Refused(e.to_string())),
        }
    }

    fn invocation_request(
        &self,
        spec: &RunSpec,
        workdir: &Path,
        scratch: &Path,
        session: Option<String>,
    ) -> InvocationRequest {
        InvocationRequest {
            mode: spec.mode,
            model: spec.model.clone(),
            effort: spec.effort.clone(),
            web: spec.web,
            workdir: workdir.to_path_buf(),
            dirs: StateDirs {
                shared: self.home.worker_state(&spec.backend),
                scratch: scratch.to_path_buf(),
            },
            resume_session: session,
            title: format!(
                "pitroom {}: {}",
                spec.mode.as_str(),
                spec.task
                    .chars()
                    .take(60)
                    .collect::<String>()
                    .replace('\n', " ")
            ),
            env: self.env.clone(),
        }
    }

    /// The scheduler's slots, as many as the run's `max_parallel`.
    pub fn slots(&self, spec: &RunSpec) -> Slots {
        Slots::new(&self.home.root, spec.max_parallel)
    }

    fn save(&self, record: &RunRecord) -> Result<(), EngineError> {
        record
            .write(&self.home.record_path(&record.id))
            .map_err(io("writing the run record"))
    }

    /// Starts a detached supervisor for a prepared run and returns at once. The writer lock's
    /// descriptor is handed down, so the lock is held without a gap.
    pub fn spawn_background(&self, prepared: Prepared) -> Result<RunRecord, EngineError> {
        use std::os::fd::AsRawFd;
        use std::os::unix::process::CommandExt;
        let mut cmd = std::process::Command::new(&self.exe);
        cmd.arg(SUPERVISE_SUBCOMMAND).arg(&prepared.record.id);
        let lock_fd = prepared.lock.as_ref().map(|l| l.as_raw_fd());
        if let Some(fd) = lock_fd {
            cmd.arg("--lock-fd").arg(fd.to_string());
        }
        let ticket_fd = prepared.ticket.as_ref().map(|t| t.as_raw_fd());
        if let Some(fd) = ticket_fd {
            cmd.arg("--ticket-fd").arg(fd.to_string());
        }
        cmd.stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .current_dir(&prepared.record.spec.dir);
        // SAFETY: only async-signal-safe calls (setsid, fcntl) between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                nix::unistd::setsid().map_err(std::io::Error::from)?;
                for fd in [lock_fd, ticket_fd].into_iter().flatten() {
                    if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
        cmd.spawn()
            .map_err(io("starting the background supervisor"))?;
        // The supervisor holds its own copy of the ticket now; ours must not remove the file.
        if let Some(ticket) = prepared.ticket {
            ticket.forget();
        }
        Ok(prepared.record)
    }

    /// Carries a prepared run out to the end and returns its final record.
    pub fn execute(&self, prepared: Prepared, observer: &mut dyn Observer) -> RunRecord {
        let Prepared {
            mut record,
            lock,
            ticket,
        } = prepared;
        let run_dir = self.home.run_dir(&record.id);
        let outcome = self.execute_inner(&mut record, &run_dir, ticket, observer);
        if let Err(e) = outcome {
            record.state = RunState::Failed;
            record.error = Some(e.to_string());
        }
        if record.ended_at.is_none() {
            record.ended_at = Some(jiff::Timestamp::now().to_string());
        }
        record.supervisor_peak_kb = own_peak_kb();
        let _ = std::fs::remove_dir_all(run_dir.join("scratch"));
        if record.copy.is_some() {
            pitroom_git::prune_read_copies(
                &self.home.snapshots(),
                pitroom_git::KeepPolicy::default(),
            );
        }
        for index in ["base.index", "after.index"] {
            let _ = std::fs::remove_file(run_dir.join(index));
        }
        let _ = self.save(&record);
        drop(lock);
        record
    }

    fn execute_inner(
        &self,
        record: &mut RunRecord,
        run_dir: &Path,
        ticket: Option<Ticket>,
        observer: &mut dyn Observer,
    ) -> Result<(), EngineError> {
        // Signals are caught before the pid is published: a `pitroom stop` that reads the pid
        // must find a process that turns SIGTERM into a clean stop, not one it kills outright.
        let stop = Arc::new(AtomicBool::new(false));
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            let _ = signal_hook::flag::register(signal, Arc::clone(&stop));
        }
        // Orphans of the worker tree come back to us if the keeper itself dies.
        let _ = nix::sys::prctl::set_child_subreaper(true);
        let pid = std::process::id();
        record.pid = Some(pid);
        record.pid_start = pitroom_proc::process_start_time(pid as i32);
        self.save(record)?;
        // A `pitroom stop` that raced the start left a note instead of a signal.
        if run_dir.join(STOP_REQUESTED).exists() {
            stop.store(true, Ordering::SeqCst);
        }
        let Some(slot) = self.wait_for_slot(record, ticket, &stop)? else {
            record.state = RunState::Stopped;
            record.error = Some("stopped while queued; the worker never started".into());
            return Ok(());
        };
        record.state = RunState::Running;
        record.started_at = Some(jiff::Timestamp::now().to_string());
        self.save(record)?;
        let started = Instant::now();

        let parent = match &record.spec.parent {
            Some(id) => Some(self.home.load(id)?),
            None => None,
        };
        let tree = self.prepare_tree(record, run_dir, parent.as_ref())?;
        if record.spec.mode.may_edit() {
            let reachable = crate::secrets::secret_files_in(&tree.workdir);
            if !reachable.is_empty() {
                record.warnings.push(format!(
                    "secret-looking files within the worker's reach: {} (their values are redacted from everything Pitroom stores or shows)",
                    reachable.join(", ")
                ));
            }
        }
        self.save(record)?;

        let chain = fallback_chain(&record.spec);
        let cooldowns = Cooldowns::load(&self.home);
        let parent_session = parent.as_ref().and_then(|p| p.session.clone());
        let mut handoff: Option<String> = None;
        let mut prior = Tally::default();
        let mut index = 0;
        let (adapter, mut stream, ending, attempt_started) = loop {
            let (backend, model) = chain[index].clone();
            let last = index + 1 == chain.len();
            let target = target_display(&backend, model.as_deref());
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
            let adapter = match self.adapter_in(&record.spec, &backend) {
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
            record.spec.backend = backend;
            record.spec.model = model;
            if index > 0 {
                // The next worker has its own session; `--continue` follows the last one.
                record.session = None;
                rotate_stderr(run_dir, index);
            }
            let session = if index == 0 {
                parent_session.clone()
            } else {
                None
            };
            let attempt_started = Instant::now();
            let mut stream = Stream {
                redactor: Some(self.redactor(record, &tree)),
                tally: prior.clone(),
                roots: display_roots(&tree),
                ..Stream::default()
            };
            let ending = self.attempt(
                record,
                run_dir,
                &tree,
                adapter.as_ref(),
                session,
                handoff.as_deref(),
                &stop,
                &mut stream,
                observer,
            )?;
            // Anything the worker left behind that escaped the keeper is ours to end.
            terminate_descendants(Duration::from_millis(500));
            let failure = if last {
                None
            } else {
                self.fallback_failure(record, run_dir, adapter.as_ref(), &stream, ending)
            };
            let Some((kind, error, retry_after)) = failure else {
                break (adapter, stream, ending, attempt_started);
            };
            if kind == FailureKind::RateLimited {
                let _ = Cooldowns::note(&self.home, &target, &error, retry_after);
            }
            let steps = stream.tally.steps - prior.steps;
            let tool_calls = stream.tally.tool_calls - prior.tool_calls;
            let handed_off = handoff.is_some();
            handoff = (steps > 0 || tool_calls > 0)
                .then(|| self.handoff_account(record, run_dir, &tree, &stream, &target, &error));
            record.attempts.push(Attempt {
                target,
                state: RunState::Failed.as_str().into(),
                failure: Some(kind),
                error: Some(stream.redact(&error)),
                steps,
                tool_calls,
                duration_ms: attempt_started.elapsed().as_millis() as u64,
                fell_back: true,
                handed_off,
            });
            prior = stream.tally.clone();
            record.tally = prior.clone();
            self.save(record)?;
            index += 1;
        };
        // Worker time ends before the slot is freed: a queued run that starts now must never
        // seem to overlap this one.
        record.duration_ms = Some(started.elapsed().as_millis() as u64);
        // The next queued run may start while this one is judged and verified.
        drop(slot);
        record.ended_at = Some(jiff::Timestamp::now().to_string());
        if adapter.resumed_usage_is_cumulative() && index == 0 {
            own_usage_of_follow_up(record, &mut stream, parent.as_ref());
        }
        self.finish(record, run_dir, &tree, adapter.as_ref(), &stream, ending)?;
        record.attempts.push(Attempt {
            target: record.worker_target(),
            state: record.state.as_str().into(),
            failure: record.failure,
            error: record.error.clone(),
            steps: stream.tally.steps - prior.steps,
            tool_calls: stream.tally.tool_calls - prior.tool_calls,
            duration_ms: attempt_started.elapsed().as_millis() as u64,
            fell_back: false,
            handed_off: handoff.is_some(),
        });
        if record.failure == Some(FailureKind::RateLimited) {
            let retry_after = stream.retry_after();
            let error = record.error.clone().unwrap_or_default();
            let _ = Cooldowns::note(&self.home, &record.worker_target(), &error, retry_after);
        }
        Ok(())
    }

    /// One worker attempt: its invocation, its prompt (the task, a follow-up, or the task with
    /// a hand-off account of what a previous worker did), then the worker under the keeper.
    #[allow(clippy::too_many_arguments)]
    fn attempt(
        &self,
        record: &mut RunRecord,
        run_dir: &Path,
        tree: &TreeSetup,
        adapter: &dyn Adapter,
        session: Option<String>,
        handoff: Option<&str>,
        stop: &AtomicBool,
        stream: &mut Stream,
        observer: &mut dyn Observer,
    ) -> Result<Ending, EngineError> {
        let scratch = run_dir.join("scratch");
        let req = self.invocation_request(&record.spec, &tree.workdir, &scratch, session);
        let invocation = adapter
            .invocation(&req)
            .map_err(|e| EngineError::Refused(e.to_string()))?;
        for note in &invocation.notes {
            if !record.warnings.contains(note) {
                record.warnings.push(note.clone());
            }
        }
        prepare_dirs(&req.dirs, &invocation.links);

        let (mode, task) = (record.spec.mode, &record.spec.task);
        let mut prompt_text = match (handoff, &record.spec.parent) {
            (Some(account), _) => prompt::handoff_prompt(mode, task, account),
            (None, Some(_)) => prompt::follow_up_prompt(mode, task),
            (None, None) => prompt::worker_prompt(mode, task),
        };
        prompt_text.push_str(&prompt::attachments_block(&record.spec.attachments));
        let prompt_path = run_dir.join("prompt.md");
        std::fs::write(&prompt_path, &prompt_text).map_err(io("writing the prompt"))?;
        let (args, stdin_file) = place_prompt(&invocation.args, &prompt_text, &prompt_path);

        let spec = KeeperSpec {
            program: invocation.program.clone(),
            args,
            cwd: tree.workdir.clone(),
            stdin_file,
            stderr_file: run_dir.join("stderr.log"),
            env: with_worker_cli(
                self.guarded_env(worker_env(&self.env, &invocation), tree)?,
                &invocation.program,
            ),
            grace: GRACE,
            sandbox: self.worker_sandbox(record, run_dir, tree, adapter, &req, &invocation),
            containment_report: Some(run_dir.join(CONTAINMENT_REPORT)),
        };
        let ending = self.supervise(record, run_dir, &spec, adapter, stop, stream, observer);
        note_sandbox(record, run_dir, spec.sandbox.is_some());
        ending
    }

    /// Layer 3 for one attempt: what the worker's tree may write — its scratch dir, the CLI's
    /// private state dirs (and the credential files they link to), `/dev/null`, and for edit
    /// runs the tree the patch covers with its git dirs kept read-only. `None` for a CLI that
    /// keeps its own sandbox; the record says so.
    fn worker_sandbox(
        &self,
        record: &mut RunRecord,
        run_dir: &Path,
        tree: &TreeSetup,
        adapter: &dyn Adapter,
        req: &InvocationRequest,
        invocation: &pitroom_workers::Invocation,
    ) -> Option<SandboxSpec> {
        let safety = record.safety.get_or_insert_with(Default::default);
        // guarded_env put both in place (it fails the attempt otherwise).
        (safety.guard_shim, safety.git_env_config) = (true, true);
        if adapter.has_own_sandbox() {
            safety.landlock = Some(SandboxReport::skipped(
                "the worker CLI enforces the mode in its own OS sandbox, which cannot start inside Landlock",
            ));
            return None;
        }
        if self
            .env
            .iter()
            .any(|(k, v)| k == "PITROOM_LANDLOCK" && v == "off")
        {
            safety.landlock = Some(SandboxReport::skipped(
                "turned off with PITROOM_LANDLOCK=off",
            ));
            return None;
        }
        let mut private_dirs = vec![req.dirs.scratch.clone(), req.dirs.shared.clone()];
        private_dirs.extend(record.spec.sandbox_writable.iter().cloned());
        private_dirs.extend(
            invocation
                .env
                .iter()
                .filter(|(k, _)| is_state_dir_var(&k.to_string_lossy()))
                .map(|(_, v)| PathBuf::from(v)),
        );
        let link_targets: Vec<PathBuf> = invocation.links.iter().map(|(_, t)| t.clone()).collect();
        let mut git_dirs: Vec<PathBuf> = tree.copy.iter().map(|c| c.join(".git")).collect();
        if let Some(repo) = &tree.repo {
            // In a linked worktree `.git` is a file pointing at the git dir: rewritten, it would
            // hand the supervisor's next git call a config of the worker's making.
            git_dirs.extend([
                repo.git_dir.clone(),
                repo.common_dir.clone(),
                repo.toplevel.join(".git"),
            ]);
        }
        // Edit runs write the tree their patch covers: the copy, or the user's repository.
        let writable_tree = tree
            .copy
            .clone()
            .or_else(|| tree.repo.as_ref().map(|r| r.toplevel.clone()))
            .unwrap_or_else(|| tree.workdir.clone());
        let access = match record.spec.mode {
            Mode::Read => TreeAccess::ReadOnly,
            Mode::Isolate | Mode::Write => TreeAccess::Writable {
                tree: &writable_tree,
                git_dirs: &git_dirs,
            },
        };
        let report = run_dir.join(SANDBOX_REPORT);
        let _ = std::fs::remove_file(&report);
        Some(SandboxSpec::for_worker(
            access,
            &private_dirs,
            &link_targets,
            report,
        ))
    }

    /// Whether an attempt failed in a way the next target may fix (model unavailable, rate
    /// limited or out of quota, auth): its kind, its error and the provider's retry-after.
    /// Timeouts, stops, loops and answers never fall back.
    fn fallback_failure(
        &self,
        record: &RunRecord,
        run_dir: &Path,
        adapter: &dyn Adapter,
        stream: &Stream,
        ending: Ending,
    ) -> Option<(FailureKind, String, Option<u64>)> {
        if matches!(ending, Ending::Stopped | Ending::TimedOut | Ending::Stalled) {
            return None;
        }
        let mut probe = record.clone();
        probe.answer = stream.answer();
        self.judge(&mut probe, run_dir, adapter, stream, ending);
        match (probe.state, probe.failure) {
            (RunState::Failed, Some(kind)) if kind != FailureKind::Other => Some((
                kind,
                probe.error.unwrap_or_else(|| kind.describe().into()),
                stream.retry_after(),
            )),
            _ => None,
        }
    }

    /// A compact account of what a failed worker did, for the worker that finishes its task:
    /// its tool calls, what it said, and (for edit runs) its diff so far.
    fn handoff_account(
        &self,
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
            let mut probe = record.clone();
            if self
                .capture_changes(&mut probe, run_dir, tree, stream)
                .is_ok()
                && !probe.changes.is_empty()
            {
                let patch =
                    std::fs::read_to_string(run_dir.join("changes.patch")).unwrap_or_default();
                let patch: String = stream.redact(&patch).chars().take(8000).collect();
                account.push_str(&format!(
                    "Its changes so far are already in your working tree (keep them; do not redo them):\n```diff\n{patch}\n```\n"
                ));
            }
        }
        account
    }

    /// Waits in the queue for a slot (queue time is recorded apart from worker time); `None`
    /// when the run was stopped first.
    fn wait_for_slot(
        &self,
        record: &mut RunRecord,
        ticket: Option<Ticket>,
        stop: &AtomicBool,
    ) -> Result<Option<Slot>, EngineError> {
        let slots = self.slots(&record.spec);
        let ticket = match ticket {
            Some(t) => t,
            None => slots
                .enqueue(&record.id)
                .map_err(io("joining the worker queue"))?,
        };
        let queued = Instant::now();
        let slot = slots
            .acquire(ticket, stop)
            .map_err(io("waiting for a worker slot"))?;
        record.queued_ms = Some(queued.elapsed().as_millis() as u64);
        record.slot_grant = slot.as_ref().map(Slot::grant);
        Ok(slot)
    }

    /// The models `backend` offers, as its CLI lists them (with the user's own providers).
    pub fn list_models(
        &self,
        backend: &str,
    ) -> Result<Vec<pitroom_workers::ModelInfo>, EngineError> {
        let adapter = self.adapter(backend)?;
        let scratch = self
            .home
            .root
            .join("scratch")
            .join(format!("models-{}", std::process::id()));
        let cwd = std::env::current_dir().map_err(io("reading the current directory"))?;
        let spec = RunSpec {
            timeout_secs: 60.0,
            allow_non_git: true,
            primary: String::new(),
            verify_timeout_secs: 60.0,
            ..RunSpec::new(String::new(), Mode::Read, backend.to_string(), cwd.clone())
        };
        let req = self.invocation_request(&spec, &cwd, &scratch, None);
        // Every backend says the same thing when its CLI is missing, whether or not it could
        // list models without it (Qwen's listing reads only its settings).
        if let Err(AdapterError::NotFound(e)) = adapter.invocation(&req) {
            return Err(EngineError::Refused(e.to_string()));
        }
        let invocation = adapter
            .models_invocation(&req)
            .map_err(|e| EngineError::Refused(e.to_string()))?;
        prepare_dirs(&req.dirs, &invocation.links);
        let keeper_spec = KeeperSpec {
            program: invocation.program.clone(),
            args: invocation.args.clone(),
            cwd,
            stdin_file: None,
            stderr_file: scratch.join("stderr.log"),
            env: worker_env(&self.env, &invocation),
            grace: GRACE,
            // Listing models writes nothing of the user's; the CLI may refresh its caches.
            sandbox: None,
            containment_report: None,
        };
        let mut models = Vec::new();
        // A CLI may answer with nothing while its model catalogue loads: ask twice.
        for _ in 0..2 {
            let mut keeper = spawn_keeper(&self.exe, &keeper_spec)
                .map_err(|e| EngineError::Refused(e.to_string()))?;
            let lines = read_lines(keeper.stdout.take());
            let _ = keeper.wait_bounded(Duration::from_secs(60));
            // The pipe closes with the keeper; what it held is still in the channel.
            let mut stdout = Vec::new();
            while let Ok(line) = lines.recv_timeout(Duration::from_secs(2)) {
                stdout.push(String::from_utf8_lossy(&line).into_owned());
            }
            models = adapter.parse_models(&stdout.join("\n"));
            if !models.is_empty() {
                break;
            }
        }
        let _ = std::fs::remove_dir_all(&scratch);
        Ok(models)
    }

    /// A redactor for this run: well-known key formats, plus the values of the secret-looking
    /// files at the top of the project and in the worker's directory.
    fn redactor(&self, record: &RunRecord, tree: &TreeSetup) -> crate::redact::Redactor {
        let mut dirs: Vec<&Path> = vec![record.spec.dir.as_path(), tree.workdir.as_path()];
        if let Some(repo) = &tree.repo {
            dirs.push(repo.toplevel.as_path());
        }
        crate::redact::Redactor::for_dirs(&dirs)
    }

    /// Puts the git guard around the worker's environment: the shim first on `PATH`, the
    /// hook and push rewrite in git's environment config, the repositories it protects.
    fn guarded_env(
        &self,
        mut env: Vec<(OsString, OsString)>,
        tree: &TreeSetup,
    ) -> Result<Vec<(OsString, OsString)>, EngineError> {
        let links = crate::guard_env::install_links(&self.home, &self.exe)
            .map_err(io("installing the git guard links"))?;
        let mut protected: Vec<PathBuf> = Vec::new();
        if let Some(repo) = &tree.repo {
            protected.push(repo.git_dir.clone());
            protected.push(repo.common_dir.clone());
        }
        if let Some(copy) = &tree.copy {
            protected.push(copy.join(".git"));
        }
        let current: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| {
                (
                    k.to_string_lossy().into_owned(),
                    v.to_string_lossy().into_owned(),
                )
            })
            .collect();
        for (k, v) in crate::guard_env::guard_vars(&current, &links, &protected) {
            env.retain(|(existing, _)| existing.to_str() != Some(k.as_str()));
            env.push((k.into(), v.into()));
        }
        Ok(env)
    }

    /// Picks the directory the worker runs in and takes the "before" snapshot.
    fn prepare_tree(
        &self,
        record: &mut RunRecord,
        run_dir: &Path,
        parent: Option<&RunRecord>,
    ) -> Result<TreeSetup, EngineError> {
        let dir = record.spec.dir.clone();
        let Some(repo) = Repo::discover(&dir)? else {
            record.workdir = Some(dir.clone());
            return Ok(TreeSetup::in_place(dir, None));
        };
        let relative = dir
            .strip_prefix(&repo.toplevel)
            .unwrap_or(Path::new(""))
            .to_path_buf();
        let base_index = run_dir.join("base.index");
        match record.spec.mode {
            Mode::Read => {
                // A follow-up reads the very same state as the run it continues.
                let base = match parent.and_then(|p| p.base_tree.clone()) {
                    Some(tree) => tree,
                    None => self.read_snapshot(record, &repo, &base_index)?,
                };
                let lease = pitroom_git::ensure_read_copy(&repo, &base, &self.home.snapshots())?;
                let copy = lease.dir.clone();
                record.base_tree = Some(base);
                let mut setup = TreeSetup::in_copy(copy, &relative, repo, false)?;
                setup._lease = Some(lease);
                record.copy = setup.copy.clone();
                record.workdir = Some(setup.workdir.clone());
                Ok(setup)
            }
            Mode::Isolate => {
                let (base, copy) = match parent {
                    // A follow-up works on in the same copy; the patch accumulates.
                    Some(p) => {
                        let copy = p.copy.clone().filter(|c| c.join(".git").is_dir()).ok_or_else(|| {
                            EngineError::Refused(format!(
                                "the isolated copy of run {} is gone (applied or discarded); start a new run",
                                p.id
                            ))
                        })?;
                        (p.base_tree.clone().unwrap_or_default(), copy)
                    }
                    None => {
                        let base = pitroom_git::snapshot(
                            &repo.git_dir,
                            &repo.toplevel,
                            &repo.index,
                            &base_index,
                        )?
                        .tree;
                        let copy = self.home.copies().join(&record.id);
                        pitroom_git::build_copy(&repo, &base, &copy)?;
                        link_paths(record, &repo.toplevel, &copy);
                        (base, copy)
                    }
                };
                record.base_tree = Some(base);
                let setup = TreeSetup::in_copy(copy, &relative, repo, true)?;
                record.copy = setup.copy.clone();
                record.workdir = Some(setup.workdir.clone());
                Ok(setup)
            }
            Mode::Write => {
                let base =
                    pitroom_git::snapshot(&repo.git_dir, &repo.toplevel, &repo.index, &base_index)?;
                record.base_tree = Some(base.tree);
                record.workdir = Some(dir.clone());
                Ok(TreeSetup::in_place(dir, Some(repo)))
            }
        }
    }

    /// The "before" snapshot of a read run: the user's current state minus secret-looking files,
    /// which never reach the read copy.
    fn read_snapshot(
        &self,
        record: &mut RunRecord,
        repo: &Repo,
        index: &Path,
    ) -> Result<String, EngineError> {
        let is_secret = |p: &str| crate::secrets::is_secret_path(p);
        let options = pitroom_git::SnapshotOptions {
            exclude: &[],
            drop: Some(&is_secret),
        };
        let snap = pitroom_git::snapshot_with(
            &repo.git_dir,
            &repo.toplevel,
            &repo.index,
            index,
            &options,
        )?;
        if !snap.dropped.is_empty() {
            let shown: Vec<&str> = snap.dropped.iter().take(5).map(String::as_str).collect();
            record.warnings.push(format!(
                "{} secret-looking file(s) kept out of the worker's copy: {}{}",
                snap.dropped.len(),
                shown.join(", "),
                if snap.dropped.len() > 5 { ", …" } else { "" }
            ));
        }
        Ok(snap.tree)
    }

    /// Runs the keeper and streams the worker's events until it ends, is stopped, times out or
    /// stalls.
    #[allow(clippy::too_many_arguments)]
    fn supervise(
        &self,
        record: &mut RunRecord,
        run_dir: &Path,
        spec: &KeeperSpec,
        adapter: &dyn Adapter,
        stop: &AtomicBool,
        stream: &mut Stream,
        observer: &mut dyn Observer,
    ) -> Result<Ending, EngineError> {
        // Appended to: a run that falls back keeps every attempt's events.
        let mut events_file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(run_dir.join("events.jsonl"))
            .map_err(io("creating events.jsonl"))?;
        let mut keeper =
            spawn_keeper(&self.exe, spec).map_err(|e| EngineError::Refused(e.to_string()))?;
        let lines = read_lines(keeper.stdout.take());
        let timeout = Duration::from_secs_f64(record.spec.timeout_secs);
        let watchdog = Duration::from_secs_f64(record.spec.watchdog_secs);
        let started = Instant::now();
        let mut last_saved = Instant::now();
        let mut published = (record.tally.steps, record.tally.tool_calls);
        let mut dirty = false;
        let mut requested: Option<Ending> = None;
        let mut stderr_tail = FileTail::new(run_dir.join("stderr.log"));
        let exit_code = loop {
            match lines.recv_timeout(Duration::from_millis(50)) {
                Ok(line) => {
                    let text = String::from_utf8_lossy(&line);
                    let _ = events_file.write_all(stream.redact(&text).as_bytes());
                    let _ = events_file.write_all(b"\n");
                    let _ = events_file.flush();
                    absorb_line(stream, adapter, &text, record);
                    // Some CLIs report their silent retries on stdout (Codex's "Reconnecting…").
                    if let Some(error) = adapter.retry_signal(&text) {
                        stream.retry_errors += 1;
                        stream.last_retry_error = Some(error);
                    }
                    // A new step or tool call is published at once (watchers follow the
                    // record); anything else at most every PROGRESS_EVERY.
                    let counters = (record.tally.steps, record.tally.tool_calls);
                    dirty = true;
                    if counters != published || last_saved.elapsed() >= PROGRESS_EVERY {
                        let _ = self.save(record);
                        observer.progress(record);
                        (published, dirty, last_saved) = (counters, false, Instant::now());
                    }
                    continue;
                }
                // The keeper holds the pipe too: once it closes, the keeper is exiting.
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    break keeper.wait_bounded(GRACE + Duration::from_secs(5));
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
            if let Some(code) = keeper.try_wait() {
                break code;
            }
            stderr_tail.poll(|line| follow_stderr(stream, adapter, line, record));
            let wanted = if stop.load(Ordering::SeqCst) || run_dir.join(STOP_REQUESTED).exists() {
                Some(Ending::Stopped)
            } else if started.elapsed() >= timeout {
                Some(Ending::TimedOut)
            } else if stream.stalled(watchdog) {
                Some(Ending::Stalled)
            } else if stream.retry_errors >= RETRY_CAP {
                Some(Ending::RetriesExhausted)
            } else {
                None
            };
            if wanted.is_some() {
                requested = wanted;
                keeper.request_stop();
                break keeper.wait_bounded(GRACE + Duration::from_secs(5));
            }
            if last_saved.elapsed() >= PROGRESS_EVERY {
                if dirty {
                    let _ = self.save(record);
                    dirty = false;
                }
                observer.progress(record);
                last_saved = Instant::now();
            }
        };
        // The keeper is gone; take what the pipe still holds (bounded: a descendant could
        // keep the pipe open).
        let drain_until = Instant::now() + Duration::from_secs(2);
        while let Ok(line) =
            lines.recv_timeout(drain_until.saturating_duration_since(Instant::now()))
        {
            let text = String::from_utf8_lossy(&line);
            let _ = events_file.write_all(stream.redact(&text).as_bytes());
            let _ = events_file.write_all(b"\n");
            absorb_line(stream, adapter, &text, record);
        }
        let _ = events_file.flush();
        // What the CLI wrote to stderr after the last poll (Codex logs refused commands there).
        stderr_tail.poll(|line| follow_stderr(stream, adapter, line, record));
        Ok(requested.unwrap_or(Ending::Exited(exit_code)))
    }

    /// Judges the run: the "after" snapshot and diff, the answer, the state, the receipt.
    fn finish(
        &self,
        record: &mut RunRecord,
        run_dir: &Path,
        tree: &TreeSetup,
        adapter: &dyn Adapter,
        stream: &Stream,
        ending: Ending,
    ) -> Result<(), EngineError> {
        record.tally = stream.tally.clone();
        let raw_answer = stream.answer();
        // Citations are checked against the tree the worker saw (its copy, for a read run).
        if let Some(answer) = &raw_answer {
            let root = tree
                .copy
                .clone()
                .or_else(|| tree.repo.as_ref().map(|r| r.toplevel.clone()))
                .unwrap_or_else(|| tree.workdir.clone());
            record.refs = Some(check_refs(answer, &root, tree));
        }
        record.answer = raw_answer.map(|a| match (&tree.copy, &tree.repo) {
            (Some(copy), Some(repo)) => stream.redact(&rewrite_paths(&a, copy, &repo.toplevel)),
            _ => stream.redact(&a),
        });
        self.capture_changes(record, run_dir, tree, stream)?;
        if let Some(answer) = &record.answer {
            std::fs::write(run_dir.join("answer.md"), answer).map_err(io("writing answer.md"))?;
        }
        self.judge(record, run_dir, adapter, stream, ending);
        if record.state == RunState::Done {
            self.run_verify(record, run_dir, tree);
        }
        // The keeper wrote stderr.log and verify.log as the processes printed them.
        for log in ["stderr.log", "verify.log"] {
            let path = run_dir.join(log);
            if let Ok(text) = std::fs::read_to_string(&path) {
                let clean = stream.redact(&text);
                if clean != text {
                    let _ = std::fs::write(&path, clean);
                }
            }
        }
        record.error = record.error.as_deref().map(|e| stream.redact(e));
        if let Some(v) = record.verify.as_mut() {
            v.tail = stream.redact(&v.tail);
        }
        let primary = receipt::resolve_primary(&record.spec.primary, record.spec.price.as_deref());
        if let Some(w) = primary.1 {
            record.warnings.push(w);
        }
        let body = report::body(record, false);
        record.receipt = Some(receipt::receipt(&record.tally, &body, &primary.0));
        Ok(())
    }

    /// Runs `--verify` in the worker's directory with a time limit, through a keeper so nothing
    /// it starts survives. A failure fails the run (exit 6); the output is kept in verify.log.
    fn run_verify(&self, record: &mut RunRecord, run_dir: &Path, tree: &TreeSetup) {
        let Some(command) = record.spec.verify.clone() else {
            return;
        };
        let log_path = run_dir.join("verify.log");
        let mut env: Vec<(OsString, OsString)> = self
            .env
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect();
        env.push(("PITROOM_ACTIVE".into(), "1".into()));
        let spec = KeeperSpec {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), format!("exec 2>&1\n{command}").into()],
            cwd: tree.workdir.clone(),
            stdin_file: None,
            stderr_file: log_path.clone(),
            env,
            grace: GRACE,
            // The primary agent's own check (tests, a build), not the worker's: unconfined.
            sandbox: None,
            containment_report: None,
        };
        let limit = Duration::from_secs_f64(record.spec.verify_timeout_secs);
        let started = Instant::now();
        let mut tail: std::collections::VecDeque<String> = std::collections::VecDeque::new();
        let mut timed_out = false;
        let code = match spawn_keeper(&self.exe, &spec) {
            Ok(mut keeper) => {
                let lines = read_lines(keeper.stdout.take());
                let mut log = File::create(&log_path).ok();
                let mut keep = |line: Vec<u8>| {
                    if let Some(f) = log.as_mut() {
                        let _ = f.write_all(&line);
                        let _ = f.write_all(b"\n");
                    }
                    tail.push_back(String::from_utf8_lossy(&line).into_owned());
                    if tail.len() > 25 {
                        tail.pop_front();
                    }
                };
                let code = loop {
                    match lines.recv_timeout(Duration::from_millis(50)) {
                        Ok(line) => {
                            keep(line);
                            continue;
                        }
                        Err(mpsc::RecvTimeoutError::Disconnected) => {
                            break keeper.wait_bounded(GRACE + Duration::from_secs(5))
                        }
                        Err(mpsc::RecvTimeoutError::Timeout) => {}
                    }
                    if let Some(code) = keeper.try_wait() {
                        break code;
                    }
                    if started.elapsed() >= limit {
                        timed_out = true;
                        keeper.request_stop();
                        break keeper.wait_bounded(GRACE + Duration::from_secs(5));
                    }
                };
                let drain_until = Instant::now() + Duration::from_secs(1);
                while let Ok(line) =
                    lines.recv_timeout(drain_until.saturating_duration_since(Instant::now()))
                {
                    keep(line);
                }
                Some(code)
            }
            Err(e) => {
                tail.push_back(e.to_string());
                None
            }
        };
        let passed = !timed_out && code == Some(0);
        let outcome = crate::record::VerifyOutcome {
            command: command.clone(),
            passed,
            exit_code: code.filter(|_| !timed_out),
            timed_out,
            duration_ms: started.elapsed().as_millis() as u64,
            tail: tail.into_iter().collect::<Vec<_>>().join("\n"),
        };
        if !passed {
            record.state = RunState::Failed;
            record.error = Some(match (timed_out, code) {
                (true, _) => format!(
                    "--verify timed out after {}: {command}",
                    crate::duration::format_duration(limit)
                ),
                (false, Some(c)) => format!("--verify failed (exit {c}): {command}"),
                (false, None) => format!("--verify could not run: {command}"),
            });
        }
        record.verify = Some(outcome);
    }

    fn capture_changes(
        &self,
        record: &mut RunRecord,
        run_dir: &Path,
        tree: &TreeSetup,
        stream: &Stream,
    ) -> Result<(), EngineError> {
        let Some(base) = record.base_tree.clone() else {
            return Ok(());
        };
        let (git_dir, work_tree, seed) = match (&tree.copy, &tree.repo) {
            (Some(copy), _) => (copy.join(".git"), copy.clone(), copy.join(".git/index")),
            (None, Some(repo)) => (
                repo.git_dir.clone(),
                repo.toplevel.clone(),
                run_dir.join("base.index"),
            ),
            (None, None) => return Ok(()),
        };
        let options = pitroom_git::SnapshotOptions {
            exclude: &record.spec.link,
            drop: None,
        };
        let after = pitroom_git::snapshot_with(
            &git_dir,
            &work_tree,
            &seed,
            &run_dir.join("after.index"),
            &options,
        )?;
        record.after_tree = Some(after.tree.clone());
        // An isolated patch is applied later: a move must stay a move, not a deletion to allow.
        let changes = pitroom_git::diff_trees(&git_dir, &base, &after.tree, tree.isolated)?;
        if tree.copy.is_some() {
            // The copy's own index was written while its files were checked out, so git sees
            // every entry as racily clean and re-hashes them all; the fresh index of this
            // snapshot makes the next check a stat walk.
            let _ = std::fs::rename(&after.index, &seed);
        }
        if changes.is_empty() {
            return Ok(());
        }
        std::fs::write(run_dir.join("changes.patch"), &changes.patch)
            .map_err(io("writing changes.patch"))?;
        record.changes = changes
            .files
            .iter()
            .map(|f| ChangedFile {
                status: f.status.letter(),
                path: f.path.clone(),
                old_path: f.old_path.clone(),
                added: f.added,
                deleted: f.deleted,
            })
            .collect();
        let reported: Vec<String> = stream
            .edited
            .iter()
            .map(|p| relative_to(p, &work_tree))
            .collect();
        record.unreported = record
            .changes
            .iter()
            .map(|c| c.path.clone())
            .filter(|p| !reported.contains(p))
            .collect();
        if let (Some(copy), false) = (&tree.copy, tree.isolated) {
            // Whatever the events claim, the tree says the worker wrote. The shared copy is
            // spoiled for other runs: remove it so the next run builds a clean one.
            record.read_only_violation = true;
            let _ = std::fs::remove_dir_all(copy);
        }
        Ok(())
    }

    fn judge(
        &self,
        record: &mut RunRecord,
        run_dir: &Path,
        adapter: &dyn Adapter,
        stream: &Stream,
        ending: Ending,
    ) {
        let stderr = tail(&run_dir.join("stderr.log"), 8 * 1024);
        let errors: Vec<&str> = stream.errors().collect();
        match ending {
            Ending::Stopped => {
                record.state = RunState::Stopped;
                record.error =
                    Some("stopped before the worker finished; what it did is kept".into());
                return;
            }
            Ending::TimedOut => {
                record.state = RunState::Timeout;
                record.error = Some(format!(
                    "timed out after {}; the worker was stopped and what it did is kept",
                    crate::duration::format_duration(Duration::from_secs_f64(
                        record.spec.timeout_secs
                    ))
                ));
                return;
            }
            Ending::Stalled => {
                record.state = RunState::Failed;
                record.error = Some(format!(
                    "the worker made no progress for {} and kept calling the model ({} empty steps); the model's replies probably carry no finish reason. Pitroom stopped it",
                    crate::duration::format_duration(Duration::from_secs_f64(record.spec.watchdog_secs)),
                    stream.empty_steps_total
                ));
                record.failure = Some(pitroom_workers::FailureKind::Other);
                return;
            }
            Ending::RetriesExhausted => {
                let error = stream
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
                    stderr_tail: &stderr,
                    exit_code: None,
                };
                record.state = RunState::Failed;
                record.failure = Some(adapter.classify(&evidence));
                record.error = Some(format!(
                    "{error} — the worker kept retrying ({} failed attempts); Pitroom stopped it so the failure surfaces now",
                    stream.retry_errors
                ));
                return;
            }
            Ending::Exited(code) => record.worker_exit = Some(code),
        }
        if record.read_only_violation {
            record.state = RunState::Failed;
            record.error = Some(format!(
                "READ-ONLY VIOLATION: the worker changed {} file(s) in its read-only copy; your tree is untouched",
                record.changes.len()
            ));
            return;
        }
        let code = record.worker_exit.unwrap_or(0);
        if record.spec.review_of.is_some() {
            if let Some(answer) = &record.answer {
                // A review that ends without a verdict did not happen: never report it passed.
                record.verdict = crate::verdict::parse(answer);
                if record.verdict.is_none() {
                    record.state = RunState::Failed;
                    record.error = Some(format!(
                        "the reviewer answered without a verdict line ({}); the review did not happen: run it again, or with another reviewer (-W)",
                        crate::verdict::VERDICT_FORMAT
                    ));
                    return;
                }
            }
        }
        if record.answer.is_some() {
            record.state = RunState::Done;
            if code != 0 || !errors.is_empty() {
                record.warnings.push(format!(
                    "the worker exited with code {code}{} but gave an answer",
                    errors
                        .first()
                        .map(|e| format!(" after an error ({e})"))
                        .unwrap_or_default()
                ));
            }
            return;
        }
        record.state = RunState::Failed;
        let evidence = FailureEvidence {
            events: &stream.events_of_interest,
            stderr_tail: &stderr,
            exit_code: Some(code),
        };
        if let Some(first) = errors.last() {
            record.error = Some(first.to_string());
            record.failure = Some(adapter.classify(&evidence));
        } else if code != 0 {
            let last_line = stderr
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("no output");
            record.error = Some(format!(
                "the worker exited with code {code}: {}",
                last_line.trim()
            ));
            record.failure = Some(adapter.classify(&evidence));
        } else if stream.tally.denied_calls > 0 {
            record.error =
                Some("the worker ended without an answer after a permission was denied".into());
        } else if stream.lines == 0 {
            record.error = Some("the worker printed no events and no answer".into());
        } else {
            record.error = Some("the worker ended without an answer".into());
        }
    }
}

/// The file `pitroom stop` leaves in a run's directory: a stop that races the run's start (before
/// its supervisor can take a signal) is not lost.
pub const STOP_REQUESTED: &str = "stop-requested";

/// The internal subcommand that runs a background supervisor.
pub const SUPERVISE_SUBCOMMAND: &str = "__supervise";

struct TreeSetup {
    workdir: PathBuf,
    repo: Option<Repo>,
    /// The copy the worker runs in (a read copy, or an isolated copy).
    copy: Option<PathBuf>,
    isolated: bool,
    /// Keeps a read copy from being recycled or pruned while the run uses it.
    _lease: Option<pitroom_git::CopyLease>,
}

impl TreeSetup {
    fn in_place(dir: PathBuf, repo: Option<Repo>) -> TreeSetup {
        TreeSetup {
            workdir: dir,
            repo,
            copy: None,
            isolated: false,
            _lease: None,
        }
    }

    /// The worker runs in the same sub-directory of `copy` that the user asked for.
    fn in_copy(
        copy: PathBuf,
        relative: &Path,
        repo: Repo,
        isolated: bool,
    ) -> Result<TreeSetup, EngineError> {
        let workdir = if relative.as_os_str().is_empty() {
            copy.clone()
        } else {
            copy.join(relative)
        };
        if !workdir.is_dir() {
            std::fs::create_dir_all(&workdir).map_err(io("creating the work dir in the copy"))?;
        }
        Ok(TreeSetup {
            workdir,
            repo: Some(repo),
            copy: Some(copy),
            isolated,
            _lease: None,
        })
    }
}

/// Makes `--link`ed paths (ignored dependency or build folders) available in an isolated copy
/// as copies of their own — copy-on-write where the file system can (`cp --reflink=auto`) — so
/// the worker can never write into the user's originals.
fn link_paths(record: &mut RunRecord, top: &Path, copy: &Path) {
    for rel in record.spec.link.clone() {
        let source = top.join(&rel);
        let dest = copy.join(&rel);
        if !source.exists() {
            record
                .warnings
                .push(format!("--link {rel}: not found in the project; skipped"));
            continue;
        }
        if dest.exists() {
            record.warnings.push(format!(
                "--link {rel}: tracked by git, so the copy has it already"
            ));
            continue;
        }
        if let Some(parent) = dest.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        let copied = std::process::Command::new("cp")
            .args(["-a", "--reflink=auto"])
            .arg(&source)
            .arg(&dest)
            .stdin(std::process::Stdio::null())
            .output();
        match copied {
            Ok(out) if out.status.success() => {}
            Ok(out) => record.warnings.push(format!(
                "--link {rel}: copy failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )),
            Err(e) => record
                .warnings
                .push(format!("--link {rel}: could not run cp: {e}")),
        }
    }
}

/// What the supervisor learned from the event stream.
#[derive(Default)]
struct Stream {
    tally: crate::record::Tally,
    texts: Vec<(Option<String>, String)>,
    edited: Vec<String>,
    /// Errors and nothing else, for classification.
    events_of_interest: Vec<WorkerEvent>,
    lines: u64,
    empty_streak: u32,
    empty_steps_total: u32,
    last_progress: Option<Instant>,
    /// Masks secrets in everything written or shown.
    redactor: Option<crate::redact::Redactor>,
    /// Failed model calls the CLI reported retrying since the last progress.
    retry_errors: u32,
    last_retry_error: Option<String>,
    /// The latest tool calls, one line each, for a hand-off account.
    tool_log: Vec<String>,
    /// Directory prefixes (with a trailing `/`, longest first) shown relative: the read copy's
    /// root and the project's, so a step reads `read calc.py`, not the copy's absolute path.
    roots: Vec<String>,
}

impl Stream {
    fn redact(&self, text: &str) -> String {
        match &self.redactor {
            Some(r) => r.redact(text),
            None => text.to_string(),
        }
    }

    fn absorb(&mut self, events: Vec<WorkerEvent>, record: &mut RunRecord) {
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
                    let mark = match outcome {
                        ToolOutcome::Denied => " (denied)",
                        ToolOutcome::Failed => " (failed)",
                        ToolOutcome::Ok => "",
                    };
                    let line = project_relative(
                        &self.redact(&format!("{name} {summary}{mark}")),
                        &self.roots,
                    );
                    if self.tool_log.len() == TOOL_LOG_MAX {
                        self.tool_log.remove(0);
                    }
                    self.tool_log.push(line.clone());
                    record.last = Some(line);
                }
                WorkerEvent::Text { message, text } => {
                    self.texts.push((message, text));
                }
                e @ WorkerEvent::Error { .. } => self.events_of_interest.push(e),
            }
        }
        record.tally = self.tally.clone();
    }

    /// Several empty steps in a row and nothing useful for `limit`: the endless loop.
    /// The wait the provider asked for in the latest error, in seconds.
    fn retry_after(&self) -> Option<u64> {
        self.events_of_interest.iter().rev().find_map(|e| match e {
            WorkerEvent::Error { retry_after, .. } => *retry_after,
            _ => None,
        })
    }

    fn stalled(&self, limit: Duration) -> bool {
        self.empty_streak >= EMPTY_STEP_STREAK
            && self.last_progress.is_some_and(|t| t.elapsed() >= limit)
    }

    /// The answer: the text of the last message that said anything (earlier narration dropped).
    fn answer(&self) -> Option<String> {
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

    fn errors(&self) -> impl Iterator<Item = &str> {
        self.events_of_interest.iter().filter_map(|e| match e {
            WorkerEvent::Error { message, .. } => Some(message.as_str()),
            _ => None,
        })
    }
}

/// Follows a file another process appends to (the worker's stderr.log), line by line.
struct FileTail {
    path: PathBuf,
    offset: u64,
    partial: String,
}

impl FileTail {
    fn new(path: PathBuf) -> FileTail {
        FileTail {
            path,
            offset: 0,
            partial: String::new(),
        }
    }

    /// Hands every complete line added since the last call to `each`.
    fn poll(&mut self, mut each: impl FnMut(&str)) {
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

/// Lines from the worker's stdout, read on a thread so the supervisor never blocks on them.
fn read_lines(stdout: Option<std::process::ChildStdout>) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    if let Some(out) = stdout {
        std::thread::spawn(move || {
            let mut reader = BufReader::new(out);
            loop {
                let mut line = Vec::new();
                match reader.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        while line.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
                            line.pop();
                        }
                        if tx.send(line).is_err() {
                            break;
                        }
                    }
                }
            }
        });
    }
    rx
}

/// Tells the floor (floor.rs) which CLI the worker is, so it may run itself again while other
/// agent CLIs are refused.
fn with_worker_cli(
    mut env: Vec<(OsString, OsString)>,
    program: &Path,
) -> Vec<(OsString, OsString)> {
    if let Some(name) = program.file_name() {
        env.retain(|(k, _)| k != "PITROOM_WORKER_CLI");
        env.push(("PITROOM_WORKER_CLI".into(), name.to_os_string()));
    }
    env
}

/// Where the prompt goes: on stdin (the file, then EOF), or, for a CLI described in the config
/// with `prompt = "argument"`, whole in place of the `{prompt}` argument with stdin closed.
/// `{prompt_file}` in any argument becomes the prompt file's path.
fn place_prompt(args: &[OsString], prompt: &str, file: &Path) -> (Vec<OsString>, Option<PathBuf>) {
    let as_argument = args
        .iter()
        .any(|a| a == pitroom_workers::custom::PROMPT_ARGUMENT);
    let placed = args
        .iter()
        .map(|a| match a.to_str() {
            Some(pitroom_workers::custom::PROMPT_ARGUMENT) => OsString::from(prompt),
            Some(text) if text.contains("{prompt_file}") => {
                OsString::from(text.replace("{prompt_file}", &file.to_string_lossy()))
            }
            _ => a.clone(),
        })
        .collect();
    (placed, (!as_argument).then(|| file.to_path_buf()))
}

/// The run's chain of targets: the chosen one, then its fallbacks, without repeats.
fn fallback_chain(spec: &RunSpec) -> Vec<(String, Option<String>)> {
    let mut chain = vec![(spec.backend.clone(), spec.model.clone())];
    let custom: Vec<&str> = spec.custom_workers.keys().map(String::as_str).collect();
    for given in &spec.fallback {
        if let Ok(t) = crate::target::Target::parse_known(given, &spec.backend, &custom) {
            let entry = (t.backend, t.model);
            if !chain.contains(&entry) {
                chain.push(entry);
            }
        }
    }
    chain
}

fn target_display(backend: &str, model: Option<&str>) -> String {
    match model {
        Some(m) => format!("{backend}:{m}"),
        None => backend.to_string(),
    }
}

fn skipped_attempt(target: &str, why: String) -> Attempt {
    Attempt {
        target: target.to_string(),
        state: "skipped".into(),
        error: Some(why),
        fell_back: true,
        ..Attempt::default()
    }
}

/// Keeps a failed attempt's stderr as `stderr.attempt-N.log` before the next one writes its own.
fn rotate_stderr(run_dir: &Path, next_attempt: usize) {
    let _ = std::fs::rename(
        run_dir.join("stderr.log"),
        run_dir.join(format!("stderr.attempt-{next_attempt}.log")),
    );
}

/// The worker's environment: the caller's, minus what the adapter removes, plus its settings
/// and Pitroom's floor (no prompts, pagers or editors; no recursive delegation).
fn worker_env(
    base: &[(String, String)],
    inv: &pitroom_workers::Invocation,
) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = base
        .iter()
        .filter(|(k, _)| !inv.env_remove.iter().any(|r| r == k.as_str()))
        .map(|(k, v)| (OsString::from(k), OsString::from(v)))
        .collect();
    let floor = [
        ("PITROOM_ACTIVE", "1"),
        ("GIT_TERMINAL_PROMPT", "0"),
        ("GIT_PAGER", "cat"),
        ("PAGER", "cat"),
        ("GIT_EDITOR", "true"),
        ("EDITOR", "true"),
        ("VISUAL", "true"),
    ];
    let settings = inv.env.iter().cloned().chain(
        floor
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v))),
    );
    for (k, v) in settings {
        env.retain(|(existing, _)| existing != &k);
        env.push((k, v));
    }
    env
}

/// The keeper's report of what the sandbox enforced, kept in the run dir.
const SANDBOX_REPORT: &str = "sandbox.json";
/// The keeper's (or its init's) report of what holds the worker's process tree.
const CONTAINMENT_REPORT: &str = "containment.json";

/// Environment variables through which an adapter points a CLI at its private state.
fn is_state_dir_var(name: &str) -> bool {
    name == "HOME"
        || name == "TMPDIR"
        || (name.starts_with("XDG_") && name.ends_with("_HOME"))
        || matches!(
            name,
            "CODEX_HOME" | "CLAUDE_CONFIG_DIR" | "GEMINI_CLI_HOME" | "QWEN_HOME"
        )
}

/// A CLI that reports a resumed session's usage as the session's total (Codex after `exec
/// resume`): the record keeps that total as `session_usage`, and the run's own usage is the
/// total minus what the session had used before.
fn own_usage_of_follow_up(record: &mut RunRecord, stream: &mut Stream, parent: Option<&RunRecord>) {
    let total = stream.tally.usage;
    if let Some(parent) = parent {
        let before = parent.session_usage.unwrap_or(parent.tally.usage);
        let own = &mut stream.tally.usage;
        own.input = own.input.saturating_sub(before.input);
        own.output = own.output.saturating_sub(before.output);
        own.reasoning = own.reasoning.saturating_sub(before.reasoning);
        own.cache_read = own.cache_read.saturating_sub(before.cache_read);
        own.cache_write = own.cache_write.saturating_sub(before.cache_write);
    }
    record.session_usage = Some(total);
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
fn absorb_line(stream: &mut Stream, adapter: &dyn Adapter, text: &str, record: &mut RunRecord) {
    let events = adapter.parse_line(text);
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

/// Takes the keeper's sandbox report into the record, with a warning for each layer that did
/// not hold and for refused writes.
fn note_sandbox(record: &mut RunRecord, run_dir: &Path, sandboxed: bool) {
    let safety = record.safety.get_or_insert_with(Default::default);
    if sandboxed {
        safety.landlock = Some(
            SandboxReport::read(&run_dir.join(SANDBOX_REPORT))
                .unwrap_or_else(|| SandboxReport::unknown("the keeper left no sandbox report")),
        );
    }
    safety.containment = ContainmentReport::read(&run_dir.join(CONTAINMENT_REPORT));
    let mut notes = Vec::new();
    if let Some(report) = &safety.containment {
        if report.mechanism != Mechanism::PidNamespace {
            let why = report.reason.as_deref().unwrap_or("no reason given");
            notes.push(format!(
                "no PID namespace for the worker ({why}): if every Pitroom process were killed at once, its processes could outlive the run"
            ));
        }
    }
    if let Some(report) = &safety.landlock {
        let why = report.reason.as_deref().unwrap_or("no reason given");
        match report.landlock {
            LandlockState::Enforced => {}
            LandlockState::Skipped => notes.push(format!("layer 3 (Landlock) not applied: {why}")),
            LandlockState::Partial | LandlockState::Unavailable => notes.push(format!(
                "layer 3 (Landlock) {}: {why}; the worker could write outside its allowed directories",
                report.landlock.as_str()
            )),
        }
        if report.git_dir == GitDirState::Writable {
            notes.push(
                "the repository's .git stayed writable to plain file operations (no mount namespace); only the git guard (layers 1-2) protected it".into(),
            );
        }
    }
    let blocked = safety.blocked_writes;
    record
        .warnings
        .retain(|w| !w.starts_with(BLOCKED_WRITES_NOTE));
    if blocked > 0 {
        notes.push(format!(
            "{BLOCKED_WRITES_NOTE} {blocked} tool result(s) (Permission denied / Read-only file system)"
        ));
    }
    for note in notes {
        if !record.warnings.contains(&note) {
            record.warnings.push(note);
        }
    }
}

const BLOCKED_WRITES_NOTE: &str = "the sandbox refused writes in";

fn prepare_dirs(dirs: &StateDirs, links: &[(PathBuf, PathBuf)]) {
    for sub in ["data", "config", "cache"] {
        let _ = std::fs::create_dir_all(dirs.shared.join(sub));
    }
    for sub in ["state", "tmp"] {
        let _ = std::fs::create_dir_all(dirs.scratch.join(sub));
    }
    for (link, target) in links {
        if let Some(parent) = link.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        if std::fs::read_link(link).ok().as_deref() != Some(target.as_path()) {
            let _ = std::fs::remove_file(link);
            let _ = std::os::unix::fs::symlink(target, link);
        }
    }
}

/// Verifies the answer's citations under `root` and words the bad ones in project paths.
fn check_refs(answer: &str, root: &Path, tree: &TreeSetup) -> crate::record::Refs {
    let report = crate::citations::verify(answer, root);
    let bad = report
        .bad()
        .take(20)
        .map(|c| match (&tree.copy, &tree.repo) {
            (Some(copy), Some(repo)) => rewrite_paths(&c.reason(), copy, &repo.toplevel),
            _ => c.reason(),
        })
        .collect();
    crate::record::Refs {
        verified: report.verified,
        total: report.total,
        bad,
    }
}

/// Rewrites the read copy's paths in an answer to the project's own.
fn rewrite_paths(answer: &str, copy: &Path, project: &Path) -> String {
    let copy_s = copy.display().to_string();
    let project_s = project.display().to_string();
    let mut out = answer.replace(&copy_s, &project_s);
    if let Ok(real) = copy.canonicalize() {
        out = out.replace(&real.display().to_string(), &project_s);
    }
    out
}

/// The prefixes a step's text is shown relative to: the read copy (as given and resolved), the
/// project's top directory and the worker's directory, each ending in `/`, longest first.
fn display_roots(tree: &TreeSetup) -> Vec<String> {
    let mut roots: Vec<PathBuf> = Vec::new();
    if let Some(copy) = &tree.copy {
        roots.push(copy.clone());
        roots.extend(copy.canonicalize().ok());
    }
    if let Some(repo) = &tree.repo {
        roots.push(repo.toplevel.clone());
    }
    roots.push(tree.workdir.clone());
    let mut roots: Vec<String> = roots
        .into_iter()
        .map(|r| format!("{}/", r.display().to_string().trim_end_matches('/')))
        .filter(|r| r.len() > 1)
        .collect();
    roots.sort_by_key(|r| std::cmp::Reverse(r.len()));
    roots.dedup();
    roots
}

/// `read /state/snapshots/d4ae…/src/calc.py` → `read src/calc.py` (PRODUCT.md: paths a person
/// reads are project paths).
fn project_relative(text: &str, roots: &[String]) -> String {
    let mut out = text.to_string();
    for root in roots {
        out = out.replace(root.as_str(), "");
        // The root itself, named without a trailing slash, is the project: `.`.
        let bare = root.trim_end_matches('/');
        if out.ends_with(bare) && out.len() > bare.len() {
            let cut = out.len() - bare.len();
            if out[..cut].ends_with(' ') {
                out.replace_range(cut.., ".");
            }
        }
    }
    out
}

fn relative_to(path: &str, root: &Path) -> String {
    Path::new(path)
        .strip_prefix(root)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| path.to_string())
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

/// This process's peak resident memory (VmHWM) in KiB.
fn own_peak_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod relative_tests {
    use super::project_relative;

    #[test]
    fn a_step_in_a_read_copy_names_the_project_path() {
        let roots = vec![
            "/s/snapshots/d4ae/".to_string(),
            "/home/u/proj/".to_string(),
        ];
        assert_eq!(
            project_relative("read /s/snapshots/d4ae/src/calc.py", &roots),
            "read src/calc.py"
        );
        assert_eq!(
            project_relative("grep x /home/u/proj/src", &roots),
            "grep x src"
        );
        assert_eq!(project_relative("list /home/u/proj", &roots), "list .");
        assert_eq!(
            project_relative("read /etc/hosts", &roots),
            "read /etc/hosts"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(m: &str, t: &str) -> WorkerEvent {
        WorkerEvent::Text {
            message: Some(m.into()),
            text: t.into(),
        }
    }

    fn blank_record() -> RunRecord {
        let spec = RunSpec {
            timeout_secs: 1.0,
            watchdog_secs: 1.0,
            verify_timeout_secs: 60.0,
            ..RunSpec::new("t", Mode::Read, "opencode", "/")
        };
        RunRecord::new("x".into(), spec, "now".into())
    }

    #[test]
    fn a_follow_up_of_a_cli_reporting_session_totals_counts_only_its_own_usage() {
        let mut parent = blank_record();
        parent.tally.usage.input = 2500;
        let mut second = blank_record();
        let mut stream = Stream::default();
        stream.tally.usage.input = 5000;
        stream.tally.usage.output = 30;
        own_usage_of_follow_up(&mut second, &mut stream, Some(&parent));
        assert_eq!(stream.tally.usage.input, 2500);
        assert_eq!(stream.tally.usage.output, 30);
        assert_eq!(second.session_usage.map(|u| u.input), Some(5000));
        // The next follow-up subtracts the session's total so far, not the parent's share.
        let mut third = blank_record();
        let mut stream = Stream::default();
        stream.tally.usage.input = 7000;
        own_usage_of_follow_up(&mut third, &mut stream, Some(&second));
        assert_eq!(stream.tally.usage.input, 2000);
    }

    #[test]
    fn the_answer_is_the_last_message_that_said_anything() {
        let mut s = Stream::default();
        let mut r = blank_record();
        s.absorb(vec![text("m1", "Let me look.")], &mut r);
        s.absorb(
            vec![text("m2", "SUMMARY: a"), text("m2", "DETAILS: b")],
            &mut r,
        );
        s.absorb(vec![text("m3", "  ")], &mut r);
        assert_eq!(s.answer().as_deref(), Some("SUMMARY: a\nDETAILS: b"));
    }

    #[test]
    fn empty_steps_in_a_row_trip_the_watchdog_only_after_the_limit() {
        let mut s = Stream::default();
        let mut r = blank_record();
        let empty = WorkerEvent::StepFinished {
            reason: Some("unknown".into()),
            usage: None,
            cost: Some(0.0),
        };
        s.absorb(vec![text("m", "partial")], &mut r);
        for _ in 0..5 {
            s.absorb(vec![WorkerEvent::StepStarted, empty.clone()], &mut r);
        }
        assert!(s.stalled(Duration::ZERO));
        assert!(!s.stalled(Duration::from_secs(3600)));
        s.absorb(vec![text("m", "partial again")], &mut r);
        assert!(s.stalled(Duration::ZERO), "repeated text is no progress");
        let done = WorkerEvent::StepFinished {
            reason: Some("stop".into()),
            usage: None,
            cost: None,
        };
        s.absorb(vec![done], &mut r);
        assert!(!s.stalled(Duration::ZERO));
    }

    #[test]
    fn tally_counts_steps_tools_denials_and_cost() {
        let mut s = Stream::default();
        let mut r = blank_record();
        s.absorb(
            vec![
                WorkerEvent::Session { id: "ses_1".into() },
                WorkerEvent::ToolCall {
                    name: "edit".into(),
                    summary: "a".into(),
                    outcome: ToolOutcome::Denied,
                    error: None,
                    edited: None,
                },
                WorkerEvent::ToolCall {
                    name: "read".into(),
                    summary: "b".into(),
                    outcome: ToolOutcome::Ok,
                    error: None,
                    edited: None,
                },
                WorkerEvent::StepFinished {
                    reason: Some("stop".into()),
                    usage: Some(pitroom_workers::Usage {
                        input: 10,
                        output: 2,
                        ..Default::default()
                    }),
                    cost: Some(0.5),
                },
            ],
            &mut r,
        );
        assert_eq!(r.session.as_deref(), Some("ses_1"));
        assert_eq!(
            (s.tally.steps, s.tally.tool_calls, s.tally.denied_calls),
            (1, 2, 1)
        );
        assert_eq!(s.tally.cost, Some(0.5));
        assert_eq!(r.last.as_deref(), Some("read b"));
    }

    #[test]
    fn file_tail_hands_over_complete_lines_as_they_are_appended() {
        use std::io::Write as _;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stderr.log");
        let mut tail = FileTail::new(path.clone());
        let mut seen = Vec::new();
        tail.poll(|l| seen.push(l.to_string()));
        assert!(seen.is_empty(), "no file yet");
        let mut f = File::create(&path).unwrap();
        write!(f, "one\ntw").unwrap();
        tail.poll(|l| seen.push(l.to_string()));
        write!(f, "o\nthree\n").unwrap();
        tail.poll(|l| seen.push(l.to_string()));
        assert_eq!(seen, vec!["one", "two", "three"]);
    }

    #[test]
    fn copy_paths_in_answers_become_project_paths() {
        let out = rewrite_paths(
            "see /h/snap/abc/src/a.rs:3",
            Path::new("/h/snap/abc"),
            Path::new("/p"),
        );
        assert_eq!(out, "see /p/src/a.rs:3");
    }

    #[test]
    fn worker_env_applies_removals_settings_and_floor() {
        let base = vec![
            ("OPENCODE_CONFIG".to_string(), "x".to_string()),
            ("PATH".to_string(), "/bin".to_string()),
            ("PAGER".to_string(), "less".to_string()),
        ];
        let inv = pitroom_workers::Invocation {
            program: "opencode".into(),
            args: vec![],
            env: vec![("A".into(), "1".into())],
            env_remove: vec!["OPENCODE_CONFIG".into()],
            notes: vec![],
            links: vec![],
        };
        let env = worker_env(&base, &inv);
        let get = |k: &str| {
            env.iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.to_string_lossy().into_owned())
        };
        assert_eq!(get("OPENCODE_CONFIG"), None);
        assert_eq!(get("PATH").as_deref(), Some("/bin"));
        assert_eq!(get("A").as_deref(), Some("1"));
        assert_eq!(get("PAGER").as_deref(), Some("cat"));
        assert_eq!(get("PITROOM_ACTIVE").as_deref(), Some("1"));
    }
}
