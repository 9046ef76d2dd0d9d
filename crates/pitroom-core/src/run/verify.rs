//! Verify: the primary agent's own check (`--verify`: tests, a build), run in the worker's
//! directory once the worker is done. A failure fails the run (exit 6). The check runs the
//! worker's code, so it runs confined like the worker (sandbox, git guard, PID namespace,
//! time limit), and an edit run's changes are taken again after it.

use std::ffi::OsString;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use pitroom_proc::{
    spawn_keeper, AfterLine, Bounds, Decision, KeeperSpec, SandboxReport, SandboxSpec, Watcher,
};

use super::interrupt::Interrupt;
use super::launch::{tree_sandbox, GRACE};
use super::tree::TreeSetup;
use super::{Engine, EngineError};
use crate::record::{RunRecord, RunState};

impl Engine {
    /// Runs `--verify` in the worker's directory with a time limit, through a keeper so nothing
    /// it starts survives. A failure fails the run (exit 6); the output is kept in verify.log.
    /// A stop or the run's deadline ends the command at once and returns
    /// [`EngineError::Interrupted`], its outcome recorded as not passed.
    pub(super) fn run_verify(
        &self,
        record: &mut RunRecord,
        run_dir: &Path,
        tree: &TreeSetup,
        interrupt: &Interrupt,
    ) -> Result<(), EngineError> {
        let Some(command) = record.spec.verify.clone() else {
            return Ok(());
        };
        let log_path = run_dir.join("verify.log");
        let spec = KeeperSpec {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), format!("exec 2>&1\n{command}").into()],
            cwd: tree.workdir.clone(),
            stdin_file: None,
            stderr_file: log_path.clone(),
            env: self.verify_env(tree, run_dir)?,
            grace: GRACE,
            sandbox: self.verify_sandbox(record, tree, run_dir),
            containment_report: None,
        };
        let limit = record.spec.verify_timeout;
        let started = Instant::now();
        let mut check = Check {
            log: None,
            tail: std::collections::VecDeque::new(),
            interrupt,
            deadline: started + limit,
            timed_out: false,
            interrupted: false,
        };
        let code = match spawn_keeper(&self.exe, &spec) {
            Ok(mut keeper) => {
                check.log = File::create(&log_path).ok();
                let bounds = Bounds {
                    exit_wait: GRACE + Duration::from_secs(5),
                    drain: Duration::from_secs(1),
                };
                Some(pitroom_proc::drive(&mut keeper, &mut check, bounds).code)
            }
            Err(e) => {
                check.tail.push_back(e.to_string());
                None
            }
        };
        let Check {
            tail,
            timed_out,
            interrupted,
            ..
        } = check;
        let failure = verify_failure(&command, limit, timed_out, code);
        let outcome = crate::record::VerifyOutcome {
            command: command.clone(),
            passed: failure.is_none() && !interrupted,
            exit_code: code.filter(|_| !timed_out && !interrupted),
            timed_out,
            duration: crate::record::whole_millis(started.elapsed()),
            tail: tail.into_iter().collect::<Vec<_>>().join("\n"),
        };
        record.verify = Some(outcome);
        let safety = record.safety.get_or_insert_with(Default::default);
        safety.verify_sandbox = match &spec.sandbox {
            Some(sandbox) => SandboxReport::read(&sandbox.report_file),
            None => {
                Some(SandboxReport::skipped(&self.landlock_off().unwrap_or_else(
                    || "turned off with PITROOM_LANDLOCK=off".into(),
                )))
            }
        };
        if interrupted {
            return Err(EngineError::Interrupted);
        }
        if let Some(error) = failure {
            record.state = RunState::Failed;
            record.error = Some(error);
        }
        Ok(())
    }
}

