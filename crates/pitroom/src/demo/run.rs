//! Running the demo's child commands: each `pitroom …` (and git) with its output in a log
//! file, bounded in time, stopped on Ctrl-C; and the command line shown as a user would type it.

use std::fs::File;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::{Demo, INTERRUPTED};
use crate::output::say;

impl Demo {
    /// Runs `pitroom ARGS` in the sample project with the demo's environment, prints the
    /// command line and its output (indented); a non-zero exit fails the stage.
    pub(super) fn pitroom(
        &mut self,
        args: &[&str],
        script: Option<&Path>,
        limit: Duration,
    ) -> Result<(), String> {
        let shown = shell_line(args);
        if INTERRUPTED.load(Ordering::SeqCst) {
            return Err(format!("{}: interrupted before `{shown}`", self.stage));
        }
        say!("  $ {shown}");
        self.commands += 1;
        let log = self.logs.join(format!("{:02}.log", self.commands));
        let mut cmd = Command::new(&self.exe);
        cmd.args(args).current_dir(&self.project);
        self.env(&mut cmd, script);
        let result = bounded(cmd, &log, limit);
        let (status, text) = match result {
            Ok(done) => done,
            Err(Bounded::Interrupted(text)) => {
                indent(&text);
                return Err(format!("{}: interrupted during `{shown}`", self.stage));
            }
            Err(Bounded::TimedOut(text)) => {
                indent(&text);
                return Err(format!(
                    "{}: `{shown}` did not finish within {}s and was stopped; run `pitroom demo --keep` and look at the runs in its state dir",
                    self.stage,
                    limit.as_secs()
                ));
            }
            Err(other) => return Err(format!("{}: `{shown}`: {}", self.stage, other.describe())),
        };
        indent(&text);
        if status.success() {
            Ok(())
        } else {
            Err(format!(
                "{}: `{shown}` failed ({status}); its output is above",
                self.stage
            ))
        }
    }
}

/// Prints a command's output, indented under its command line.
fn indent(text: &str) {
    for line in text.trim_end().lines().map(str::trim_end) {
        if line.is_empty() {
            say!();
        } else {
            say!("    {line}");
        }
    }
}

/// The command line as a user would type it.
fn shell_line(args: &[&str]) -> String {
    let mut line = String::from("pitroom");
    for arg in args {
        line.push(' ');
        line.push_str(&quote(arg));
    }
    line
}

fn quote(arg: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./:=@%+,#".contains(c);
    if !arg.is_empty() && arg.chars().all(plain) {
        arg.to_string()
    } else if !arg.contains(['"', '$', '`', '\\', '!']) {
        format!("\"{arg}\"")
    } else {
        format!("'{}'", arg.replace('\'', "'\\''"))
    }
}

/// Why a bounded child command did not give a result.
pub(super) enum Bounded {
    Spawn(std::io::Error),
    Io(String),
    /// It ran past its limit and was stopped; carries what it printed.
    TimedOut(String),
    /// The demo was interrupted (Ctrl-C) and stopped it; carries what it printed.
    Interrupted(String),
}

impl Bounded {
    pub(super) fn describe(&self) -> String {
        match self {
            Bounded::Spawn(e) => format!("could not start it: {e}"),
            Bounded::Io(why) => why.clone(),
            Bounded::TimedOut(_) => "it did not finish in time and was stopped".into(),
            Bounded::Interrupted(_) => "interrupted".into(),
        }
    }
}

/// Runs `cmd` with its stdout and stderr (interleaved, in order) in `log`, for at most `limit`:
/// past it the child gets SIGTERM, then SIGKILL. Files, not pipes, so a background process
/// that keeps a descriptor can never hold the demo up.
pub(super) fn bounded(
    mut cmd: Command,
    log: &Path,
    limit: Duration,
) -> Result<(ExitStatus, String), Bounded> {
    let io = |what: &str, e: std::io::Error| Bounded::Io(format!("{what} {}: {e}", log.display()));
    let out = File::create(log).map_err(|e| io("could not create", e))?;
    let err = out.try_clone().map_err(|e| io("could not open", e))?;
    cmd.stdin(Stdio::null()).stdout(out).stderr(err);
    let mut child = cmd.spawn().map_err(Bounded::Spawn)?;
    let deadline = Instant::now() + limit;
    let mut timed_out = false;
    let mut interrupted = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {}
            Err(e) => return Err(Bounded::Io(format!("waiting for the command failed: {e}"))),
        }
        if !timed_out && !interrupted {
            if INTERRUPTED.load(Ordering::SeqCst) {
                interrupted = true;
                stop(&mut child);
                continue;
            }
            if Instant::now() >= deadline {
                timed_out = true;
                stop(&mut child);
                continue;
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let text = std::fs::read(log)
        .map(|raw| String::from_utf8_lossy(&raw).into_owned())
        .map_err(|e| io("could not read", e))?;
    if interrupted {
        return Err(Bounded::Interrupted(text));
    }
    if timed_out {
        return Err(Bounded::TimedOut(text));
    }
    Ok((status, text))
}

/// SIGTERM (pitroom then stops its worker and keeps what it did), then SIGKILL after 3 s.
fn stop(child: &mut std::process::Child) {
    if let Ok(pid) = i32::try_from(child.id()) {
        // SAFETY: signalling our own child, which has not been reaped yet.
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
    }
    let grace = Instant::now() + Duration::from_secs(3);
    while Instant::now() < grace {
        if matches!(child.try_wait(), Ok(Some(_))) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::fresh_temp_dir;
    use crate::demo::LIMIT;

    #[test]
    fn a_command_past_its_limit_is_stopped() {
        let dir = fresh_temp_dir("pitroom-demo-test-").expect("temp dir");
        let started = Instant::now();
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo before; exec sleep 30"]);
        let result = bounded(cmd, &dir.join("log"), Duration::from_millis(300));
        let took = started.elapsed();
        let _ = std::fs::remove_dir_all(&dir);
        match result {
            Err(Bounded::TimedOut(text)) => assert_eq!(text.trim(), "before"),
            Err(other) => panic!("{}", other.describe()),
            Ok((status, _)) => panic!("finished: {status}"),
        }
        assert!(took < Duration::from_secs(5), "{took:?}");
    }

    #[test]
    fn a_command_s_output_and_exit_status_come_back() {
        let dir = fresh_temp_dir("pitroom-demo-test-").expect("temp dir");
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo out; echo err >&2; exit 3"]);
        let result = bounded(cmd, &dir.join("log"), LIMIT);
        let _ = std::fs::remove_dir_all(&dir);
        match result {
            Ok((status, text)) => {
                assert_eq!(status.code(), Some(3));
                assert_eq!(text, "out\nerr\n");
            }
            Err(other) => panic!("{}", other.describe()),
        }
    }

    #[test]
    fn command_lines_are_quoted_as_a_shell_would_need() {
        assert_eq!(
            shell_line(&["-d", "/tmp/x", "Where can divide fail?", "it's"]),
            "pitroom -d /tmp/x \"Where can divide fail?\" \"it's\""
        );
        assert_eq!(shell_line(&["say \"$x\""]), "pitroom 'say \"$x\"'");
    }
}
