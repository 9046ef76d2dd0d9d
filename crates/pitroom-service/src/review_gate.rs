//! The stop-time review gate (`pitroom hook review-gate`, docs/review-gate.md): when an agent
//! host's turn ends with uncommitted work it has not had reviewed, one `review --uncommitted`
//! runs to its end and its findings go back to the agent, which then continues.
//!
//! Bounded so it never loops: the second stop of a turn (the host's `stop_hook_active`) passes;
//! the same change — named by the trees of `HEAD` and of the work tree's snapshot, the pair
//! the review compares — is never reviewed twice in a session; a session gets at most
//! `review_gate_max_rounds` reviews. A reviewer that fails never holds the agent: the gate
//! passes and says why. The session's reviewed changes and its rounds are kept in
//! `<state>/review-gate/<session>.json`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use pitroom_core::config::FlagValues;
use pitroom_core::verdict::Verdict;
use pitroom_core::{RunRecord, Silent};
use serde::{Deserialize, Serialize};

use crate::{ReviewRequest, Service, ServiceError};

/// The reviewer's time limit: a stop hook must end, and hosts give it 15 minutes (the hooks
/// Pitroom writes say `timeout: 900`), so the review ends well before the host gives up.
pub const GATE_TIMEOUT: Duration = Duration::from_secs(10 * 60);

/// Reviews per session when `review_gate_max_rounds` is not set.
pub const DEFAULT_MAX_ROUNDS: u64 = 3;

/// One stop of an agent's turn, from the host's Stop payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateRequest {
    /// The host's session id: the gate's memory is per session.
    pub session: String,
    /// The session's working directory (the payload's `cwd`).
    pub dir: PathBuf,
    /// The host already continued the agent once in this turn because of a Stop hook.
    pub stop_hook_active: bool,
    /// Only when the config says `review_gate = true` (the plugins' hook, which every user of
    /// the plugin has): the gate stays opt-in.
    pub only_if_enabled: bool,
}

/// What the session's gate remembers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GateState {
    /// Changes reviewed in this session: `HEAD`'s tree and the work tree's, `HEAD..SNAPSHOT`.
    #[serde(default)]
    pub reviewed: Vec<String>,
    /// Reviews started in this session (a failed one counts: it cost a reviewer's time).
    #[serde(default)]
    pub rounds: u64,
    /// The review runs, oldest first.
    #[serde(default)]
    pub runs: Vec<String>,
}

/// Why the gate lets the agent stop without a review.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pass {
    /// `only_if_enabled`, and the config does not enable the gate.
    Disabled,
    /// The host continued the agent once this turn already: one round per turn.
    SecondStop,
    /// The directory is not in a git repository, or its tree has no uncommitted change.
    NoChange,
    /// This very change was reviewed before in this session.
    AlreadyReviewed,
    /// The session had its reviews (`rounds` of `cap`).
    CapReached { rounds: u64, cap: u64 },
}

/// The pure decision: review the change `change` (`None`: no change), or let the agent stop.
pub fn decide(
    stop_hook_active: bool,
    change: Option<&str>,
    state: &GateState,
    cap: u64,
) -> Result<String, Pass> {
    if stop_hook_active {
        return Err(Pass::SecondStop);
    }
    let Some(change) = change else {
        return Err(Pass::NoChange);
    };
    if state.reviewed.iter().any(|c| c == change) {
        return Err(Pass::AlreadyReviewed);
    }
    if state.rounds >= cap {
        return Err(Pass::CapReached {
            rounds: state.rounds,
            cap,
        });
    }
    Ok(change.to_string())
}

/// What the gate did at one stop.
#[derive(Debug, Clone)]
pub enum GateOutcome {
    /// No review: the agent stops.
    Passed(Pass),
    /// The reviewer approved the change: the agent stops.
    Clean {
        record: Box<RunRecord>,
        verdict: Verdict,
    },
    /// The reviewer found issues: the agent is to continue with them.
    Findings {
        record: Box<RunRecord>,
        verdict: Verdict,
    },
    /// The review did not happen (no reviewer, a worker error, a timeout, a rate limit): the
    /// agent stops; `why` says what went wrong, for the host's log.
    Failed { run: Option<String>, why: String },
}

