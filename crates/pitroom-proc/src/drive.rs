//! Driving a keeper to its end: the one loop that reads the worker's stdout line by line,
//! looks in between lines at whether it must stop, stops it with its grace, and takes what the
//! pipe still holds once the keeper is gone. The worker's run, `--verify` and the model listing
//! all end their processes this way; what each does with a line, and when it wants a stop, is
//! its [`Watcher`].

use std::io::{BufRead, BufReader};
use std::process::ChildStdout;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::keeper::KeeperHandle;

/// How long the loop waits for a line before it asks [`Watcher::poll`] again: the latency of
/// a stop, a timeout or a progress save while the worker is silent.
pub const POLL: Duration = Duration::from_millis(50);

/// What the watcher wants after a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterLine {
    /// Read the next line at once: a worker that prints a lot is not slowed by the checks.
    ReadOn,
    /// Check now whether to stop (ask [`Watcher::poll`] before the next line).
    Check,
}

/// What the watcher decides when asked between lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Continue,
    /// End the worker's tree (TERM, then KILL after the keeper's grace).
    Stop,
}

/// One process's follower: what to do with each line and when to stop.
pub trait Watcher {
    /// A line of the worker's stdout, its end-of-line bytes removed.
    fn line(&mut self, line: Vec<u8>) -> AfterLine;
    /// A line read after the keeper ended (the drain): by default like any other.
    fn drained(&mut self, line: Vec<u8>) {
        self.line(line);
    }
    /// Asked between lines, at least every [`POLL`] while the keeper runs.
    fn poll(&mut self) -> Decision;
}

/// How long the loop waits for the ends it does not control.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    /// How long the keeper may take to exit once its pipe closed or it was told to stop (its
    /// grace and some slack); past it the keeper is killed.
    pub exit_wait: Duration,
    /// How long the loop takes lines after the keeper exited: a descendant that escaped could
    /// keep the pipe open for ever.
    pub drain: Duration,
}

/// How the keeper ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Driven {
    /// The keeper's exit code (the worker's code, `128+signal`, or [`crate::STOPPED_EXIT`]).
    pub code: i32,
    /// The watcher asked for the stop.
    pub stopped: bool,
}

