//! Process exit codes (PRODUCT.md §3). Stable: agents branch on them.

pub const OK: i32 = 0;
/// The worker failed, was stopped, or an apply/revert conflicted.
pub const FAILED: i32 = 1;
pub const USAGE: i32 = 2;
/// Refused, or a setup problem (missing CLI, busy repository, bad config).
pub const REFUSED: i32 = 3;
pub const TIMEOUT: i32 = 4;
pub const READ_ONLY_VIOLATION: i32 = 5;
pub const VERIFY_FAILED: i32 = 6;
/// Still running: call `wait` again.
pub const STILL_RUNNING: i32 = 75;

/// Every exit code and what it tells the caller, in order: `--help` and the docs show this
/// table, so what a code means is written once.
pub const MEANINGS: &[(i32, &str)] = &[
    (OK, "ok"),
    (
        FAILED,
        "the worker failed or was stopped; a revert conflicted",
    ),
    (USAGE, "usage error"),
    (
        REFUSED,
        "refused, or a setup problem (missing worker CLI, busy repository, bad config)",
    ),
    (TIMEOUT, "timeout (what the worker did is kept)"),
    (
        READ_ONLY_VIOLATION,
        "read-only violation (a read run changed files; your tree is untouched)",
    ),
    (VERIFY_FAILED, "--verify failed"),
    (STILL_RUNNING, "still running: call `pitroom wait` again"),
];

/// The exit-code table as `--help` prints it.
pub fn table() -> String {
    let mut text = String::from("Exit codes:\n");
    for (code, meaning) in MEANINGS {
        text.push_str(&format!("  {code:<3} {meaning}\n"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_lists_every_code_once_in_rising_order() {
        let codes: Vec<i32> = MEANINGS.iter().map(|(c, _)| *c).collect();
        assert_eq!(
            codes,
            [
                OK,
                FAILED,
                USAGE,
                REFUSED,
                TIMEOUT,
                READ_ONLY_VIOLATION,
                VERIFY_FAILED,
                STILL_RUNNING
            ]
        );
        assert!(codes.windows(2).all(|w| w[0] < w[1]));
        assert!(table().contains("  75  still running: call `pitroom wait` again\n"));
    }
}
