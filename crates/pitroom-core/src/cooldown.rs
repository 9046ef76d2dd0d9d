//! Cooldowns: a `backend:model` that was rate limited is skipped for a while, as long as another
//! target of the chain is available (docs/crews.md). Kept in `cooldowns.json` in the state dir,
//! changed under a lock so concurrent runs never lose each other's entries.

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::LazyLock;
use std::time::Duration;

use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::home::Home;

/// Without a hint from the provider.
const DEFAULT_COOLDOWN: Duration = Duration::from_secs(20 * 60);
/// A message that reads like a daily quota.
const DAILY_COOLDOWN: Duration = Duration::from_secs(4 * 3600);
const MIN_COOLDOWN: Duration = Duration::from_secs(60);
const MAX_COOLDOWN: Duration = Duration::from_secs(24 * 3600);

/// One cooling target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cooling {
    /// RFC 3339 time until which the target is skipped.
    pub until: String,
    /// The provider's message that put it on cooldown.
    pub reason: String,
}

impl Cooling {
    fn until(&self) -> Option<jiff::Timestamp> {
        self.until.parse().ok()
    }

    fn active(&self, now: jiff::Timestamp) -> bool {
        self.until().is_some_and(|u| u > now)
    }

    /// `14:05` (UTC) for display.
    pub fn until_short(&self) -> String {
        self.until()
            .map(|u| u.strftime("%H:%M UTC").to_string())
            .unwrap_or_else(|| self.until.clone())
    }
}

/// The cooldowns in force.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct Cooldowns {
    #[serde(flatten)]
    pub entries: BTreeMap<String, Cooling>,
}

fn path(home: &Home) -> PathBuf {
    home.root.join("cooldowns.json")
}

impl Cooldowns {
    /// The cooldowns still in force (a missing or broken file means none).
    pub fn load(home: &Home) -> Cooldowns {
        let mut c: Cooldowns = std::fs::read(path(home))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        // A cooldown lasts real time: the wall clock (a fixed clock would never end one).
        let now = jiff::Timestamp::now();
        c.entries.retain(|_, v| v.active(now));
        c
    }

    pub fn get(&self, key: &str) -> Option<&Cooling> {
        self.entries.get(key)
    }

    /// When every one of `keys` is cooling down: the earliest time one of them is free again.
    /// `None` when one of them is free now.
    pub fn all_cooling_until(&self, keys: &[String]) -> Option<jiff::Timestamp> {
        keys.iter()
            .map(|k| self.get(k).and_then(Cooling::until))
            .collect::<Option<Vec<_>>>()?
            .into_iter()
            .min()
    }

    /// Puts `key` on cooldown for as long as `message` (or the provider's retry-after) says.
    pub fn note(
        home: &Home,
        key: &str,
        message: &str,
        retry_after: Option<u64>,
    ) -> std::io::Result<Cooling> {
        let wait = cooldown_for(message, retry_after);
        // The wall clock, as `load` checks it against.
        let until = jiff::Timestamp::now()
            .checked_add(jiff::SignedDuration::try_from(wait).map_err(std::io::Error::other)?)
            .map_err(std::io::Error::other)?;
        let cooling = Cooling {
            until: until.to_string(),
            reason: message.chars().take(300).collect(),
        };
        update(home, |c| {
            c.entries.insert(key.to_string(), cooling.clone());
        })?;
        Ok(cooling)
    }

    /// Removes every cooldown; returns how many there were.
    pub fn clear(home: &Home) -> std::io::Result<usize> {
        let mut n = 0;
        update(home, |c| {
            n = c.entries.len();
            c.entries.clear();
        })?;
        Ok(n)
    }
}

/// Read, change and write the file under an exclusive lock.
fn update(home: &Home, change: impl FnOnce(&mut Cooldowns)) -> std::io::Result<()> {
    std::fs::create_dir_all(&home.root)?;
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(home.root.join("cooldowns.lock"))?;
    // SAFETY: flock on a descriptor we own; released when `lock` is dropped.
    unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) };
    let mut c = Cooldowns::load(home);
    change(&mut c);
    let json = serde_json::to_vec_pretty(&c).map_err(std::io::Error::other)?;
    crate::record::write_atomic(&path(home), &json)
}

/// How long to cool down after a rate limit: the provider's own wait when it gives one
/// ("retry in 4h28m23s", "try again in 30 seconds", "resets in 2 hours", a retry-after header),
/// else 4 h for what reads like a daily quota, else 20 min; always within [1 min, 24 h].
pub fn cooldown_for(message: &str, retry_after: Option<u64>) -> Duration {
    let hinted = retry_after
        .filter(|&s| s > 0)
        .map(Duration::from_secs)
        .or_else(|| parse_wait(message));
    let wait = hinted.unwrap_or_else(|| {
        if DAILY.is_match(message) {
            DAILY_COOLDOWN
        } else {
            DEFAULT_COOLDOWN
        }
    });
    wait.clamp(MIN_COOLDOWN, MAX_COOLDOWN)
}

