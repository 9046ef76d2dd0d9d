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
