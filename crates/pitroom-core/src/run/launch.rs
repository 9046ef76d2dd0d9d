//! Launch: one attempt's invocation, prompt, environment and sandbox, and the worker started
//! under the keeper (`pitroom __keeper`), which owns its process tree.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use pitroom_guard::env::WORKER_CLI;
use pitroom_proc::{
    ContainmentReport, GitDirState, KeeperSpec, LandlockState, Mechanism, SandboxReport,
    SandboxSpec, TreeAccess,
};
use pitroom_workers::{
    Adapter, AdapterError, Invocation, InvocationRequest, Mode, PromptInput, SettingsFile,
    StateDirs,
};

use super::interrupt::Interrupt;
use super::stream::{Ending, Stream};
use super::tree::{prepare_dirs, TreeSetup};
use super::{io, Engine, EngineError, Observer};
use crate::prompt;
use crate::record::{ChainTarget, RunRecord, RunSpec};

/// What an attempt's prompt says besides the rules.
#[derive(Debug, Clone, Copy)]
pub(super) enum Brief<'a> {
    /// The task (a follow-up of the parent run's session, for `--continue`).
    Task,
    /// The task with an account of what an earlier worker did before it stopped.
    HandOff(&'a str),
    /// A failed `--verify` sent back to the worker (`--attempts`).
    Repair(&'a prompt::RepairBrief),
}

/// What every worker attempt of a run works in, whichever target or round it is: the run's
/// directory and tree, the interrupt that stops it, and who hears of its progress.
pub(super) struct AttemptCtx<'a> {
    pub(super) run_dir: &'a Path,
    pub(super) tree: &'a TreeSetup,
    pub(super) interrupt: &'a Interrupt,
    pub(super) observer: &'a mut dyn Observer,
}

/// How long descendants get between TERM and KILL.
pub(super) const GRACE: Duration = Duration::from_secs(3);

/// The keeper's report of what the sandbox enforced, kept in the run dir.
const SANDBOX_REPORT: &str = "sandbox.json";
/// The keeper's (or its init's) report of what holds the worker's process tree.
const CONTAINMENT_REPORT: &str = "containment.json";

/// How the note on refused writes begins: each attempt replaces it, with the count so far.
const BLOCKED_WRITES_NOTE: &str = "the sandbox refused writes in";

impl Engine {
    /// Fails now, not in the background, when the CLI is missing or cannot be invoked.
    pub(super) fn probe_invocation(
        &self,
        adapter: &dyn Adapter,
        spec: &RunSpec,
    ) -> Result<(), EngineError> {
        let req = self.invocation_request(spec, &spec.asked(), &spec.dir, &self.home.root, None);
        match adapter.invocation(&req) {
            Ok(_) => Ok(()),
            // The first thing a newcomer without a worker CLI sees: say what to do next.
            Err(AdapterError::NotFound(e)) => Err(EngineError::Refused(
                e.first_steps(&|name| self.env_var(name)),
            )),
            Err(e) => Err(EngineError::Refused(e.to_string())),
        }
    }

