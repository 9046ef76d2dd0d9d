//! The keeper: the one process that parents a worker.

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, SigSet, Signal};
use nix::sys::wait::WaitStatus;
use nix::unistd::Pid;

use crate::contain::{gain_namespace_rights, new_pid_namespace_for_children, ContainmentReport};
use crate::init::{init_argv, init_main, INIT_SUBCOMMAND};
use crate::landlock::{enter_sandbox, SandboxSpec};
use crate::tree::{reap_children, sleep_until_exit, terminate_descendants};
use crate::STOPPED_EXIT;

/// The internal subcommand that runs [`keeper_main`].
pub const KEEPER_SUBCOMMAND: &str = "__keeper";

/// What the keeper starts.
#[derive(Debug, Clone)]
pub struct KeeperSpec {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    pub cwd: PathBuf,
    /// Becomes the worker's stdin (the prompt); `None` means `/dev/null`.
    pub stdin_file: Option<PathBuf>,
    /// The worker's stderr is appended here.
    pub stderr_file: PathBuf,
    /// The worker's complete environment.
    pub env: Vec<(OsString, OsString)>,
    /// How long descendants get between TERM and KILL.
    pub grace: Duration,
    /// Layer 3: what the worker's tree may write (`None`: unconfined, e.g. a CLI with its own
    /// sandbox, or pitroom's own `--verify` command).
    pub sandbox: Option<SandboxSpec>,
    /// Where the keeper (or the init it starts) writes the [`ContainmentReport`]: which
    /// mechanism holds the worker's tree. `None`: not recorded.
    pub containment_report: Option<PathBuf>,
}

/// The supervisor's handle on a running keeper.
pub struct KeeperHandle {
    child: Child,
    /// The worker's stdout (the keeper passes its own stdout on).
    pub stdout: Option<ChildStdout>,
    /// Closing this pipe (or dying) tells the keeper its supervisor is gone.
    _lifeline: ChildStdin,
}

#[derive(Debug, thiserror::Error)]
#[error("could not start the worker keeper ({exe}): {source}")]
pub struct SpawnError {
    exe: String,
    source: std::io::Error,
}

/// Starts the keeper (this same executable, `exe`) for `spec`.
pub fn spawn_keeper(exe: &std::path::Path, spec: &KeeperSpec) -> Result<KeeperHandle, SpawnError> {
    let mut cmd = Command::new(exe);
    cmd.arg(KEEPER_SUBCOMMAND)
        .arg("--parent")
        .arg(std::process::id().to_string())
        .arg("--cwd")
        .arg(&spec.cwd)
        .arg("--stdin")
        .arg(spec.stdin_file.as_deref().unwrap_or("/dev/null".as_ref()))
        .arg("--stderr")
        .arg(&spec.stderr_file)
        .arg("--grace-ms")
        .arg(spec.grace.as_millis().to_string())
        .args(sandbox_args(spec.sandbox.as_ref()))
        .args(
            spec.containment_report
                .iter()
                .flat_map(|p| [OsString::from("--containment-report"), p.clone().into()]),
        )
        .arg("--")
        .arg(&spec.program)
        .args(&spec.args)
        .env_clear()
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        // Its own process group: a Ctrl-C on the terminal reaches the supervisor, which
        // decides; the keeper and worker are stopped in order, not all at once.
        .process_group(0);
    let mut child = cmd.spawn().map_err(|source| SpawnError {
        exe: exe.display().to_string(),
        source,
    })?;
    let stdout = child.stdout.take();
    let lifeline = child.stdin.take().ok_or_else(|| SpawnError {
        exe: exe.display().to_string(),
        source: std::io::Error::other("no lifeline pipe"),
    })?;
    Ok(KeeperHandle {
        child,
        stdout,
        _lifeline: lifeline,
    })
}