/// Compiles one of this module's constant patterns.
#[expect(
    clippy::expect_used,
    reason = "a constant pattern; the tests compile it"
)]
fn constant(pattern: &str) -> Regex {
    Regex::new(pattern).expect("valid regex")
}

static DAILY: LazyLock<Regex> = LazyLock::new(|| constant(r"(?i)daily|per day|exhausted your"));

static WAIT: LazyLock<Regex> = LazyLock::new(|| {
    constant(
        r"(?i)(?:retry|try again|resets?|available)\s+(?:in|after)\s+((?:\d+(?:\.\d+)?\s*(?:hours?|hrs?|h|minutes?|mins?|m|seconds?|secs?|s)\s*,?\s*(?:and\s+)?)+)",
    )
});

static PART: LazyLock<Regex> = LazyLock::new(|| {
    constant(r"(?i)(\d+(?:\.\d+)?)\s*(hours?|hrs?|h|minutes?|mins?|m|seconds?|secs?|s)")
});

fn parse_wait(message: &str) -> Option<Duration> {
    let span = WAIT.captures(message)?.get(1)?.as_str();
    let mut secs = 0.0;
    for part in PART.captures_iter(span) {
        let n: f64 = part[1].parse().ok()?;
        let unit = part[2].to_ascii_lowercase();
        secs += n * match unit.chars().next() {
            Some('h') => 3600.0,
            Some('m') => 60.0,
            _ => 1.0,
        };
    }
    (secs > 0.0).then(|| Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod hold_tests {
    use super::*;

    #[test]
    fn a_chain_is_all_cooling_only_when_every_target_is_and_frees_at_the_earliest_end() {
        let cooling = |until: &str| Cooling {
            until: until.into(),
            reason: "429".into(),
        };
        let mut c = Cooldowns::default();
        c.entries
            .insert("a".into(), cooling("2030-01-01T10:00:00Z"));
        c.entries
            .insert("b:m".into(), cooling("2030-01-01T09:00:00Z"));
        let keys = |k: &[&str]| k.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            c.all_cooling_until(&keys(&["a", "b:m"]))
                .map(|t| t.to_string()),
            Some("2030-01-01T09:00:00Z".to_string())
        );
        assert_eq!(c.all_cooling_until(&keys(&["a", "free"])), None);
        assert_eq!(c.all_cooling_until(&keys(&[])), None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_waits_are_read_from_the_message() {
        let cases = [
            (
                "You have hit your usage limit. Try again in 4h28m23s.",
                4 * 3600 + 28 * 60 + 23,
            ),
            ("Rate limit reached; please try again in 30 seconds", 60), // clamped up to 1 min
            ("quota exceeded, retry in 2 hours", 7200),
            ("limit resets in 1 hour and 30 minutes", 5400),
            ("429 Too Many Requests: retry after 90s", 90),
        ];
        for (message, secs) in cases {
            assert_eq!(
                cooldown_for(message, None),
                Duration::from_secs(secs),
                "{message}"
            );
        }
    }

    #[test]
    fn without_a_hint_daily_quotas_wait_longer_than_plain_rate_limits() {
        assert_eq!(
            cooldown_for("You have exhausted your daily quota", None),
            DAILY_COOLDOWN
        );
        assert_eq!(
            cooldown_for("429 Too Many Requests", None),
            DEFAULT_COOLDOWN
        );
    }

    #[test]
    fn retry_after_wins_and_is_clamped() {
        assert_eq!(
            cooldown_for("slow down", Some(300)),
            Duration::from_secs(300)
        );
        assert_eq!(cooldown_for("slow down", Some(5)), MIN_COOLDOWN);
        assert_eq!(cooldown_for("slow down", Some(10 * 86_400)), MAX_COOLDOWN);
        // A zero retry-after is "retry at once", which says nothing about a cooldown.
        assert_eq!(cooldown_for("slow down", Some(0)), DEFAULT_COOLDOWN);
    }

    #[test]
    fn noted_cooldowns_are_kept_and_cleared() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home {
            root: dir.path().to_path_buf(),
        };
        let c = Cooldowns::note(&home, "opencode:fake/a", "429 retry in 2 hours", None).unwrap();
        assert!(c.active(jiff::Timestamp::now()));
        assert!(Cooldowns::load(&home).get("opencode:fake/a").is_some());
        assert!(Cooldowns::load(&home).get("opencode:fake/b").is_none());
        assert_eq!(Cooldowns::clear(&home).unwrap(), 1);
        assert!(Cooldowns::load(&home).entries.is_empty());
    }
}
