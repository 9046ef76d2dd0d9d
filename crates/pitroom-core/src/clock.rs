//! The clock Pitroom stamps its records and run ids with, and the seed of a run id's salt.
//!
//! Both can be fixed from the environment, as jj's `JJ_TIMESTAMP` and `JJ_RANDOMNESS_SEED`, so
//! that a test (or anyone reproducing a report) gets the same ids, times, reports and `--json`
//! on every run: [`TIMESTAMP_ENV`] fixes the time [`now`] returns, [`RANDOMNESS_SEED_ENV`] the
//! collision salt of a run id ([`crate::home::Home::create_run_dir`]).
//!
//! Only stamps and the ages measured against stamps use this clock. What measures real time —
//! the `--timeout` deadline and the watchdog (`Instant`), cooldowns, the staleness of a record no
//! supervisor has claimed yet, cache lifetimes, names that must differ from one call to the
//! next — keeps the wall clock, so a fixed clock never makes a run wait forever or look stale.
//! Each call site says which clock it reads and why.

use std::sync::OnceLock;

use jiff::Timestamp;

/// The environment variable that fixes [`now`]: an RFC 3339 timestamp such as
/// `2026-01-02T03:04:05Z`. Any other value, or none, leaves the wall clock (docs/configuration.md).
pub const TIMESTAMP_ENV: &str = pitroom_env::PITROOM_TIMESTAMP;

/// The environment variable that makes a run id's salt deterministic: an unsigned integer. Any
/// other value, or none, leaves the salt random (docs/configuration.md).
pub const RANDOMNESS_SEED_ENV: &str = pitroom_env::PITROOM_RANDOMNESS_SEED;

/// The time to stamp on a record or an id: the fixed time of [`TIMESTAMP_ENV`] when it is set,
/// else the wall clock.
pub fn now() -> Timestamp {
    fixed_time().unwrap_or_else(Timestamp::now)
}

/// The stamp to write on a note, or anywhere a stamp is kept as text: [`now`] in RFC 3339
/// (`2026-01-02T03:04:05Z`). A run record keeps [`now`] itself, and writes it as this same
/// text. A stamp always comes from this clock, so a fixed clock fixes every stamp.
pub fn stamp() -> String {
    now().to_string()
}

/// The fixed time of this process's [`TIMESTAMP_ENV`], read once (every stamp of a process agrees).
pub fn fixed_time() -> Option<Timestamp> {
    static FIXED: OnceLock<Option<Timestamp>> = OnceLock::new();
    *FIXED.get_or_init(|| fixed_time_from(&process_env))
}

/// The seed of this process's [`RANDOMNESS_SEED_ENV`], read once.
pub fn seed() -> Option<u64> {
    static SEED: OnceLock<Option<u64>> = OnceLock::new();
    *SEED.get_or_init(|| seed_from(&process_env))
}

/// The fixed time `env` sets, if it names a valid timestamp.
pub fn fixed_time_from(env: &dyn Fn(&str) -> Option<String>) -> Option<Timestamp> {
    env(TIMESTAMP_ENV)?.trim().parse().ok()
}

/// The seed `env` sets, if it is an unsigned integer.
pub fn seed_from(env: &dyn Fn(&str) -> Option<String>) -> Option<u64> {
    env(RANDOMNESS_SEED_ENV)?.trim().parse().ok()
}

fn process_env(key: &str) -> Option<String> {
    std::env::var(key).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |key| {
            pairs
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn a_stamp_is_the_stamping_clock_in_rfc_3339() {
        let stamp = stamp();
        let parsed: Timestamp = stamp.parse().unwrap();
        assert_eq!(parsed.to_string(), stamp);
        if let Some(fixed) = fixed_time() {
            assert_eq!(parsed, fixed);
        }
    }

    #[test]
    fn a_set_timestamp_fixes_the_clock() {
        let fixed = fixed_time_from(&env(&[(TIMESTAMP_ENV, "2026-01-02T03:04:05Z")]));
        assert_eq!(
            fixed.map(|t| t.to_string()).as_deref(),
            Some("2026-01-02T03:04:05Z")
        );
    }

    #[test]
    fn an_unset_or_invalid_timestamp_leaves_the_wall_clock() {
        assert_eq!(fixed_time_from(&env(&[])), None);
        assert_eq!(fixed_time_from(&env(&[(TIMESTAMP_ENV, "")])), None);
        assert_eq!(fixed_time_from(&env(&[(TIMESTAMP_ENV, "yesterday")])), None);
    }

    #[test]
    fn the_seed_is_an_unsigned_integer_or_nothing() {
        assert_eq!(seed_from(&env(&[(RANDOMNESS_SEED_ENV, " 42 ")])), Some(42));
        assert_eq!(seed_from(&env(&[(RANDOMNESS_SEED_ENV, "-1")])), None);
        assert_eq!(seed_from(&env(&[])), None);
    }
}
