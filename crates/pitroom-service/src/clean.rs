//! `clean`: which run directories may go (finished, older than the cutoff, no unapplied
//! isolated patch) and removing them, keeping their ledger rows marked as cleaned.

use pitroom_core::{Home, RunRecord};
use pitroom_store::open_synced;
use pitroom_workers::Mode;
use serde::Serialize;

use crate::Service;

/// Why `clean` keeps or removes a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CleanDecision {
    Remove,
    KeepActive,
    KeepUnappliedPatch,
    KeepRecent,
    KeepUnreadable,
}

/// What `clean` decides for one run directory. An isolated run whose patch was never applied
/// is kept whatever its age, discarded or not: `discard` promises the patch stays.
pub fn clean_decision(record: &RunRecord, cutoff_ms: i64) -> CleanDecision {
    if record.state.is_active() {
        return CleanDecision::KeepActive;
    }
    if record.spec.mode == Mode::Isolate && !record.patch.is_applied() && !record.changes.is_empty()
    {
        return CleanDecision::KeepUnappliedPatch;
    }
    // A record whose stamps did not read has no age: kept, never taken for the oldest.
    let ended = record.ended_at.or(record.created_known());
    match ended.map(|t| t.as_millisecond()) {
        Some(ms) if ms < cutoff_ms => CleanDecision::Remove,
        Some(_) => CleanDecision::KeepRecent,
        None => CleanDecision::KeepUnreadable,
    }
}

/// What `clean` decided, and (with `remove`) did.
#[derive(Debug, Default, Serialize)]
pub struct Cleaning {
    /// Runs that ended before the cutoff and may go.
    pub doomed: Vec<String>,
    /// The doomed runs actually removed (empty on a dry run).
    pub removed: Vec<String>,
    /// Isolated runs whose patch was never applied: kept whatever their age.
    pub kept_unapplied_patches: Vec<String>,
    /// Runs that could not be removed, with the reason.
    pub failed: Vec<String>,
    /// The review gate's sessions (their ids as file names) idle for longer than the cutoff:
    /// what each remembered of its reviews, removed with the runs.
    pub idle_gate_sessions: Vec<String>,
    /// The idle gate sessions actually removed (empty on a dry run).
    pub removed_gate_sessions: Vec<String>,
    /// What went wrong on the side (the history's marks), for the caller to show.
    pub warnings: Vec<String>,
}

impl Service {
    /// Decides which run directories ended more than `days` ago and may go, and removes them
    /// when `remove` (else a dry run).
    pub fn clean(&self, days: u32, remove: bool) -> Cleaning {
        let home = self.home();
        // An age of stamped records: the stamping clock, so a fixed clock's runs are new.
        let cutoff = pitroom_core::clock::now().as_millisecond() - i64::from(days) * 86_400_000;
        let mut cleaning = Cleaning::default();
        for id in home.run_ids() {
            let v = match home.load_settled(&id) {
                Ok(record) => clean_decision(&record, cutoff),
                Err(_) => CleanDecision::KeepUnreadable,
            };
            match v {
                CleanDecision::Remove => cleaning.doomed.push(id),
                CleanDecision::KeepUnappliedPatch => cleaning.kept_unapplied_patches.push(id),
                _ => {}
            }
        }
        // A gate session's state is no stamped record: its age is the file's, by the wall clock.
        let idle_since = std::time::SystemTime::now()
            .checked_sub(std::time::Duration::from_secs(u64::from(days) * 86_400))
            .unwrap_or(std::time::UNIX_EPOCH);
        let idle = crate::review_gate::idle_sessions(home, idle_since);
        if remove {
            for state in &idle {
                match crate::review_gate::forget_session(state) {
                    Ok(true) => cleaning.removed_gate_sessions.push(session_name(state)),
                    Ok(false) => {}
                    Err(e) => cleaning
                        .warnings
                        .push(format!("review gate state {}: {e}", state.display())),
                }
            }
        }
        cleaning.idle_gate_sessions = idle.iter().map(|p| session_name(p)).collect();
        if remove {
            for id in &cleaning.doomed {
                match remove_run(home, id) {
                    Ok(()) => cleaning.removed.push(id.clone()),
                    Err(e) => cleaning.failed.push(format!("{id}: {e}")),
                }
            }
            if let Err(e) = mark_pruned(home, &cleaning.removed) {
                cleaning.warnings.push(format!("history: {e}"));
            }
        }
        cleaning
    }
}

