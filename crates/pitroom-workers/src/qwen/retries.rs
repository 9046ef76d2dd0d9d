//! Qwen Code's silent retries, made visible (issue 16, item 11).
//!
//! Qwen 0.24.4 wraps every model call in an outer retry loop (`retryWithBackoff`: 7 attempts,
//! 1.5 s doubling to 30 s, not configurable) that prints nothing: a 500 failed after ~88 s and a
//! 429 without `retry-after` ran into the run's timeout. Its only trace of an attempt is a line
//! in its debug log (`Attempt 2 failed with status 500. Retrying with backoff in 3s...`), which
//! `QWEN_DEBUG_LOG_FILE=1` turns on and which goes to `<QWEN_HOME>/debug/<session id>.txt`.
//!
//! So the session id is chosen up front (`--session-id`, or the resumed one), and the CLI
//! starts through a small shell that follows that log and copies the attempt lines to stderr
//! (`tail --pid` ends with the CLI) before it `exec`s Qwen (same process, same stdin). The
//! engine reads them through [`super::Qwen`]'s `retry_signal` and stops the worker after its
//! retry cap, so every shape fails in seconds.

use std::collections::hash_map::RandomState;
use std::ffi::OsString;
use std::hash::{BuildHasher, Hasher};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// Qwen's switch for its debug log file.
pub(crate) const DEBUG_LOG_VAR: &str = "QWEN_DEBUG_LOG_FILE";
/// What marks one failed attempt of the outer retry loop in the debug log.
macro_rules! attempt_mark {
    () => {
        "failed with status"
    };
}
const ATTEMPT_MARK: &str = attempt_mark!();

/// `$1` is the debug log to follow; the rest is the CLI and its args. The follower reads only
/// what is appended from now on, keeps the attempt lines, ends once the CLI (this shell's pid,
/// after `exec`) is gone, and removes the log (it is only Pitroom's signal channel).
const FOLLOWER: &str = concat!(
    "log=$1; shift\n",
    "{ tail -n 0 -F -s 0.25 --pid=$$ \"$log\" 2>/dev/null | grep --line-buffered -F '",
    attempt_mark!(),
    "'; rm -f \"$log\"; } </dev/null >&2 2>/dev/null &\n",
    "exec \"$@\""
);

/// Where Qwen writes the debug log of `session` under the home `home`.
pub(crate) fn debug_log(home: &Path, session: &str) -> PathBuf {
    home.join("debug").join(format!("{session}.txt"))
}

/// `program args`, started through the follower of `log`.
pub(crate) fn follow(log: &Path, program: &Path, args: Vec<OsString>) -> (PathBuf, Vec<OsString>) {
    let mut sh_args: Vec<OsString> = vec![
        "-c".into(),
        FOLLOWER.into(),
        "pitroom-qwen-retries".into(),
        log.as_os_str().to_owned(),
        program.as_os_str().to_owned(),
    ];
    sh_args.extend(args);
    (PathBuf::from("/bin/sh"), sh_args)
}

/// A fresh version-4 UUID for `--session-id` (not a secret: only unique), from the process's
/// random hasher keys, the clock and `salt` (the run's scratch dir).
pub(crate) fn new_session_id(salt: &Path) -> String {
    let mut halves = [0u64; 2];
    for (i, half) in halves.iter_mut().enumerate() {
        let mut h = RandomState::new().build_hasher();
        h.write(salt.as_os_str().as_encoded_bytes());
        h.write_u128(
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or_default(),
        );
        h.write_usize(i);
        *half = h.finish();
    }
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&halves[0].to_be_bytes());
    bytes[8..].copy_from_slice(&halves[1].to_be_bytes());
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// One failed attempt of the outer loop, as the error the engine classifies if it stops the
/// worker: `… [RETRY] Attempt 2 failed with status 429. Retrying …` gives
/// `[API Error: 429 Too Many Requests] (Qwen Code's attempt 2)`.
pub(crate) fn attempt_signal(line: &str) -> Option<String> {
    let at = line.find(ATTEMPT_MARK)?;
    let head = line[..at].trim_end();
    let attempt = head.rsplit(' ').next().unwrap_or("?");
    let status: String = line[at + ATTEMPT_MARK.len()..]
        .trim_start()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let reason = match status.as_str() {
        "429" => "Too Many Requests",
        "500" => "Internal Server Error",
        "502" => "Bad Gateway",
        "503" => "Service Unavailable",
        "504" => "Gateway Timeout",
        "529" => "Overloaded",
        _ => "",
    };
    Some(
        format!("[API Error: {status} {reason}] (Qwen Code's attempt {attempt})")
            .replace(" ]", "]"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attempt_lines_of_the_debug_log_become_classifiable_errors() {
        let line = "2026-12-01T11:00:00.000Z [WARN] [RETRY] Attempt 2 failed with status 429. Retrying with backoff in 3s... {";
        assert_eq!(
            attempt_signal(line).as_deref(),
            Some("[API Error: 429 Too Many Requests] (Qwen Code's attempt 2)")
        );
        let line = "2026-12-01T11:00:00.000Z [ERROR] [RETRY] Attempt 1 failed with status 503. Retrying after explicit delay of 1000ms...";
        assert_eq!(
            attempt_signal(line).as_deref(),
            Some("[API Error: 503 Service Unavailable] (Qwen Code's attempt 1)")
        );
        assert_eq!(attempt_signal("Warning: Basic terminal detected"), None);
    }

    #[test]
    fn session_ids_are_fresh_version_4_uuids() {
        let a = new_session_id(Path::new("/t/run-1"));
        let b = new_session_id(Path::new("/t/run-1"));
        assert_ne!(a, b);
        let parts: Vec<&str> = a.split('-').collect();
        assert_eq!(
            parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
            [8, 4, 4, 4, 12]
        );
        assert!(parts[2].starts_with('4'), "{a}");
        assert!(matches!(&parts[3][..1], "8" | "9" | "a" | "b"), "{a}");
    }

    #[test]
    fn the_follower_copies_only_attempt_lines_to_stderr_then_runs_the_cli() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("debug/s.txt");
        let stderr = dir.path().join("stderr.log");
        let script = format!(
            "mkdir -p '{0}'; sleep 0.5; printf 'noise\\nAttempt 1 failed with status 500. Retrying\\n' >> '{1}'; sleep 1; echo ran \"$1\"",
            log.parent().unwrap().display(),
            log.display()
        );
        let (program, args) = follow(
            &log,
            Path::new("/bin/sh"),
            vec!["-c".into(), script.into(), "x".into(), "arg".into()],
        );
        // As under the keeper: stderr is a file, and the CLI is reaped when it exits (a zombie
        // would keep `tail --pid` waiting).
        let mut child = std::process::Command::new(program)
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap();
        assert!(child.wait().unwrap().success());
        let mut out = String::new();
        std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut out).unwrap();
        assert_eq!(out, "ran arg\n");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while log.exists() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        assert!(
            !log.exists(),
            "the follower ends with the CLI and removes the log"
        );
        assert_eq!(
            std::fs::read_to_string(&stderr).unwrap(),
            "Attempt 1 failed with status 500. Retrying\n"
        );
    }
}
