//! The names the guard's writer and its reader share, in one place.
//!
//! The writer is `pitroom-core` (`guard_env.rs` links the shim and the hook and builds a
//! worker's guarded environment; the engine names the worker's CLI). The reader is
//! `pitroom-guard` (or the pitroom binary) started as `git`, as a floor program or as the
//! `reference-transaction` hook ([`roles`](crate::roles)), and the
//! guard's own alias model, which reads git's config variables the writer appends to.

use std::ffi::OsStr;
use std::path::PathBuf;

/// Colon-separated git dirs the guard protects (the user's repository, the worker's copy).
/// Unset means every repository is protected.
pub const PROTECTED: &str = pitroom_env::PITROOM_PROTECTED;
/// The real git the shim hands allowed calls to (else the first other `git` on `PATH`).
pub const REAL_GIT: &str = pitroom_env::PITROOM_REAL_GIT;
/// The file name of the worker's own CLI, which the floor lets run itself again.
pub const WORKER_CLI: &str = pitroom_env::PITROOM_WORKER_CLI;

/// git's explicit repository, as the shim and the hook read it.
pub const GIT_DIR: &str = "GIT_DIR";
/// How many `GIT_CONFIG_KEY_n`/`GIT_CONFIG_VALUE_n` pairs git reads from the environment.
pub const GIT_CONFIG_COUNT: &str = "GIT_CONFIG_COUNT";
/// `-c` settings git passes on to the processes it starts.
pub const GIT_CONFIG_PARAMETERS: &str = "GIT_CONFIG_PARAMETERS";
/// A global config file other than the user's (autocorrection may be on there).
pub const GIT_CONFIG_GLOBAL: &str = "GIT_CONFIG_GLOBAL";
/// A system config file other than the usual one (autocorrection may be on there).
pub const GIT_CONFIG_SYSTEM: &str = "GIT_CONFIG_SYSTEM";

/// The file name of the guard's `git` link (first on the worker's `PATH`).
pub const SHIM: &str = "git";
/// The file name of the hook link in `core.hooksPath`.
pub const HOOK: &str = "reference-transaction";
/// The file name of the small executable that plays the guard's roles, installed next to
/// `pitroom` (the `pitroom` package's second binary); the links point at it when it is there.
pub const GUARD_EXE: &str = "pitroom-guard";

/// `GIT_CONFIG_KEY_<n>`.
pub fn git_config_key(n: impl std::fmt::Display) -> String {
    format!("GIT_CONFIG_KEY_{n}")
}

/// `GIT_CONFIG_VALUE_<n>`.
pub fn git_config_value(n: impl std::fmt::Display) -> String {
    format!("GIT_CONFIG_VALUE_{n}")
}

/// The value of [`PROTECTED`] for these git dirs (empty when they cannot be joined).
pub fn join_protected(dirs: &[PathBuf]) -> String {
    std::env::join_paths(dirs)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The git dirs in a value of [`PROTECTED`], as written (the reader canonicalises them).
pub fn split_protected(value: &OsStr) -> Vec<PathBuf> {
    std::env::split_paths(value).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protected_dirs_round_trip() {
        let dirs: Vec<PathBuf> = vec!["/r/.git".into(), "/tmp/copy/.git".into()];
        let value = join_protected(&dirs);
        assert_eq!(value, "/r/.git:/tmp/copy/.git");
        assert_eq!(split_protected(OsStr::new(&value)), dirs);
        assert_eq!(join_protected(&[]), "");
        assert_eq!(
            join_protected(&["/a:b".into()]),
            "",
            "a colon cannot be joined"
        );
    }

    #[test]
    fn names_are_the_ones_workers_and_scripts_see() {
        assert_eq!(PROTECTED, "PITROOM_PROTECTED");
        assert_eq!(REAL_GIT, "PITROOM_REAL_GIT");
        assert_eq!(WORKER_CLI, "PITROOM_WORKER_CLI");
        assert_eq!((SHIM, HOOK), ("git", "reference-transaction"));
        assert_eq!(GUARD_EXE, "pitroom-guard");
    }

    #[test]
    fn config_pair_names() {
        assert_eq!(git_config_key(3), "GIT_CONFIG_KEY_3");
        assert_eq!(git_config_value(0_u64), "GIT_CONFIG_VALUE_0");
    }
}