impl Service {
    /// One stop of an agent's turn: reviews the uncommitted work in `request.dir` when the gate's
    /// rules allow it, synchronously, within [`GATE_TIMEOUT`].
    pub fn review_gate(&self, request: &GateRequest) -> GateOutcome {
        let config = match self.config(&FlagValues::default()) {
            Ok(c) => c,
            Err(e) => {
                return GateOutcome::Failed {
                    run: None,
                    why: e.message,
                }
            }
        };
        if request.only_if_enabled && !config.flag("review_gate") {
            return GateOutcome::Passed(Pass::Disabled);
        }
        if request.stop_hook_active {
            return GateOutcome::Passed(Pass::SecondStop);
        }
        let cap = config
            .count("review_gate_max_rounds")
            .unwrap_or(DEFAULT_MAX_ROUNDS);
        let path = self.gate_state_path(&request.session);
        // A session that had its reviews costs no snapshot of the tree (`claim` checks again).
        let rounds = load_state(&path).rounds;
        if rounds >= cap {
            return GateOutcome::Passed(Pass::CapReached { rounds, cap });
        }
        let change = match self.uncommitted_change(&request.dir) {
            Ok(c) => c,
            Err(e) => {
                return GateOutcome::Failed {
                    run: None,
                    why: e.message,
                }
            }
        };
        let Some(change) = change else {
            return GateOutcome::Passed(Pass::NoChange);
        };
        if let Err(outcome) = claim(&path, &change, cap) {
            return outcome;
        }
        let outcome = self.gate_review(&request.dir);
        let run = match &outcome {
            GateOutcome::Clean { record, .. } | GateOutcome::Findings { record, .. } => {
                Some(record.id.clone())
            }
            GateOutcome::Failed { run, .. } => run.clone(),
            GateOutcome::Passed(_) => None,
        };
        if let Some(run) = run {
            // Re-read under the lock: another stop of the session may have written since.
            let saved = lock_session(&path).and_then(|_lock| {
                let mut state = load_state(&path);
                state.runs.push(run);
                save_state(&path, &state)
            });
            if let Err(why) = saved {
                tracing::warn!("{why}");
            }
        }
        outcome
    }

    /// One foreground `review --uncommitted` of `dir`, its outcome.
    fn gate_review(&self, dir: &Path) -> GateOutcome {
        let review = ReviewRequest {
            uncommitted: true,
            dir: Some(dir.to_path_buf()),
            timeout: Some(format!("{}s", GATE_TIMEOUT.as_secs())),
            ..ReviewRequest::default()
        };
        let resolved = match self.prepare_review(&review) {
            Ok(r) => r,
            Err(e) => {
                return GateOutcome::Failed {
                    run: None,
                    why: e.message,
                }
            }
        };
        let mut spec = resolved.spec;
        // A reviewer cooling down after a rate limit is a failed review here, not a wait: the
        // host is waiting on this hook.
        spec.max_hold = Duration::ZERO;
        let (record, _notes) = match self.run_foreground(spec, &mut Silent) {
            Ok(done) => done,
            Err(e) => {
                return GateOutcome::Failed {
                    run: None,
                    why: e.message,
                }
            }
        };
        match record.verdict.clone() {
            Some(verdict) if verdict.clean() => GateOutcome::Clean {
                record: Box::new(record),
                verdict,
            },
            Some(verdict) => GateOutcome::Findings {
                record: Box::new(record),
                verdict,
            },
            None => GateOutcome::Failed {
                why: record.error.clone().unwrap_or_else(|| {
                    format!(
                        "the review ended {} without a verdict",
                        record.state.as_str()
                    )
                }),
                run: Some(record.id),
            },
        }
    }

