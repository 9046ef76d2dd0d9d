//! The init: PID 1 of a worker's PID namespace (internal subcommand `__init`).
//!
//! The keeper starts it in a fresh PID namespace; it starts the worker and reaps everything
//! that is orphaned inside. Its parent-death signal is SIGKILL, so when the keeper dies — even
//! by SIGKILL, together with the supervisor — the init dies and the kernel kills every process
//! left in the namespace. When the worker exits, the init asks the rest to end (SIGTERM),
//! gives them a moment, and exits; the kernel kills whatever is left.

use std::ffi::OsString;
use std::fs::File;
use std::path::PathBuf;
use std::process::Child;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::contain::{mount_own_proc, ContainmentReport, Mechanism};
use crate::keeper::{
    confine_or_harden, parse_sandbox_flag, spawn_in_own_session, status_code, wait_for_signal,
    waited_signals, worker_command,
};
use crate::landlock::SandboxSpec;
use crate::tree::{has_no_children, reap_children};
use crate::STOPPED_EXIT;

/// The internal subcommand that runs `init_main`.
pub const INIT_SUBCOMMAND: &str = "__init";

/// How long the worker's leftovers get between the init's SIGTERM and the kernel's SIGKILL
/// once the worker has exited (the keeper gave them as long before namespaces).
const LEFTOVER_GRACE: Duration = Duration::from_millis(500);

/// Parsed `__init` arguments.
#[derive(Debug)]
pub(crate) struct InitArgs {
    /// The keeper's pid as the host sees it: the init's parent.
    pub keeper: i32,
    pub report: Option<PathBuf>,
    pub sandbox: Option<SandboxSpec>,
    pub program: OsString,
    pub args: Vec<OsString>,
}

/// The `__init` command line for `args` (without the executable).
pub(crate) fn init_argv(
    keeper: u32,
    report: Option<&PathBuf>,
    sandbox: &[OsString],
    program: &OsString,
    args: &[OsString],
) -> Vec<OsString> {
    let mut argv: Vec<OsString> = vec![
        INIT_SUBCOMMAND.into(),
        "--keeper".into(),
        keeper.to_string().into(),
    ];
    if let Some(report) = report {
        argv.push("--report".into());
        argv.push(report.clone().into());
    }
    argv.extend(sandbox.iter().cloned());
    argv.push("--".into());
    argv.push(program.clone());
    argv.extend(args.iter().cloned());
    argv
}

fn parse_args(argv: &[OsString]) -> Option<InitArgs> {
    let mut it = argv.iter();
    let mut keeper = None;
    let mut report = None;
    let mut sandbox = None;
    while let Some(flag) = it.next() {
        match flag.to_str()? {
            "--keeper" => keeper = it.next()?.to_str()?.parse().ok(),
            "--report" => report = Some(PathBuf::from(it.next()?)),
            "--" => break,
            other => parse_sandbox_flag(other, &mut it, &mut sandbox)?,
        }
    }
    Some(InitArgs {
        keeper: keeper?,
        report,
        sandbox,
        program: it.next()?.clone(),
        args: it.cloned().collect(),
    })
}

/// Entry point of `pitroom __init …` (everything after the subcommand). Returns the exit code.
pub fn init_main(argv: &[OsString]) -> i32 {
    let Some(args) = parse_args(argv) else {
        eprintln!("pitroom: internal init invoked with bad arguments");
        return 2;
    };
    // Die with the keeper; and if it is already gone (it died before the prctl), do not start.
    crate::platform::die_with_parent(Signal::SIGKILL);
    if !parent_is(args.keeper) {
        return STOPPED_EXIT;
    }
    // Opened before the sandbox, which may not allow the path.
    let mut report_file = args.report.as_ref().and_then(|p| File::create(p).ok());
    let own_proc = mount_own_proc();
    let report = ContainmentReport {
        mechanism: Mechanism::PidNamespace,
        own_proc: own_proc.is_ok(),
        reason: own_proc.err(),
        tree_mark: None,
    };
    if let Some(file) = report_file.as_mut() {
        if let Err(e) = report.write_to(file) {
            eprintln!("pitroom: could not write the containment report: {e}");
        }
    }
    // stderr is the run's worker log.
    let wrapper = match confine_or_harden(args.sandbox.as_ref(), &mut std::io::stderr()) {
        Ok(wrapper) => wrapper,
        Err(e) => {
            eprintln!("pitroom: could not enter the sandbox: {e}");
            return 127;
        }
    };
    // Blocked before the worker starts (and inherited blocked from the keeper), so no signal
    // is lost; the worker gets a clean mask (`spawn_in_own_session`). (PID 1 drops signals it
    // neither handles nor blocks.)
    if waited_signals().thread_block().is_err() {
        return STOPPED_EXIT;
    }
    match start_worker(&args, &wrapper) {
        Ok(child) => reap_until_worker_exits(child.id() as i32),
        Err(e) => {
            // stderr is the run's worker log.
            eprintln!(
                "pitroom: could not start {}: {e}",
                args.program.to_string_lossy()
            );
            127
        }
    }
}