    /// What the adapter is told about an attempt on `target` (of the run's chain): mode, model,
    /// directories, the session to resume and the caller's environment.
    pub(super) fn invocation_request(
        &self,
        spec: &RunSpec,
        target: &ChainTarget,
        workdir: &Path,
        scratch: &Path,
        session: Option<String>,
    ) -> InvocationRequest {
        InvocationRequest {
            mode: spec.mode,
            model: target.model.clone(),
            effort: spec.effort.clone(),
            web: spec.web,
            workdir: workdir.to_path_buf(),
            dirs: StateDirs {
                shared: self
                    .home
                    .worker_state(&target.backend, spec.mode.as_str(), &spec.dir),
                scratch: scratch.to_path_buf(),
            },
            resume_session: session,
            prompt_file: prompt_file(scratch),
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

    /// One worker attempt: its invocation, its prompt (the task, a follow-up, the task with a
    /// hand-off account of what a previous worker did, or a failed check sent back), then the
    /// worker under the keeper.
    pub(super) fn attempt(
        &self,
        record: &mut RunRecord,
        ctx: &mut AttemptCtx<'_>,
        adapter: &dyn Adapter,
        session: Option<String>,
        brief: Brief<'_>,
        stream: &mut Stream,
    ) -> Result<Ending, EngineError> {
        let (run_dir, tree) = (ctx.run_dir, ctx.tree);
        let scratch = run_dir.join("scratch");
        let resumed = session.is_some();
        let target = record.attempt_target();
        let req = self.invocation_request(&record.spec, &target, &tree.workdir, &scratch, session);
        let invocation = adapter
            .invocation(&req)
            .map_err(|e| EngineError::Refused(e.to_string()))?;
        for note in &invocation.notes {
            if !record.warnings.contains(note) {
                record.warnings.push(note.clone());
            }
        }
        prepare_dirs(&req.dirs, &invocation.links);
        write_settings(&req.dirs, &invocation.files)?;

        let (mode, task) = (record.spec.mode, &record.spec.task);
        let mut prompt_text = match (brief, &record.spec.parent) {
            (Brief::HandOff(account), _) => prompt::handoff_prompt(mode, task, account),
            (Brief::Repair(failure), _) => prompt::repair_prompt(mode, task, failure, resumed),
            (Brief::Task, Some(_)) => prompt::follow_up_prompt(mode, task),
            (Brief::Task, None) => prompt::worker_prompt(mode, task),
        };
        if !(resumed && matches!(brief, Brief::Repair(_))) {
            // A resumed repair round's session has the attachments already.
            prompt_text.push_str(&prompt::attachments_block(&record.spec.attachments));
        }
        let prompt_path = req.prompt_file.clone();
        std::fs::write(&prompt_path, &prompt_text).map_err(io("writing the prompt"))?;
        let (args, stdin_file) = place_prompt(&invocation, &prompt_text, &prompt_path);

        let spec = KeeperSpec {
            program: invocation.program.clone(),
            args,
            cwd: tree.workdir.clone(),
            stdin_file,
            stderr_file: run_dir.join("stderr.log"),
            env: with_worker_cli(
                self.guarded_env(worker_env(&self.env, &invocation), tree, run_dir)?,
                own_cli_name(adapter.id(), &invocation.program),
            ),
            grace: GRACE,
            sandbox: self.worker_sandbox(record, run_dir, tree, adapter, &req, &invocation),
            containment_report: Some(run_dir.join(CONTAINMENT_REPORT)),
        };
        if tree.in_place.is_some() && spec.sandbox.is_none() {
            // The view was chosen for a Landlocked worker; never let one read the live tree
            // unconfined (its secrets unhidden, its writes landing in the project).
            return Err(EngineError::Refused(format!(
                "{} cannot be Landlocked, so it may not read the project in place; run it with {}=copy",
                record.backend(),
                super::READ_VIEW_ENV
            )));
        }
        let state_before = tree_bytes(&req.dirs.shared);
        let ending = self.stream_attempt(record, ctx, &spec, adapter, stream);
        note_sandbox(record, run_dir, spec.sandbox.is_some());
        note_state_growth(record, &req.dirs.shared, state_before);
        if record.reported_model.is_none() {
            // A CLI whose stream never names the model may keep it in its session data.
            if let Some(session) = &record.session {
                record.reported_model = adapter.session_model(&req.dirs, session);
            }
        }
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
        if let Some(reason) = self.landlock_off() {
            safety.landlock = Some(SandboxReport::skipped(&reason));
            return None;
        }
        let mut private_dirs = vec![req.dirs.scratch.clone(), req.dirs.shared.clone()];
        private_dirs.extend(
            invocation
                .env
                .iter()
                .filter(|(k, _)| {
                    pitroom_workers::is_state_dir_var(adapter.id(), &k.to_string_lossy())
                })
                .map(|(_, v)| PathBuf::from(v)),
        );
        let link_targets: Vec<PathBuf> = invocation.links.iter().map(|(_, t)| t.clone()).collect();
        let report = run_dir.join(SANDBOX_REPORT);
        let spec = tree_sandbox(record, tree, private_dirs, &link_targets, report);
        Some(self.confidential(record.spec.mode, run_dir, tree, spec))
    }

    /// Why Landlock is off, when the caller turned it off: `PITROOM_LANDLOCK=off`, or
    /// `PITROOM_PORTABLE` (which also turns off the namespaces, as off Linux).
    pub(super) fn landlock_off(&self) -> Option<String> {
        if self.portable() {
            Some(format!("turned off by {}", pitroom_proc::PORTABLE_ENV))
        } else if self.env_var(super::LANDLOCK_ENV).as_deref() == Some("off") {
            Some(format!("turned off with {}=off", super::LANDLOCK_ENV))
        } else {
            None
        }
    }

    /// Whether the caller runs Pitroom portable (`PITROOM_PORTABLE`, see
    /// [`pitroom_proc::PORTABLE_ENV`]).
    pub(super) fn portable(&self) -> bool {
        pitroom_proc::portable_value(
            self.env_var(pitroom_proc::PORTABLE_ENV)
                .as_deref()
                .map(std::ffi::OsStr::new),
        )
    }

    /// Puts the git guard around the worker's environment: the shim first on `PATH`, the
    /// hook and push rewrite in git's environment config, the repositories it protects, and a
    /// global git config of Pitroom's writing (the user's own, included) in `run_dir`.
    pub(super) fn guarded_env(
        &self,
        mut env: Vec<(OsString, OsString)>,
        tree: &TreeSetup,
        run_dir: &Path,
    ) -> Result<Vec<(OsString, OsString)>, EngineError> {
        let global = crate::guard_env::global_config_for_worker(&self.env, run_dir)
            .map_err(io("writing the worker's git config"))?;
        env.retain(|(k, _)| k != crate::guard_env::GIT_CONFIG_GLOBAL);
        env.push((crate::guard_env::GIT_CONFIG_GLOBAL.into(), global.into()));
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
}

/// The sandbox of anything that runs in the worker's tree — the worker, `--verify` — for a
/// run of `record`'s mode: `private_dirs` (plus the config's `sandbox_writable`) and
/// `link_targets` writable; the tree the patch covers writable in edit runs with its git dirs
/// bound read-only; a read run's tree read-only, and read in place with its secret-looking
/// files hidden. `report` is where the keeper says what held (a stale one is removed).
pub(super) fn tree_sandbox(
    record: &RunRecord,
    tree: &TreeSetup,
    mut private_dirs: Vec<PathBuf>,
    link_targets: &[PathBuf],
    report: PathBuf,
) -> SandboxSpec {
    private_dirs.extend(record.spec.sandbox_writable.iter().cloned());
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
    // A report left by an earlier attempt must not stand for this one's.
    crate::log::remove_file(&report, "the previous attempt's sandbox report");
    let spec = SandboxSpec::for_worker(access, &private_dirs, link_targets, report);
    match &tree.in_place {
        Some(view) => spec.reading_in_place(view.hidden.clone(), view.blank.clone()),
        None => spec,
    }
}

/// More than this left in a CLI's shared state by one run is told in the report: the state
/// persists between runs, and a worker may fill it with anything.
const STATE_GROWTH_NOTE_BYTES: u64 = 64 * 1024 * 1024;

/// How the note on a CLI's grown state begins.
const STATE_GROWTH_NOTE: &str = "the worker left";

/// Adds what an attempt left in the CLI's shared state dir (`shared`, `before` bytes when it
/// started) to the record, with a note past [`STATE_GROWTH_NOTE_BYTES`].
fn note_state_growth(record: &mut RunRecord, shared: &Path, before: u64) {
    let grown = tree_bytes(shared).saturating_sub(before);
    record.state_growth_bytes = record.state_growth_bytes.saturating_add(grown);
    record
        .warnings
        .retain(|w| !w.starts_with(STATE_GROWTH_NOTE));
    if record.state_growth_bytes > STATE_GROWTH_NOTE_BYTES {
        record.warnings.push(format!(
            "{STATE_GROWTH_NOTE} {} MiB in its CLI's state dir ({}), which persists between runs",
            record.state_growth_bytes / (1024 * 1024),
            shared.display()
        ));
    }
}

/// The bytes of the regular files beneath `dir`, links not followed.
fn tree_bytes(dir: &Path) -> u64 {
    let mut total = 0u64;
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            match entry.metadata() {
                Ok(meta) if meta.is_dir() => dirs.push(entry.path()),
                Ok(meta) if meta.is_file() => total = total.saturating_add(meta.len()),
                _ => {}
            }
        }
    }
    total
}

/// Tells the floor (`pitroom_guard::floor`) which CLI the worker is, so it may run itself again while other
/// agent CLIs are refused.
fn with_worker_cli(
    mut env: Vec<(OsString, OsString)>,
    own_cli: Option<OsString>,
) -> Vec<(OsString, OsString)> {
    if let Some(name) = own_cli {
        env.retain(|(k, _)| k != WORKER_CLI);
        env.push((WORKER_CLI.into(), name));
    }
    env
}

/// The agent CLI the floor lets a worker run as its own: a known CLI's program, whatever the
/// adapter launches (Qwen is started through `/bin/sh`, its retry follower), else the launched
/// program's name (a CLI described in the config).
fn own_cli_name(backend: &str, program: &Path) -> Option<OsString> {
    match pitroom_workers::facts(backend) {
        Some(facts) => Some(OsString::from(facts.program)),
        None => program.file_name().map(ToOwned::to_owned),
    }
}

/// Where the run's prompt is written before the launch: beside the attempt's scratch dir, in
/// the run directory (`prompt.md`).
fn prompt_file(scratch: &Path) -> PathBuf {
    scratch.with_file_name("prompt.md")
}

/// Writes the files a CLI reads its settings from, each replaced whole (a temp file renamed
/// over it, so a run starting at the same moment never reads half a file) and private (mode
/// 0600: settings may hold keys), into the CLI's private dirs reached without following a link
/// (a worker may have planted one there). A file that cannot be written stops the launch: the
/// CLI would run without its safety settings.
pub(super) fn write_settings(dirs: &StateDirs, files: &[SettingsFile]) -> Result<(), EngineError> {
    for file in files {
        write_private(dirs, &file.path, &file.content).map_err(|e| {
            EngineError::Refused(format!(
                "could not write the worker's settings file {}: {e}; check that the state dir \
                 (PITROOM_HOME) is writable",
                file.path.display()
            ))
        })?;
    }
    Ok(())
}

fn write_private(dirs: &StateDirs, path: &Path, content: &str) -> std::io::Result<()> {
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a file path",
        ));
    };
    super::tree::private_dir(dirs, parent)?.write_file(name, content.as_bytes())
}