/// Runs `keeper` to its end under `watcher` (see the module doc).
pub fn drive(keeper: &mut KeeperHandle, watcher: &mut dyn Watcher, bounds: Bounds) -> Driven {
    let lines = read_lines(keeper.stdout.take());
    let mut stopped = false;
    let code = loop {
        match lines.recv_timeout(POLL) {
            Ok(line) => {
                if watcher.line(line) == AfterLine::ReadOn {
                    continue;
                }
            }
            // The keeper holds the pipe too: once it closes, the keeper is exiting.
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                break keeper.wait_bounded(bounds.exit_wait)
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        if let Some(code) = keeper.try_wait() {
            break code;
        }
        if watcher.poll() == Decision::Stop {
            stopped = true;
            keeper.request_stop();
            break keeper.wait_bounded(bounds.exit_wait);
        }
    };
    let drain_until = Instant::now() + bounds.drain;
    while let Ok(line) = lines.recv_timeout(drain_until.saturating_duration_since(Instant::now())) {
        watcher.drained(line);
    }
    Driven { code, stopped }
}

/// The lines of `stdout`, read on a thread of their own into a channel (the loop above waits
/// on the channel with a timeout; a pipe read cannot time out). The channel closes when the
/// pipe does.
fn read_lines(stdout: Option<ChildStdout>) -> mpsc::Receiver<Vec<u8>> {
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

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;
    use std::path::{Path, PathBuf};

    use super::*;
    use crate::keeper::{spawn_keeper, KeeperSpec};

    /// A stand-in for the keeper: `spawn_keeper` starts `exe __keeper … -- program`, and a
    /// shell script that ignores its arguments plays the keeper's part (its stdout is the
    /// worker's, its exit code the worker's, TERM ends it).
    fn fake_keeper(dir: &Path, body: &str) -> KeeperHandle {
        let exe = dir.join("keeper.sh");
        std::fs::write(&exe, format!("#!/bin/sh\n{body}\n")).expect("script");
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let spec = KeeperSpec {
            program: PathBuf::from("/bin/true"),
            args: Vec::new(),
            cwd: dir.to_path_buf(),
            stdin_file: None,
            stderr_file: dir.join("stderr.log"),
            env: Vec::new(),
            grace: Duration::from_millis(100),
            sandbox: None,
            containment_report: None,
        };
        // Another test's thread may fork while this one still has the script open for writing:
        // until that child execs, it holds the descriptor too, and running the script fails with
        // ETXTBSY. The window closes as soon as that child execs; it is waited out, boundedly.
        for _ in 0..200 {
            match spawn_keeper(&exe, &spec) {
                Err(e) if text_file_busy(&e) => std::thread::sleep(Duration::from_millis(10)),
                started => return started.expect("the fake keeper starts"),
            }
        }
        panic!("{} stayed busy for two seconds", exe.display());
    }

    fn text_file_busy(e: &crate::SpawnError) -> bool {
        std::error::Error::source(e)
            .and_then(|s| s.downcast_ref::<std::io::Error>())
            .and_then(std::io::Error::raw_os_error)
            == Some(libc::ETXTBSY)
    }

    /// Drives a fake keeper running `body` under `watcher`, in a fresh temp dir.
    fn drive_script(body: &str, mut watcher: Collect) -> (Collect, Driven) {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut keeper = fake_keeper(dir.path(), body);
        let driven = drive(&mut keeper, &mut watcher, BOUNDS);
        (watcher, driven)
    }

    const BOUNDS: Bounds = Bounds {
        exit_wait: Duration::from_secs(30),
        // Generous: a drain ends as soon as the pipe closes, so this bounds only a hang.
        drain: Duration::from_secs(60),
    };

    /// Keeps every line; asks for a stop once it has seen `stop_after` lines.
    #[derive(Default)]
    struct Collect {
        lines: Vec<String>,
        polls: usize,
        stop_after: Option<usize>,
        check_after_each_line: bool,
    }

    impl Watcher for Collect {
        fn line(&mut self, line: Vec<u8>) -> AfterLine {
            self.lines.push(String::from_utf8_lossy(&line).into_owned());
            if self.check_after_each_line {
                AfterLine::Check
            } else {
                AfterLine::ReadOn
            }
        }

        fn poll(&mut self) -> Decision {
            self.polls += 1;
            match self.stop_after {
                Some(n) if self.lines.len() >= n => Decision::Stop,
                _ => Decision::Continue,
            }
        }
    }

    #[test]
    fn every_line_arrives_in_order_without_its_line_end_and_the_exit_code_is_the_keepers() {
        let (watcher, driven) =
            drive_script("printf 'one\\r\\ntwo\\nthree'; exit 3", Collect::default());
        assert_eq!(watcher.lines, ["one", "two", "three"]);
        assert_eq!(
            driven,
            Driven {
                code: 3,
                stopped: false
            }
        );
    }

    #[test]
    fn a_stop_the_watcher_asks_for_ends_a_process_that_would_run_on() {
        let watcher = Collect {
            stop_after: Some(1),
            check_after_each_line: true,
            ..Collect::default()
        };
        // `exec`: the TERM reaches the sleeping process itself, not a shell waiting on it.
        let (watcher, driven) = drive_script("echo ready; exec sleep 600", watcher);
        assert!(driven.stopped);
        assert_eq!(driven.code, 128 + libc::SIGTERM);
        assert_eq!(watcher.lines, ["ready"]);
    }

    #[test]
    fn a_watcher_that_reads_on_is_not_polled_between_lines_that_keep_coming() {
        // 2,000 lines in one write: they are all in the channel before the loop looks.
        let (watcher, driven) = drive_script("seq 1 2000", Collect::default());
        assert_eq!(watcher.lines.len(), 2000);
        assert_eq!(watcher.lines.last().map(String::as_str), Some("2000"));
        assert!(!driven.stopped);
        // Polled only when no line was waiting, never once per line.
        assert!(watcher.polls < 2000, "polled {} times", watcher.polls);
    }

    #[test]
    fn lines_printed_after_the_keeper_exited_are_still_taken() {
        // A descendant holds the pipe and prints only once the keeper is gone (reaped: `kill
        // -0` fails), so its line can only arrive in the drain.
        let (watcher, driven) = drive_script(
            "(while kill -0 $$ 2>/dev/null; do sleep 0.02; done; echo late) & echo early; exit 0",
            Collect::default(),
        );
        assert_eq!(driven.code, 0);
        assert_eq!(watcher.lines, ["early", "late"]);
    }
}