    /// The change in `dir`'s work tree as `HEAD..SNAPSHOT` (tree ids), or `None` when `dir` is
    /// not in a git repository or has no uncommitted change.
    fn uncommitted_change(&self, dir: &Path) -> Result<Option<String>, ServiceError> {
        let Some(repo) =
            pitroom_git::Repo::discover(dir).map_err(|e| ServiceError::refused(e.to_string()))?
        else {
            return Ok(None);
        };
        let trees = self.uncommitted_trees(&repo)?;
        Ok((trees.head != trees.snapshot.tree)
            .then(|| format!("{}..{}", trees.head, trees.snapshot.tree)))
    }

    fn gate_state_path(&self, session: &str) -> PathBuf {
        gate_dir(self.home()).join(format!("{}.json", file_name(session)))
    }
}

/// Where the gate keeps its sessions' state and locks.
fn gate_dir(home: &pitroom_core::Home) -> PathBuf {
    home.root.join("review-gate")
}

/// The gate's sessions whose state was last written before `cutoff` (by the file's real age:
/// a session is no stamped record), by file name, for `clean`.
pub(crate) fn idle_sessions(
    home: &pitroom_core::Home,
    cutoff: std::time::SystemTime,
) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(gate_dir(home)) else {
        return Vec::new();
    };
    let mut idle: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .filter(|p| {
            std::fs::metadata(p)
                .and_then(|m| m.modified())
                .is_ok_and(|at| at < cutoff)
        })
        .collect();
    idle.sort();
    idle
}

/// Removes an idle session's state and its lock, under that lock so a gate running for the
/// session right now keeps it; `Ok(false)` when one is.
pub(crate) fn forget_session(state: &Path) -> std::io::Result<bool> {
    let (lock_path, file) = open_lock(state)?;
    let Ok(lock) = nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock)
    else {
        return Ok(false);
    };
    pitroom_core::log::unless_gone(std::fs::remove_file(state))?;
    // The lock file goes while held: a gate that opens it after this makes a new one.
    pitroom_core::log::unless_gone(std::fs::remove_file(&lock_path))?;
    drop(lock);
    Ok(true)
}

/// A session id as a file name: itself when it is a plain name (hosts use UUIDs), else a hash
/// of it, so no id can name a path outside the gate's directory.
fn file_name(session: &str) -> String {
    let plain = !session.is_empty()
        && session.len() <= 128
        && !session.starts_with('.')
        && session
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if plain {
        return session.to_string();
    }
    // FNV-1a, 64 bits: stable across builds, unlike the standard library's hasher.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in session.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("session-{h:016x}")
}

/// Decides on `change` and, when it is to be reviewed, remembers it and one more round, all
/// under the session's lock: two Stop hooks running the gate at once (the plugin's and the
/// installed one) must not both review it. Remembered before the review starts, so a review the
/// host cuts short (its own timeout, the user's interrupt) is not started again. `Err` is what
/// the gate answers instead of reviewing.
fn claim(path: &Path, change: &str, cap: u64) -> Result<(), GateOutcome> {
    let failed = |why| GateOutcome::Failed { run: None, why };
    let _lock = lock_session(path).map_err(failed)?;
    let mut state = load_state(path);
    let change = decide(false, Some(change), &state, cap).map_err(GateOutcome::Passed)?;
    state.reviewed.push(change);
    state.rounds += 1;
    save_state(path, &state).map_err(failed)
}

/// The session's lock (`<session>.lock` beside its state), held until dropped.
fn lock_session(path: &Path) -> Result<nix::fcntl::Flock<std::fs::File>, String> {
    let fail = |e: &dyn std::fmt::Display| {
        format!(
            "cannot lock the review gate's state {}: {e}; check that Pitroom's state directory is writable",
            path.with_extension("lock").display()
        )
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| fail(&e))?;
    }
    let (_, file) = open_lock(path).map_err(|e| fail(&e))?;
    nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive).map_err(|(_, e)| fail(&e))
}