impl Engine {
    /// The check's environment: the caller's, with the git guard around it (the worker's own
    /// code runs in it: a test that imports what the worker edited) and its temp and cache
    /// dirs in the run's `verify/` dir, which its sandbox lets it write.
    fn verify_env(
        &self,
        tree: &TreeSetup,
        run_dir: &Path,
    ) -> Result<Vec<(OsString, OsString)>, EngineError> {
        let dirs = verify_dirs(run_dir);
        for dir in [&dirs.tmp, &dirs.cache] {
            std::fs::create_dir_all(dir).map_err(super::io("making the --verify temp dir"))?;
        }
        let mut env: Vec<(OsString, OsString)> = self
            .env
            .iter()
            .filter(|(k, _)| !crate::secrets::SESSION_VARS.contains(&k.as_str()))
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect();
        for (k, v) in [
            (pitroom_env::PITROOM_ACTIVE, OsString::from("1")),
            ("TMPDIR", dirs.tmp.into_os_string()),
            ("XDG_CACHE_HOME", dirs.cache.into_os_string()),
        ] {
            env.retain(|(existing, _)| existing != k);
            env.push((k.into(), v));
        }
        self.guarded_env(env, tree, run_dir)
    }

    /// The check runs the worker's code, so it is confined like the worker: the same tree
    /// rules for the run's mode (the git dirs read-only, a read run's tree read-only and its
    /// secrets hidden), its own `verify/` dir writable; `None` only when Landlock is turned
    /// off. A CLI that keeps its own sandbox does not matter here: this is Pitroom's command.
    fn verify_sandbox(
        &self,
        record: &RunRecord,
        tree: &TreeSetup,
        run_dir: &Path,
    ) -> Option<SandboxSpec> {
        if self.landlock_off().is_some() {
            return None;
        }
        let dirs = verify_dirs(run_dir);
        let spec = tree_sandbox(
            record,
            tree,
            vec![dirs.root],
            &[],
            run_dir.join(VERIFY_SANDBOX_REPORT),
        );
        Some(self.confidential(record.spec.mode, run_dir, tree, spec))
    }
}

/// Where the keeper reports what the check's sandbox held.
const VERIFY_SANDBOX_REPORT: &str = "verify-sandbox.json";

/// The check's own writable dirs, beneath the run dir (which no worker may write).
struct VerifyDirs {
    root: PathBuf,
    tmp: PathBuf,
    cache: PathBuf,
}

fn verify_dirs(run_dir: &Path) -> VerifyDirs {
    let root = run_dir.join("verify");
    VerifyDirs {
        tmp: root.join("tmp"),
        cache: root.join("cache"),
        root,
    }
}

/// Why `--verify` failed the run, or `None` when it passed (exit 0 within its limit). `code` is
/// the command's exit code, `None` when it could not be started.
pub(super) fn verify_failure(
    command: &str,
    limit: Duration,
    timed_out: bool,
    code: Option<i32>,
) -> Option<String> {
    match (timed_out, code) {
        (false, Some(0)) => None,
        (true, _) => Some(format!(
            "--verify timed out after {}: {command}",
            crate::duration::format_duration(limit)
        )),
        (false, Some(c)) => Some(format!("--verify failed (exit {c}): {command}")),
        (false, None) => Some(format!("--verify could not run: {command}")),
    }
}

/// Lines of the verify command kept for its outcome.
const VERIFY_TAIL_LINES: usize = 25;

/// The follower of the `--verify` command: its output into verify.log and a short tail, and a
/// stop when the run is interrupted or the command's time is up.
struct Check<'a> {
    log: Option<File>,
    tail: std::collections::VecDeque<String>,
    interrupt: &'a Interrupt,
    deadline: Instant,
    timed_out: bool,
    interrupted: bool,
}

impl Watcher for Check<'_> {
    fn line(&mut self, line: Vec<u8>) -> AfterLine {
        if let Some(f) = self.log.as_mut() {
            let _ = f.write_all(&line);
            let _ = f.write_all(b"\n");
        }
        self.tail
            .push_back(String::from_utf8_lossy(&line).into_owned());
        if self.tail.len() > VERIFY_TAIL_LINES {
            self.tail.pop_front();
        }
        // A command that prints without pause is still watched.
        AfterLine::Check
    }

    fn poll(&mut self) -> Decision {
        if self.interrupt.cause().is_some() {
            self.interrupted = true;
        } else if Instant::now() >= self.deadline {
            self.timed_out = true;
        } else {
            return Decision::Continue;
        }
        Decision::Stop
    }
}