/// The worker's argv and stdin: the prompt on stdin (the file, then EOF), or, where the
/// adapter says the CLI reads it nowhere else, whole as one argument with stdin closed.
pub(super) fn place_prompt(
    invocation: &Invocation,
    prompt: &str,
    file: &Path,
) -> (Vec<OsString>, Option<PathBuf>) {
    let mut args = invocation.args.clone();
    match invocation.prompt {
        PromptInput::Stdin => (args, Some(file.to_path_buf())),
        PromptInput::Argument { index } => {
            args.insert(index.min(args.len()), OsString::from(prompt));
            (args, None)
        }
    }
}

/// The worker's environment: the caller's, minus what the adapter removes, plus its settings
/// and Pitroom's floor (no prompts, pagers or editors; no recursive delegation).
pub(super) fn worker_env(
    base: &[(String, String)],
    inv: &pitroom_workers::Invocation,
) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = base
        .iter()
        .filter(|(k, _)| !inv.env_remove.iter().any(|r| r == k.as_str()))
        .filter(|(k, _)| !crate::secrets::SESSION_VARS.contains(&k.as_str()))
        .map(|(k, v)| (OsString::from(k), OsString::from(v)))
        .collect();
    let floor = [
        (pitroom_env::PITROOM_ACTIVE, "1"),
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
    let mut notes = containment_notes(safety.containment.as_ref());
    notes.extend(sandbox_notes(
        safety.landlock.as_ref(),
        safety.blocked_writes,
    ));
    // The count of refused writes grows from attempt to attempt: only the latest note stays.
    record
        .warnings
        .retain(|w| !w.starts_with(BLOCKED_WRITES_NOTE));
    for note in notes {
        if !record.warnings.contains(&note) {
            record.warnings.push(note);
        }
    }
}

