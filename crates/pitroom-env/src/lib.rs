//! Every `PITROOM_*` environment variable Pitroom reads or sets, in one place: a constant per
//! variable, named as the variable itself so that a grep for the name finds its one home.
//!
//! A crate of its own, with no dependencies, because the variables cross every layer: the
//! configuration (`pitroom-core`), the keeper (`pitroom-proc`), the guard (`pitroom-guard`,
//! whose small executable links nothing else) and the CLI. `docs/configuration.md` documents
//! each one; a test here holds the two to each other ([`SETTINGS`] in the main part of that
//! page, [`INTERNAL`] in its "Internal variables" section).

// ---- Settings: what a user (or the test kit) may set.

/// The state directory (runs, the queue, the history, the guard's links).
pub const PITROOM_HOME: &str = "PITROOM_HOME";
/// The config file, instead of `$XDG_CONFIG_HOME/pitroom/config.toml`.
pub const PITROOM_CONFIG: &str = "PITROOM_CONFIG";
/// The config key `worker`: the target `backend[:model][#effort]`.
pub const PITROOM_WORKER: &str = "PITROOM_WORKER";
/// The config key `model`.
pub const PITROOM_MODEL: &str = "PITROOM_MODEL";
/// The config key `fallback`: targets to move to when a worker is unavailable.
pub const PITROOM_FALLBACK: &str = "PITROOM_FALLBACK";
/// The config key `timeout`: a run's wall-clock limit.
pub const PITROOM_TIMEOUT: &str = "PITROOM_TIMEOUT";
/// The config key `watchdog`.
pub const PITROOM_WATCHDOG: &str = "PITROOM_WATCHDOG";
/// The config key `primary`: the price preset of the saving estimate.
pub const PITROOM_PRIMARY: &str = "PITROOM_PRIMARY";
/// The config key `price`: a custom primary price.
pub const PITROOM_PRICE: &str = "PITROOM_PRICE";
/// The config key `sandbox_writable`: extra directories a worker may write under Landlock.
pub const PITROOM_SANDBOX_WRITABLE: &str = "PITROOM_SANDBOX_WRITABLE";
/// The config key `max_parallel`: workers at once across all Pitroom processes.
pub const PITROOM_MAX_PARALLEL: &str = "PITROOM_MAX_PARALLEL";
/// `copy` makes read runs read a read-only copy even where they could read the tree in place.
pub const PITROOM_READ_VIEW: &str = "PITROOM_READ_VIEW";
/// `off` turns layer 3 (Landlock) off.
pub const PITROOM_LANDLOCK: &str = "PITROOM_LANDLOCK";
/// Set (to anything), workers start without a PID namespace of their own.
pub const PITROOM_NO_PID_NAMESPACE: &str = "PITROOM_NO_PID_NAMESPACE";
/// Set (to anything but empty or `0`), Pitroom runs as on a platform without Linux's own
/// mechanisms (the paths macOS takes, provable on Linux).
pub const PITROOM_PORTABLE: &str = "PITROOM_PORTABLE";
/// What a run's own log keeps: a level or a `tracing` target list.
pub const PITROOM_LOG: &str = "PITROOM_LOG";
/// A fixed RFC 3339 time for records, ids and windows (tests, reproducing a report).
pub const PITROOM_TIMESTAMP: &str = "PITROOM_TIMESTAMP";
/// An unsigned integer that makes a run id's last character deterministic.
pub const PITROOM_RANDOMNESS_SEED: &str = "PITROOM_RANDOMNESS_SEED";

/// The variable that points Pitroom at a worker CLI's executable: `PITROOM_<BACKEND>_BIN`
/// (`PITROOM_OPENCODE_BIN`, `PITROOM_CURSOR_BIN`, `PITROOM_ACME_BIN` for a custom `acme`).
pub fn worker_bin(backend: &str) -> String {
    format!("{PREFIX}{}_BIN", backend.to_ascii_uppercase())
}

/// What every one of Pitroom's variables starts with (`pitroom demo` clears them all).
pub const PREFIX: &str = "PITROOM_";

// ---- Internal: set by Pitroom for its own processes, or read by its build and tests.

/// `1` in a worker's environment (and its `--verify` command's): the process runs inside a
/// Pitroom worker, which must not start Pitroom again nor be told to delegate.
pub const PITROOM_ACTIVE: &str = "PITROOM_ACTIVE";
/// Colon-separated git dirs the guard protects (the user's repository, the worker's copy).
pub const PITROOM_PROTECTED: &str = "PITROOM_PROTECTED";
/// The real git the guard's shim hands allowed calls to.
pub const PITROOM_REAL_GIT: &str = "PITROOM_REAL_GIT";
/// The file name of the worker's own CLI, which the guard's floor lets run itself again.
pub const PITROOM_WORKER_CLI: &str = "PITROOM_WORKER_CLI";
/// The mark the keeper puts on its worker's tree where there is no subreaper, by which its
/// sweep finds orphans that left the worker's session.
pub const PITROOM_TREE: &str = "PITROOM_TREE";
/// The script `pitroom demo`'s scripted worker plays.
pub const PITROOM_DEMO_SCRIPT: &str = "PITROOM_DEMO_SCRIPT";
/// At build time, keeps Pitroom's executables position-independent (`crates/pitroom/build.rs`).
pub const PITROOM_PIE: &str = "PITROOM_PIE";
/// `1` in a test run: rewrite the seatbelt profile fixtures instead of comparing with them.
pub const PITROOM_BLESS: &str = "PITROOM_BLESS";
/// Set in a test run: rewrite the committed host packages instead of comparing with them.
pub const PITROOM_WRITE_PACKAGES: &str = "PITROOM_WRITE_PACKAGES";
/// Test builds only (`test-fakes`): a file `__supervise` waits for before it claims its run, so
/// a test can make a stop race the start.
pub const PITROOM_TEST_SUPERVISE_GATE: &str = "PITROOM_TEST_SUPERVISE_GATE";

/// The variables of the main part of `docs/configuration.md`: what a user may set.
pub const SETTINGS: &[&str] = &[
    PITROOM_HOME,
    PITROOM_CONFIG,
    PITROOM_WORKER,
    PITROOM_MODEL,
    PITROOM_FALLBACK,
    PITROOM_TIMEOUT,
    PITROOM_WATCHDOG,
    PITROOM_PRIMARY,
    PITROOM_PRICE,
    PITROOM_SANDBOX_WRITABLE,
    PITROOM_MAX_PARALLEL,
    PITROOM_READ_VIEW,
    PITROOM_LANDLOCK,
    PITROOM_NO_PID_NAMESPACE,
    PITROOM_PORTABLE,
    PITROOM_LOG,
    PITROOM_TIMESTAMP,
    PITROOM_RANDOMNESS_SEED,
];

/// The variables of the "Internal variables" section of `docs/configuration.md`.
pub const INTERNAL: &[&str] = &[
    PITROOM_ACTIVE,
    PITROOM_PROTECTED,
    PITROOM_REAL_GIT,
    PITROOM_WORKER_CLI,
    PITROOM_TREE,
    PITROOM_DEMO_SCRIPT,
    PITROOM_PIE,
    PITROOM_BLESS,
    PITROOM_WRITE_PACKAGES,
    PITROOM_TEST_SUPERVISE_GATE,
];

#[cfg(test)]
mod tests;