/// The session's lock file beside its state `path` (`<session>.lock`), opened to be locked.
fn open_lock(path: &Path) -> std::io::Result<(PathBuf, std::fs::File)> {
    let lock_path = path.with_extension("lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)?;
    Ok((lock_path, file))
}

/// The state at `path`; a missing or unreadable file is a session the gate has not seen.
fn load_state(path: &Path) -> GateState {
    std::fs::read(path)
        .ok()
        .and_then(|raw| serde_json::from_slice(&raw).ok())
        .unwrap_or_default()
}

fn save_state(path: &Path, state: &GateState) -> Result<(), String> {
    let fail = |e: &dyn std::fmt::Display| {
        format!(
            "cannot write the review gate's state {}: {e}; check that Pitroom's state directory is writable",
            path.display()
        )
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| fail(&e))?;
    }
    let raw = serde_json::to_vec_pretty(state).map_err(|e| fail(&e))?;
    pitroom_core::record::write_atomic(path, &raw).map_err(|e| fail(&e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(reviewed: &[&str], rounds: u64) -> GateState {
        GateState {
            reviewed: reviewed.iter().map(|s| s.to_string()).collect(),
            rounds,
            runs: Vec::new(),
        }
    }

    #[test]
    fn a_new_change_under_the_cap_is_reviewed() {
        let fresh = GateState::default();
        assert_eq!(decide(false, Some("a..b"), &fresh, 3), Ok("a..b".into()));
        assert_eq!(
            decide(false, Some("a..c"), &state(&["a..b"], 2), 3),
            Ok("a..c".into())
        );
    }

    #[test]
    fn the_second_stop_of_a_turn_passes_whatever_the_change() {
        assert_eq!(
            decide(true, Some("a..b"), &GateState::default(), 3),
            Err(Pass::SecondStop)
        );
    }

    #[test]
    fn no_change_passes() {
        assert_eq!(
            decide(false, None, &GateState::default(), 3),
            Err(Pass::NoChange)
        );
    }

    #[test]
    fn a_change_reviewed_before_passes_even_under_the_cap() {
        assert_eq!(
            decide(false, Some("a..b"), &state(&["x..y", "a..b"], 2), 3),
            Err(Pass::AlreadyReviewed)
        );
    }

    #[test]
    fn the_cap_stops_new_reviews() {
        assert_eq!(
            decide(false, Some("a..d"), &state(&["a..b", "a..c"], 2), 2),
            Err(Pass::CapReached { rounds: 2, cap: 2 })
        );
        assert_eq!(
            decide(false, Some("a..b"), &GateState::default(), 0),
            Err(Pass::CapReached { rounds: 0, cap: 0 })
        );
    }

    #[test]
    fn a_claim_waits_for_the_sessions_lock_and_sees_what_its_holder_recorded() {
        let dir = tempfile::tempdir().expect("scratch");
        let path = dir.path().join("review-gate/s.json");
        let held = lock_session(&path).expect("the lock");
        let other = {
            let path = path.clone();
            std::thread::spawn(move || claim(&path, "a..b", 3))
        };
        // While the lock is held, another stop of the session records the same change.
        save_state(&path, &state(&["a..b"], 1)).expect("saved");
        drop(held);
        let outcome = other.join().expect("the claim ends");
        assert!(
            matches!(outcome, Err(GateOutcome::Passed(Pass::AlreadyReviewed))),
            "{outcome:?}"
        );
        assert_eq!(load_state(&path), state(&["a..b"], 1), "no second round");
        // A new change is claimed and remembered.
        assert!(claim(&path, "a..c", 3).is_ok());
        assert_eq!(load_state(&path), state(&["a..b", "a..c"], 2));
    }

    #[test]
    fn a_session_id_never_names_a_path_outside_the_gate_dir() {
        assert_eq!(
            file_name("0f6c1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b"),
            "0f6c1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b"
        );
        for hostile in ["../../etc/passwd", "a/b", "", ".hidden", "x\0y"] {
            let name = file_name(hostile);
            assert!(name.starts_with("session-"), "{hostile:?} → {name}");
            assert!(!name.contains('/'));
        }
        assert_eq!(file_name("a/b"), file_name("a/b"), "stable");
        assert_ne!(file_name("a/b"), file_name("a/c"));
    }
}