/// The sandbox as keeper flags (paths may hold any bytes, so no serialisation format).
pub(crate) fn sandbox_args(sandbox: Option<&SandboxSpec>) -> Vec<OsString> {
    let Some(sandbox) = sandbox else {
        return Vec::new();
    };
    let mut args: Vec<OsString> = vec![
        "--sandbox-report".into(),
        sandbox.report_file.clone().into(),
    ];
    for (flag, paths) in [
        ("--write-dir", &sandbox.writable_dirs),
        ("--write-file", &sandbox.writable_files),
        ("--ro-bind", &sandbox.read_only_binds),
        ("--hide", &sandbox.hidden_files),
        ("--mask", &sandbox.masked),
        ("--keep", &sandbox.state_kept),
    ] {
        for path in paths {
            args.push(flag.into());
            args.push(path.clone().into());
        }
    }
    if let Some(blank) = &sandbox.blank_file {
        args.push("--blank".into());
        args.push(blank.clone().into());
    }
    if let Some(blank) = &sandbox.blank_dir {
        args.push("--blank-dir".into());
        args.push(blank.clone().into());
    }
    if let Some(dir) = &sandbox.state_dir {
        args.push("--state-dir".into());
        args.push(dir.clone().into());
    }
    for (replacement, covered) in &sandbox.covers {
        args.extend([
            "--cover".into(),
            replacement.clone().into(),
            covered.clone().into(),
        ]);
    }
    if sandbox.strict {
        args.push("--strict".into());
    }
    args
}

impl KeeperHandle {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Asks the keeper to end the worker's whole tree.
    pub fn request_stop(&self) {
        let _ = kill(Pid::from_raw(self.child.id() as i32), Signal::SIGTERM);
    }

    /// The keeper's exit code if it has exited (the worker's code, `128+signal`, or
    /// [`STOPPED_EXIT`]).
    pub fn try_wait(&mut self) -> Option<i32> {
        match self.child.try_wait() {
            Ok(Some(status)) => Some(exit_code(status)),
            Ok(None) => None,
            Err(_) => Some(1),
        }
    }

    /// Waits at most `limit`; past it the keeper is killed and the caller must sweep. The
    /// keeper's exit ends the wait at once (no polling interval is added to every run's end).
    pub fn wait_bounded(&mut self, limit: Duration) -> i32 {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(code) = self.try_wait() {
                return code;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            sleep_until_exit(self.child.id() as i32, left);
        }
        let _ = self.child.kill();
        self.child.wait().map(exit_code).unwrap_or(1)
    }
}

fn exit_code(status: std::process::ExitStatus) -> i32 {
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1)
}

/// Parsed `__keeper` arguments.
struct KeeperArgs {
    parent: i32,
    cwd: PathBuf,
    stdin: PathBuf,
    stderr: PathBuf,
    grace: Duration,
    sandbox: Option<SandboxSpec>,
    containment_report: Option<PathBuf>,
    program: OsString,
    args: Vec<OsString>,
}

/// Takes one sandbox flag (`--sandbox-report` first, then the path lists, `--blank` and the
/// bare `--strict`) and its value from `it` into `sandbox`; `None` for an unknown flag or a
/// missing value.
pub(crate) fn parse_sandbox_flag<'a>(
    flag: &str,
    it: &mut impl Iterator<Item = &'a OsString>,
    sandbox: &mut Option<SandboxSpec>,
) -> Option<()> {
    if flag == "--strict" {
        sandbox.as_mut()?.strict = true;
        return Some(());
    }
    let value: PathBuf = it.next()?.into();
    if flag == "--cover" {
        let covered: PathBuf = it.next()?.into();
        sandbox.as_mut()?.covers.push((value, covered));
        return Some(());
    }
    match flag {
        "--sandbox-report" => sandbox.get_or_insert_with(SandboxSpec::default).report_file = value,
        "--write-dir" => sandbox.as_mut()?.writable_dirs.push(value),
        "--write-file" => sandbox.as_mut()?.writable_files.push(value),
        "--ro-bind" => sandbox.as_mut()?.read_only_binds.push(value),
        "--hide" => sandbox.as_mut()?.hidden_files.push(value),
        "--blank" => sandbox.as_mut()?.blank_file = Some(value),
        "--mask" => sandbox.as_mut()?.masked.push(value),
        "--blank-dir" => sandbox.as_mut()?.blank_dir = Some(value),
        "--keep" => sandbox.as_mut()?.state_kept.push(value),
        "--state-dir" => sandbox.as_mut()?.state_dir = Some(value),
        _ => return None,
    }
    Some(())
}