/// The parent's pid from `/proc/self/stat` — the host's `/proc`, read before a private one is
/// mounted (inside the namespace `getppid` says 0).
fn host_parent_pid() -> Option<i32> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let rest = stat.get(stat.rfind(')')? + 2..)?;
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// Whether the keeper is still this process's parent. The host's `/proc` never shows 0 there
/// (the keeper is in the host's namespace); an emulated one can — qemu-user builds
/// `/proc/self/stat` from `getppid`, which says 0 in the namespace — and then the parent-death
/// signal alone stands for the check.
fn parent_is(keeper: i32) -> bool {
    match host_parent_pid() {
        Some(0) => true,
        parent => parent == Some(keeper),
    }
}

fn start_worker(args: &InitArgs, wrapper: &[std::ffi::OsString]) -> std::io::Result<Child> {
    spawn_in_own_session(worker_command(wrapper, &args.program, &args.args))
}

/// Reaps every process orphaned into the namespace; passes a stop request on to all of them;
/// returns the worker's exit code once it is gone and the rest had their moment.
fn reap_until_worker_exits(worker: i32) -> i32 {
    let signals = waited_signals();
    loop {
        for (pid, status) in reap_children() {
            if pid == worker {
                end_leftovers(&signals);
                return status_code(status);
            }
        }
        match wait_for_signal(&signals, Duration::from_millis(250)) {
            Some(libc::SIGCHLD) | None => {}
            Some(signo) => forward_to_namespace(signo),
        }
    }
}

/// SIGTERM to everything left in the namespace, then up to [`LEFTOVER_GRACE`] for it to exit.
/// Whatever is still there when the init returns is killed by the kernel.
fn end_leftovers(signals: &nix::sys::signal::SigSet) {
    forward_to_namespace(libc::SIGTERM);
    let deadline = Instant::now() + LEFTOVER_GRACE;
    while Instant::now() < deadline {
        reap_children();
        if has_no_children() {
            return;
        }
        wait_for_signal(signals, Duration::from_millis(20));
    }
}

/// From PID 1, pid -1 means every other process in this namespace.
fn forward_to_namespace(signo: i32) {
    if let Ok(signal) = Signal::try_from(signo) {
        let _ = kill(Pid::from_raw(-1), signal);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn init_arguments_round_trip_with_and_without_a_sandbox() {
        let sandbox = SandboxSpec {
            writable_dirs: vec!["/scratch".into()],
            writable_files: vec!["/dev/null".into()],
            read_only_binds: vec!["/w/.git".into()],
            hidden_files: vec!["/w/.env".into()],
            blank_file: Some("/run/blank".into()),
            masked: vec!["/run/user/0/bus".into()],
            blank_dir: Some("/run/blank.d".into()),
            covers: vec![("/run/git-config".into(), "/w/.git/config".into())],
            state_dir: Some("/state".into()),
            state_kept: vec!["/state/runs/r1".into()],
            strict: true,
            report_file: "/run/sandbox.json".into(),
        };
        let flags = crate::keeper::sandbox_args(Some(&sandbox));
        let report = PathBuf::from("/run/containment.json");
        let argv = init_argv(
            42,
            Some(&report),
            &flags,
            &"opencode".into(),
            &["run".into(), "--".into()],
        );
        assert_eq!(argv[0], INIT_SUBCOMMAND);
        let parsed = parse_args(&argv[1..]).expect("parses");
        assert_eq!(parsed.keeper, 42);
        assert_eq!(parsed.report, Some(report));
        assert_eq!(parsed.sandbox, Some(sandbox));
        assert_eq!(parsed.program, "opencode");
        assert_eq!(parsed.args, vec![OsString::from("run"), "--".into()]);

        let bare = init_argv(7, None, &[], &"w".into(), &[]);
        let parsed = parse_args(&bare[1..]).expect("parses");
        assert_eq!(
            (parsed.keeper, parsed.report, parsed.sandbox),
            (7, None, None)
        );
    }

    #[test]
    fn init_without_keeper_or_program_is_rejected() {
        let argv: Vec<OsString> = ["--", "w"].iter().map(OsString::from).collect();
        assert!(parse_args(&argv).is_none());
        let argv: Vec<OsString> = ["--keeper", "1", "--"].iter().map(OsString::from).collect();
        assert!(parse_args(&argv).is_none());
    }

    #[test]
    fn the_host_parent_pid_is_read_from_proc() {
        assert_eq!(
            host_parent_pid(),
            Some(nix::unistd::getppid().as_raw()),
            "outside a namespace the two agree"
        );
    }
}