/// A gate session's name: its state file's stem.
fn session_name(state: &std::path::Path) -> String {
    state
        .file_stem()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Removes a run's directory and any isolated copy left behind for it (only inside `copies/`).
fn remove_run(home: &Home, id: &str) -> std::io::Result<()> {
    let copy = home.copies().join(id);
    if copy.is_dir() {
        std::fs::remove_dir_all(&copy)?;
    }
    std::fs::remove_dir_all(home.run_dir(id))
}

/// Keeps the removed runs' ledger rows, marked as cleaned, so savings and stats still count
/// them. Best-effort: the history is rebuilt from what is left if this fails.
fn mark_pruned(home: &Home, ids: &[String]) -> Result<(), pitroom_store::StoreError> {
    if ids.is_empty() {
        return Ok(());
    }
    open_synced(home).and_then(|(mut store, _)| store.mark_pruned(ids))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pitroom_core::record::PatchFate;
    use serde_json::json;

    fn record(mode: &str, state: &str, ended: &str) -> RunRecord {
        serde_json::from_value(json!({
            "version": 1, "id": "r", "state": state, "created_at": ended, "ended_at": ended,
            "started_at": ended, "duration_ms": 1, "repo": null, "workdir": null, "copy": null,
            "pid": null, "pid_start": null, "session": null, "base_tree": null,
            "after_tree": null, "answer": null, "error": null, "failure": null,
            "worker_exit": null, "last": null, "receipt": null, "refs": null, "verify": null,
            "supervisor_peak_kb": null,
            "spec": {
                "task": "t", "mode": mode, "backend": "opencode", "model": null, "effort": null,
                "web": false, "dir": "/r", "timeout_secs": 1.0, "watchdog_secs": 1.0,
                "background": false, "allow_non_git": false, "parent": null,
                "primary": "sonnet", "price": null
            }
        }))
        .unwrap()
    }

    const OLD: &str = "2026-01-01T00:00:00Z";
    const CUTOFF: &str = "2026-06-01T00:00:00Z";

    fn cutoff() -> i64 {
        CUTOFF.parse::<jiff::Timestamp>().unwrap().as_millisecond()
    }

    #[test]
    fn clean_removes_old_finished_runs_and_keeps_recent_and_active_ones() {
        assert_eq!(
            clean_decision(&record("read", "done", OLD), cutoff()),
            CleanDecision::Remove
        );
        assert_eq!(
            clean_decision(&record("read", "failed", "2026-07-01T00:00:00Z"), cutoff()),
            CleanDecision::KeepRecent
        );
        assert_eq!(
            clean_decision(&record("write", "running", OLD), cutoff()),
            CleanDecision::KeepActive
        );
    }

    #[test]
    fn clean_keeps_a_run_whose_stamps_do_not_read() {
        assert_eq!(
            clean_decision(&record("read", "done", "last tuesday"), cutoff()),
            CleanDecision::KeepUnreadable,
            "no age: never taken for the oldest"
        );
        // An `ended_at` that does not read leaves the run as old as it was made.
        let mut r = serde_json::to_value(record("read", "done", OLD)).expect("serialises");
        r["ended_at"] = "garbage".into();
        let r: RunRecord = serde_json::from_value(r).expect("still reads");
        assert_eq!(clean_decision(&r, cutoff()), CleanDecision::Remove);
    }

    #[test]
    fn clean_never_removes_an_unapplied_isolated_patch() {
        let mut r = record("isolate", "done", OLD);
        r.changes = vec![pitroom_core::record::ChangedFile {
            status: 'M',
            path: "a".into(),
            old_path: None,
            added: Some(1),
            deleted: Some(0),
        }];
        assert_eq!(
            clean_decision(&r, cutoff()),
            CleanDecision::KeepUnappliedPatch
        );
        r.patch = PatchFate::Discarded;
        assert_eq!(
            clean_decision(&r, cutoff()),
            CleanDecision::KeepUnappliedPatch,
            "discard keeps the patch, so clean does too"
        );
        r.patch = PatchFate::Applied;
        assert_eq!(clean_decision(&r, cutoff()), CleanDecision::Remove);
        // An isolated run that changed nothing has no patch to lose.
        assert_eq!(
            clean_decision(&record("isolate", "done", OLD), cutoff()),
            CleanDecision::Remove
        );
    }

    #[test]
    fn clean_forgets_the_review_gates_idle_sessions_but_not_one_in_use() {
        let dir = tempfile::tempdir().expect("temp dir");
        let env = vec![(
            "PITROOM_HOME".to_string(),
            dir.path().join("state").display().to_string(),
        )];
        let service = Service::new(env, "/nonexistent/pitroom".into());
        let gate = service.home().root.join("review-gate");
        std::fs::create_dir_all(&gate).expect("gate dir");
        let long_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(40 * 86_400);
        for (session, idle) in [("idle", true), ("busy", true), ("recent", false)] {
            let state = std::fs::File::create(gate.join(format!("{session}.json"))).expect("state");
            if idle {
                state.set_modified(long_ago).expect("an old state");
            }
        }
        // A gate running for `busy` right now holds its lock.
        let held = std::fs::File::create(gate.join("busy.lock")).expect("lock file");
        let _held = nix::fcntl::Flock::lock(held, nix::fcntl::FlockArg::LockExclusive)
            .map_err(|(_, e)| e)
            .expect("locked");

        let dry = service.clean(30, false);
        assert_eq!(dry.idle_gate_sessions, ["busy", "idle"]);
        assert!(dry.removed_gate_sessions.is_empty());
        assert!(
            gate.join("idle.json").is_file(),
            "a dry run removes nothing"
        );

        let done = service.clean(30, true);
        assert_eq!(done.removed_gate_sessions, ["idle"]);
        assert!(!gate.join("idle.json").exists() && !gate.join("idle.lock").exists());
        assert!(
            gate.join("busy.json").is_file(),
            "the session in use is kept"
        );
        assert!(gate.join("recent.json").is_file());
        assert!(done.warnings.is_empty(), "{:?}", done.warnings);
    }
}