fn parse_args(argv: &[OsString]) -> Option<KeeperArgs> {
    let mut it = argv.iter();
    let mut parent = None;
    let mut cwd = None;
    let mut stdin = None;
    let mut stderr = None;
    let mut grace = Duration::from_secs(3);
    let mut sandbox: Option<SandboxSpec> = None;
    let mut containment_report = None;
    while let Some(flag) = it.next() {
        match flag.to_str()? {
            "--parent" => parent = it.next()?.to_str()?.parse().ok(),
            "--cwd" => cwd = Some(PathBuf::from(it.next()?)),
            "--stdin" => stdin = Some(PathBuf::from(it.next()?)),
            "--stderr" => stderr = Some(PathBuf::from(it.next()?)),
            "--grace-ms" => grace = Duration::from_millis(it.next()?.to_str()?.parse().ok()?),
            "--containment-report" => containment_report = Some(PathBuf::from(it.next()?)),
            "--" => break,
            other => parse_sandbox_flag(other, &mut it, &mut sandbox)?,
        }
    }
    let program = it.next()?.clone();
    Some(KeeperArgs {
        parent: parent?,
        cwd: cwd?,
        stdin: stdin?,
        stderr: stderr?,
        grace,
        sandbox,
        containment_report,
        program,
        args: it.cloned().collect(),
    })
}

/// Entry point of `pitroom __keeper …` (everything after the subcommand). Returns the exit code.
pub fn keeper_main(argv: &[OsString]) -> i32 {
    let Some(args) = parse_args(argv) else {
        eprintln!("pitroom: internal keeper invoked with bad arguments");
        return 2;
    };
    // Before the guardian's thread starts: a user namespace needs a single-threaded process.
    let namespace_rights = gain_namespace_rights();
    if become_guardian(&args).is_err() {
        return STOPPED_EXIT;
    }
    let worker = match start_worker(&args, namespace_rights) {
        Ok(child) => child.id() as i32,
        Err(e) => {
            // Through a descriptor opened before the sandbox, which may not allow the path.
            if let Ok(mut log) = OpenOptions::new().append(true).open(&args.stderr) {
                let _ = writeln!(
                    log,
                    "pitroom: could not start {}: {e}",
                    args.program.to_string_lossy()
                );
            }
            return 127;
        }
    };
    reap_until_exit(worker, &args)
}

/// The signals the keeper waits for instead of handling: a child's exit, and the three ways
/// to be told to stop (its supervisor's TERM, the parent-death signal, a hang-up).
pub(crate) fn waited_signals() -> SigSet {
    let mut set = SigSet::empty();
    for signal in [
        Signal::SIGCHLD,
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGHUP,
    ] {
        set.add(signal);
    }
    set
}

/// Makes this process the subreaper of everything the worker starts, and arranges to notice
/// the supervisor's death three ways: the parent-death signal, the lifeline pipe reaching EOF,
/// and the parent pid changing.
fn become_guardian(args: &KeeperArgs) -> Result<(), ()> {
    crate::platform::become_subreaper();
    // Blocked before any thread starts, so every thread inherits the mask and the signals
    // stay pending for `sigtimedwait`. The worker gets a clean mask (`spawn_in_own_session`).
    waited_signals().thread_block().map_err(|_| ())?;
    crate::platform::die_with_parent(Signal::SIGTERM);
    if nix::unistd::getppid().as_raw() != args.parent {
        return Err(());
    }
    std::thread::spawn(|| {
        let mut sink = [0u8; 64];
        let mut stdin = std::io::stdin();
        while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
        let _ = kill(nix::unistd::getpid(), Signal::SIGTERM);
    });
    Ok(())
}