/// The warning a containment report calls for: none when a PID namespace held the tree.
pub(super) fn containment_notes(report: Option<&ContainmentReport>) -> Vec<String> {
    match report {
        Some(r) if r.mechanism != Mechanism::PidNamespace => vec![format!(
            "no PID namespace for the worker ({}): if every Pitroom process were killed at once, its processes could outlive the run",
            r.reason.as_deref().unwrap_or("no reason given")
        )],
        _ => Vec::new(),
    }
}

/// The warnings a sandbox report and a count of refused writes call for: one for each layer
/// that did not hold. A function of what the keeper reported alone, so every wording is tested
/// without a keeper.
pub(super) fn sandbox_notes(report: Option<&SandboxReport>, blocked: u32) -> Vec<String> {
    let mut notes = Vec::new();
    if let Some(report) = report {
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
    if blocked > 0 {
        notes.push(format!(
            "{BLOCKED_WRITES_NOTE} {blocked} tool result(s) (Permission denied / Read-only file system)"
        ));
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_cli_launched_through_a_shell_is_still_its_own_cli_to_the_floor() {
        assert_eq!(
            own_cli_name("qwen", Path::new("/bin/sh")),
            Some(OsString::from("qwen"))
        );
        assert_eq!(
            own_cli_name("opencode", Path::new("/opt/x/opencode")),
            Some(OsString::from("opencode"))
        );
    }

    #[test]
    fn a_cli_described_in_the_config_is_its_launched_programs_name() {
        assert_eq!(
            own_cli_name("mycli", Path::new("/opt/tools/my-agent")),
            Some(OsString::from("my-agent"))
        );
    }

    #[test]
    fn the_worker_cli_variable_is_set_once() {
        let env = vec![(OsString::from(WORKER_CLI), OsString::from("planted"))];
        let env = with_worker_cli(env, Some(OsString::from("qwen")));
        assert_eq!(
            env,
            vec![(OsString::from(WORKER_CLI), OsString::from("qwen"))]
        );
    }
}
