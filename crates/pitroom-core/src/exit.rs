//! Process exit codes. Stable: agents branch on them.
//!
//! [`Exit`] is the one list: each variant's number and meaning are written once, in
//! [`Exit::code`] and [`Exit::meaning`], and `--help`'s table ([`table`]) and the `i32`
//! constants below are derived from them.

/// How a pitroom process ends, as the caller sees it: a run's outcome (timeout, a failed
/// `--verify`) as much as a command's failure (a usage error, a refusal).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Exit {
    Ok,
    /// The worker failed or was stopped (a budget stop included), or an apply/revert conflicted.
    Failed,
    Usage,
    /// Refused, or a setup problem (missing CLI, busy repository, bad config).
    Refused,
    Timeout,
    ReadOnlyViolation,
    VerifyFailed,
    /// Still running: call `wait` again.
    StillRunning,
}

impl Exit {
    /// Every exit, in rising order of its code: the order `--help` lists them in.
    pub const ALL: [Exit; 8] = [
        Exit::Ok,
        Exit::Failed,
        Exit::Usage,
        Exit::Refused,
        Exit::Timeout,
        Exit::ReadOnlyViolation,
        Exit::VerifyFailed,
        Exit::StillRunning,
    ];

    /// The process exit code.
    pub const fn code(self) -> i32 {
        match self {
            Exit::Ok => 0,
            Exit::Failed => 1,
            Exit::Usage => 2,
            Exit::Refused => 3,
            Exit::Timeout => 4,
            Exit::ReadOnlyViolation => 5,
            Exit::VerifyFailed => 6,
            // EX_TEMPFAIL (sysexits.h): "try again later".
            Exit::StillRunning => 75,
        }
    }

    /// What the code tells the caller, as `--help` and the docs say it.
    pub const fn meaning(self) -> &'static str {
        match self {
            Exit::Ok => "ok",
            Exit::Failed => "the worker failed or was stopped; a revert conflicted",
            Exit::Usage => "usage error",
            Exit::Refused => {
                "refused, or a setup problem (missing worker CLI, busy repository, bad config)"
            }
            Exit::Timeout => "timeout (what the worker did is kept)",
            Exit::ReadOnlyViolation => {
                "read-only violation (a read run changed files; your tree is untouched)"
            }
            Exit::VerifyFailed => "--verify failed",
            Exit::StillRunning => "still running: call `pitroom wait` again",
        }
    }
}

// The codes as plain numbers, for what carries them as data (`RunRecord::exit_code`, the MCP
// server's `exit_code` field).
pub const OK: i32 = Exit::Ok.code();
pub const FAILED: i32 = Exit::Failed.code();
pub const USAGE: i32 = Exit::Usage.code();
pub const REFUSED: i32 = Exit::Refused.code();
pub const TIMEOUT: i32 = Exit::Timeout.code();
pub const READ_ONLY_VIOLATION: i32 = Exit::ReadOnlyViolation.code();
pub const VERIFY_FAILED: i32 = Exit::VerifyFailed.code();
pub const STILL_RUNNING: i32 = Exit::StillRunning.code();

/// The exit-code table as `--help` prints it: every [`Exit`], in rising order.
pub fn table() -> String {
    let mut text = String::from("Exit codes:\n");
    for exit in Exit::ALL {
        text.push_str(&format!("  {:<3} {}\n", exit.code(), exit.meaning()));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_exit_keeps_its_documented_code() {
        let codes: Vec<(Exit, i32)> = Exit::ALL.iter().map(|e| (*e, e.code())).collect();
        assert_eq!(
            codes,
            [
                (Exit::Ok, 0),
                (Exit::Failed, 1),
                (Exit::Usage, 2),
                (Exit::Refused, 3),
                (Exit::Timeout, 4),
                (Exit::ReadOnlyViolation, 5),
                (Exit::VerifyFailed, 6),
                (Exit::StillRunning, 75),
            ]
        );
    }

    #[test]
    fn the_table_lists_every_code_once_in_rising_order() {
        let codes: Vec<i32> = Exit::ALL.iter().map(|e| e.code()).collect();
        assert!(codes.windows(2).all(|w| w[0] < w[1]));
        let text = table();
        let lines: Vec<&str> = text.lines().skip(1).collect();
        assert_eq!(lines.len(), Exit::ALL.len());
        for (line, exit) in lines.iter().zip(Exit::ALL) {
            assert_eq!(*line, format!("  {:<3} {}", exit.code(), exit.meaning()));
        }
        assert!(text.starts_with("Exit codes:\n"));
        assert!(text.contains("  75  still running: call `pitroom wait` again\n"));
    }

    #[test]
    fn the_plain_constants_are_the_enums_codes() {
        assert_eq!(
            [
                OK,
                FAILED,
                USAGE,
                REFUSED,
                TIMEOUT,
                READ_ONLY_VIOLATION,
                VERIFY_FAILED,
                STILL_RUNNING
            ],
            Exit::ALL.map(Exit::code)
        );
    }
}