/// Starts the worker's tree: an init in a PID namespace of its own that starts the worker
/// (and enters the sandbox), or — where no namespace can be made — the worker itself, confined
/// here. The child returned is the one whose exit ends the run.
fn start_worker(args: &KeeperArgs, rights: Result<(), String>) -> std::io::Result<Child> {
    let stdin = File::open(&args.stdin)?;
    let stderr = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&args.stderr)?;
    match rights.and_then(|()| new_pid_namespace_for_children()) {
        Ok(()) => start_init(args, stdin, stderr),
        Err(reason) => {
            let report = ContainmentReport {
                tree_mark: crate::platform::tree_mark(),
                ..ContainmentReport::sweep(reason)
            };
            write_containment(args, &report);
            start_unnamespaced(args, stdin, stderr)
        }
    }
}

/// The init is this executable again (through `/proc/self/exe`, which works even if the file
/// was replaced meanwhile), as PID 1 of the namespace made for this thread's next child.
fn start_init(args: &KeeperArgs, stdin: File, stderr: File) -> std::io::Result<Child> {
    let argv = init_argv(
        std::process::id(),
        args.containment_report.as_ref(),
        &sandbox_args(args.sandbox.as_ref()),
        &args.program,
        &args.args,
    );
    let mut cmd = Command::new("/proc/self/exe");
    cmd.arg0("pitroom")
        .args(argv)
        .current_dir(&args.cwd)
        .stdin(stdin)
        .stdout(Stdio::inherit())
        .stderr(stderr);
    #[cfg(target_os = "linux")]
    // SAFETY: capget, capset and prctl: system calls that touch no Rust state.
    unsafe {
        cmd.pre_exec(crate::contain::keep_mount_right_across_exec);
    }
    spawn_init_in_own_session(cmd)
}

fn write_containment(args: &KeeperArgs, report: &ContainmentReport) {
    let Some(path) = &args.containment_report else {
        return;
    };
    let written = File::create(path).and_then(|mut file| report.write_to(&mut file));
    if let Err(e) = written {
        if let Ok(mut log) = OpenOptions::new().append(true).open(&args.stderr) {
            let _ = writeln!(log, "pitroom: could not write {}: {e}", path.display());
        }
    }
}

fn start_unnamespaced(args: &KeeperArgs, stdin: File, stderr: File) -> std::io::Result<Child> {
    let wrapper = confine_or_harden(args.sandbox.as_ref(), &mut &stderr)?;
    let mut cmd = worker_command(&wrapper, &args.program, &args.args);
    cmd.current_dir(&args.cwd)
        .stdin(stdin)
        .stdout(Stdio::inherit())
        .stderr(stderr);
    // Without a subreaper, an orphan that also left the worker's session is found by this.
    if let Some(mark) = crate::platform::tree_mark() {
        cmd.env(crate::platform::TREE_MARK_ENV, mark);
    }
    spawn_in_own_session(cmd)
}

/// The worker's command: `program args`, behind `wrapper` when its sandbox is one a process
/// is started under (Seatbelt's `sandbox-exec … --`) rather than one entered before the fork.
pub(crate) fn worker_command(
    wrapper: &[OsString],
    program: &OsString,
    args: &[OsString],
) -> Command {
    let Some((first, rest)) = wrapper.split_first() else {
        let mut cmd = Command::new(program);
        cmd.args(args);
        return cmd;
    };
    let mut cmd = Command::new(first);
    cmd.args(rest).arg(program).args(args);
    cmd
}

/// Starts the worker `cmd` as the leader of a session of its own: no terminal reaches it, and
/// its process group is the one the sweep and the init end. Its signal mask is emptied: the
/// keeper and the init block the signals they wait for, a child inherits that mask (`Command`
/// does not reset it), and a worker with SIGTERM blocked ignores the sweep's SIGTERM, so every
/// stop waited out the grace period for the SIGKILL.
pub(crate) fn spawn_in_own_session(cmd: Command) -> std::io::Result<Child> {
    spawn_session(cmd, true)
}

/// Starts the init like [`spawn_in_own_session`], but with the keeper's mask kept: a stop that
/// arrives before the init blocks the signals itself stays pending instead of being dropped
/// (PID 1 drops signals it neither handles nor blocks).
fn spawn_init_in_own_session(cmd: Command) -> std::io::Result<Child> {
    spawn_session(cmd, false)
}

fn spawn_session(mut cmd: Command, clear_mask: bool) -> std::io::Result<Child> {
    // SAFETY: setsid and sigprocmask are async-signal-safe and touch no Rust state.
    unsafe {
        cmd.pre_exec(move || {
            nix::unistd::setsid().map_err(std::io::Error::from)?;
            if clear_mask {
                nix::sys::signal::sigprocmask(
                    nix::sys::signal::SigmaskHow::SIG_SETMASK,
                    Some(&nix::sys::signal::SigSet::empty()),
                    None,
                )
                .map_err(std::io::Error::from)?;
            }
            Ok(())
        });
    }
    let child = cmd.spawn()?;
    // The child is its session's leader: its pid is the session id the sweep hunts by where
    // there is no subreaper (macOS).
    if let Ok(sid) = i32::try_from(child.id()) {
        crate::platform::remember_session(sid);
    }
    Ok(child)
}

/// Confines this (main) thread before it forks the worker, so the worker's whole tree
/// inherits the sandbox; the lifeline thread stays outside, which is harmless (it only reads
/// its pipe and signals this process). The report goes through a descriptor opened first.
/// On macOS the sandbox is a Seatbelt profile the worker is started under: the command line
/// that starts it so is returned (empty elsewhere).
///
/// A strict sandbox (the worker reads the live project in place) that did not hold fails: the
/// worker is not started, rather than started able to write the project or read its secrets.
pub(crate) fn confine(sandbox: &SandboxSpec) -> std::io::Result<Vec<OsString>> {
    let mut report_file = File::create(&sandbox.report_file)?;
    let mut report = enter_sandbox(sandbox);
    let wrapper = if cfg!(target_os = "macos") {
        crate::seatbelt::confine_with(
            sandbox,
            &mut report,
            std::path::Path::new(crate::seatbelt::SANDBOX_EXEC),
        )
    } else {
        Vec::new()
    };
    report.hardening = crate::harden::harden();
    let json = serde_json::to_string(&report).map_err(std::io::Error::other)?;
    report_file.write_all(json.as_bytes())?;
    match sandbox.strict_failure(&report) {
        Some(why) => Err(std::io::Error::other(format!(
            "the read-only view of the project did not hold: {why}"
        ))),
        None => Ok(wrapper),
    }
}

/// Confines this thread to `sandbox` (and takes every privilege away from it, `harden`). A
/// worker Pitroom does not sandbox — a CLI with its own, Codex — keeps what it was started
/// with: its bubblewrap, run by root, takes root's privileged path and needs root's
/// capabilities; `log` (the worker's log) says so when there are any to keep.
pub(crate) fn confine_or_harden(
    sandbox: Option<&SandboxSpec>,
    log: &mut dyn Write,
) -> std::io::Result<Vec<OsString>> {
    match sandbox {
        Some(sandbox) => confine(sandbox),
        None => {
            if crate::landlock::has_any_capability() {
                writeln!(
                    log,
                    "pitroom: the worker keeps its capabilities: it runs in its own sandbox, not Pitroom's"
                )?;
            }
            Ok(Vec::new())
        }
    }
}

fn reap_until_exit(worker: i32, args: &KeeperArgs) -> i32 {
    let signals = waited_signals();
    loop {
        for (pid, status) in reap_children() {
            if pid == worker {
                // The worker is done; whatever it left running in the background goes too.
                terminate_descendants(Duration::from_millis(500));
                return status_code(status);
            }
        }
        if nix::unistd::getppid().as_raw() != args.parent {
            terminate_descendants(args.grace);
            return STOPPED_EXIT;
        }
        match wait_for_signal(&signals, Duration::from_millis(250)) {
            Some(libc::SIGCHLD) | None => {}
            Some(_) => {
                terminate_descendants(args.grace);
                return STOPPED_EXIT;
            }
        }
    }
}

/// Waits for one of `signals` (blocked in this thread) for at most `limit`.
pub(crate) fn wait_for_signal(signals: &SigSet, limit: Duration) -> Option<i32> {
    crate::platform::wait_for_signal(signals, limit)
}

pub(crate) fn status_code(status: WaitStatus) -> i32 {
    match status {
        WaitStatus::Exited(_, code) => code,
        WaitStatus::Signaled(_, signal, _) => 128 + signal as i32,
        _ => 1,
    }
}

/// Runs the keeper or the init when `argv[1]` names one (checked before any other start-up
/// work: both start often and must start fast) and returns its exit code; `None` otherwise.
pub fn internal_main(argv: &[OsString]) -> Option<i32> {
    let rest = argv.get(2..).unwrap_or_default();
    match argv.get(1).and_then(|a| a.to_str()) {
        Some(KEEPER_SUBCOMMAND) => Some(keeper_main(rest)),
        Some(INIT_SUBCOMMAND) => Some(init_main(rest)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_behind_a_wrapper_is_its_arguments_after_the_wrappers_own() {
        let os = |list: &[&str]| list.iter().map(OsString::from).collect::<Vec<_>>();
        let (program, args) = (OsString::from("opencode"), os(&["run", "task"]));

        let bare = worker_command(&[], &program, &args);
        assert_eq!(bare.get_program(), "opencode");
        assert_eq!(bare.get_args().collect::<Vec<_>>(), ["run", "task"]);

        let wrapped = worker_command(
            &os(&["/usr/bin/sandbox-exec", "-p", "(version 1)", "--"]),
            &program,
            &args,
        );
        assert_eq!(wrapped.get_program(), "/usr/bin/sandbox-exec");
        assert_eq!(
            wrapped.get_args().collect::<Vec<_>>(),
            ["-p", "(version 1)", "--", "opencode", "run", "task"]
        );
    }

    #[test]
    fn keeper_arguments_round_trip() {
        let argv: Vec<OsString> = [
            "--parent",
            "42",
            "--cwd",
            "/w",
            "--stdin",
            "/p",
            "--stderr",
            "/e",
            "--grace-ms",
            "250",
            "--",
            "opencode",
            "run",
            "--format",
            "json",
        ]
        .iter()
        .map(OsString::from)
        .collect();
        let a = parse_args(&argv).expect("parses");
        assert_eq!(a.parent, 42);
        assert_eq!(a.grace, Duration::from_millis(250));
        assert_eq!(a.program, "opencode");
        assert_eq!(a.args.len(), 3);
    }

    #[test]
    fn sandbox_flags_round_trip() {
        let sandbox = SandboxSpec {
            writable_dirs: vec!["/run/scratch".into(), "/state".into()],
            writable_files: vec!["/dev/null".into()],
            read_only_binds: vec!["/w/.git".into()],
            hidden_files: vec!["/w/.env".into(), "/w/certs/a b.pem".into()],
            blank_file: Some("/run/blank".into()),
            masked: vec!["/tmp/tmux-0".into(), "/home/u/.ssh".into()],
            blank_dir: Some("/run/blank.d".into()),
            covers: vec![("/run/git-config".into(), "/w/.git/config".into())],
            state_dir: Some("/state".into()),
            state_kept: vec!["/state/runs/r1".into(), "/state/bin".into()],
            strict: true,
            report_file: "/run/sandbox.json".into(),
        };
        let mut argv: Vec<OsString> = [
            "--parent", "1", "--cwd", "/w", "--stdin", "/p", "--stderr", "/e",
        ]
        .iter()
        .map(OsString::from)
        .collect();
        argv.extend(sandbox_args(Some(&sandbox)));
        argv.extend(["--", "worker"].iter().map(OsString::from));
        let parsed = parse_args(&argv).expect("parses");
        assert_eq!(parsed.sandbox, Some(sandbox));
        assert_eq!(
            parse_args(
                &argv[..8]
                    .iter()
                    .cloned()
                    .chain(["--".into(), "w".into()])
                    .collect::<Vec<_>>()
            )
            .expect("parses")
            .sandbox,
            None
        );
    }

    #[test]
    fn keeper_without_program_is_rejected() {
        let argv: Vec<OsString> = ["--parent", "1", "--cwd", "/", "--"]
            .iter()
            .map(OsString::from)
            .collect();
        assert!(parse_args(&argv).is_none());
    }
}
