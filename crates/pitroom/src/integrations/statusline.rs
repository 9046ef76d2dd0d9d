//! `pitroom statusline [--then CMD]`: one line for a host's status bar — workers running (with
//! their backends) and this week's estimated saving — or nothing when there is nothing to say.
//!
//! Hosts run it several times a second and cancel a slow run, so the common path reads only
//! what changed since the last call: run directories newer than a *frontier* (the newest run
//! such that it and every older run have ended) and a small cache file. The saving is
//! recomputed from the history only when a run ended since (or every ten minutes, as the week
//! slides). It takes no lock: records are replaced by atomic renames, the cache likewise.

use std::io::{IsTerminal, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use pitroom_core::home::supervisor_alive;
use pitroom_core::Home;
use serde::{Deserialize, Serialize};

use super::StatuslineArgs;

/// The cache's file name in the state dir.
pub(crate) const CACHE_FILE: &str = "statusline.json";

/// How long a computed saving stands when no run has ended.
const SAVINGS_TTL_MS: i64 = 10 * 60 * 1000;

/// A run directory without a record this long after its creation is debris, not a run starting.
const RECORDLESS_GRACE: Duration = Duration::from_secs(60);

/// What the last call learnt, so the next one reads only what is new.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Cache {
    /// Every run up to and including this id has ended ("" before the first).
    pub frontier: String,
    /// Runs newer than the frontier that have ended (a changed count means a run ended).
    pub ended_above: usize,
    /// Estimated saving over the last 7 days, USD.
    pub saved_week: f64,
    /// When `saved_week` was computed (Unix ms).
    pub refreshed_ms: i64,
}

/// What the status line reports.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Status {
    /// The backend of each running (or queued) run, oldest first.
    pub running: Vec<String>,
    pub saved_week: f64,
}

pub(crate) fn statusline(args: StatuslineArgs) -> i32 {
    let input = read_stdin();
    let home = Home::locate(&crate::commands::env_lookup);
    let ours = status(&home).map(|s| render(&s)).unwrap_or_default();
    let theirs = args.then.as_deref().map(|cmd| run_then(cmd, &input));
    let line = join(theirs.as_deref(), &ours);
    if !line.is_empty() {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
    }
    0
}

/// The host's status JSON: not needed for Pitroom's own line, but passed on to `--then`.
fn read_stdin() -> Vec<u8> {
    let stdin = std::io::stdin();
    let mut raw = Vec::new();
    if !stdin.is_terminal() {
        let _ = stdin.lock().take(1 << 20).read_to_end(&mut raw);
    }
    raw
}

/// The status of `home`, or `None` when Pitroom has never run here (nothing to say, and
/// nothing is created).
pub(crate) fn status(home: &Home) -> Option<Status> {
    let mut cache = load_cache(home);
    let names = newer_run_ids(&home.runs(), &cache.frontier)?;
    let scan = scan(home, &names, &cache.frontier);
    let now = now_ms();
    let changed = scan.frontier != cache.frontier || scan.ended_above != cache.ended_above;
    if changed || now - cache.refreshed_ms > SAVINGS_TTL_MS {
        cache = Cache {
            frontier: scan.frontier,
            ended_above: scan.ended_above,
            saved_week: saved_this_week().unwrap_or(cache.saved_week),
            refreshed_ms: now,
        };
        store_cache(home, &cache);
    }
    Some(Status {
        running: scan.running,
        saved_week: cache.saved_week,
    })
}

/// Run ids newer than `frontier`, oldest first; `None` when there is no runs directory.
fn newer_run_ids(runs: &Path, frontier: &str) -> Option<Vec<String>> {
    let entries = std::fs::read_dir(runs).ok()?;
    let mut ids: Vec<String> = entries
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        // Names only: no stat per run, so a long history costs one directory read.
        .filter(|n| looks_like_run_id(n) && n.as_str() > frontier)
        .collect();
    ids.sort();
    Some(ids)
}

fn looks_like_run_id(name: &str) -> bool {
    name.len() == 20 && name.as_bytes()[..8].iter().all(u8::is_ascii_digit)
}

struct Scan {
    running: Vec<String>,
    frontier: String,
    ended_above: usize,
}

/// Reads the records newer than the frontier: which are running, how far the frontier moves.
fn scan(home: &Home, ids: &[String], frontier: &str) -> Scan {
    let mut out = Scan {
        running: Vec::new(),
        frontier: frontier.to_string(),
        ended_above: 0,
    };
    let mut blocked = false;
    for id in ids {
        let ended = match home.load(id) {
            Ok(record) if record.state.is_active() && supervisor_alive(home, &record) => {
                out.running.push(record.backend().to_string());
                false
            }
            // Ended, or active with its supervisor gone: it will never run again.
            Ok(_) => true,
            Err(_) => is_debris(&home.run_dir(id)),
        };
        match (ended, blocked) {
            (true, false) => out.frontier = id.clone(),
            (true, true) => out.ended_above += 1,
            (false, _) => blocked = true,
        }
    }
    out
}

/// A run directory whose record is missing or unreadable long after it was made.
fn is_debris(dir: &Path) -> bool {
    std::fs::metadata(dir)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .is_none_or(|age| age > RECORDLESS_GRACE)
}

/// The estimated saving over the last 7 days, from the history (imported runs included).
fn saved_this_week() -> Option<f64> {
    let service = pitroom_service::Service::from_process().ok()?;
    let (history, _notes) = service.history().ok()?;
    let since = pitroom_service::ledger::last_days(7);
    history.savings(&since).ok().map(|s| s.saved)
}

fn load_cache(home: &Home) -> Cache {
    std::fs::read(home.root.join(CACHE_FILE))
        .ok()
        .and_then(|raw| serde_json::from_slice(&raw).ok())
        .unwrap_or_default()
}

/// Best-effort: a cache that cannot be written only costs the next call a longer scan.
fn store_cache(home: &Home, cache: &Cache) {
    if let Ok(raw) = serde_json::to_vec(cache) {
        let _ = pitroom_core::record::write_atomic(&home.root.join(CACHE_FILE), &raw);
    }
}

/// The cache's lifetime is real time: the wall clock (a fixed clock would never refresh it).
fn now_ms() -> i64 {
    jiff::Timestamp::now().as_millisecond()
}

/// `🏁 pitroom · 2 running (opencode ×2, codex) · ~$0.42 saved this week`, or "" when there is
/// nothing to say.
pub(crate) fn render(status: &Status) -> String {
    let mut parts = Vec::new();
    if !status.running.is_empty() {
        parts.push(format!(
            "{} running ({})",
            status.running.len(),
            backends(&status.running)
        ));
    }
    if status.saved_week >= 0.005 {
        parts.push(format!("~${:.2} saved this week", status.saved_week));
    }
    if parts.is_empty() {
        return String::new();
    }
    format!("🏁 pitroom · {}", parts.join(" · "))
}

/// Backends in order of first appearance, with a count when more than one run uses it.
fn backends(running: &[String]) -> String {
    let mut counted: Vec<(&str, usize)> = Vec::new();
    for b in running {
        match counted.iter_mut().find(|(name, _)| name == b) {
            Some((_, n)) => *n += 1,
            None => counted.push((b, 1)),
        }
    }
    counted
        .iter()
        .map(|(b, n)| match n {
            1 => b.to_string(),
            n => format!("{b} ×{n}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The user's own status command, fed the same JSON; its output without the trailing newline.
fn run_then(command: &str, input: &[u8]) -> String {
    let child = Command::new("sh")
        .args(["-c", command])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn();
    let Ok(mut child) = child else {
        return String::new();
    };
    if let Some(mut stdin) = child.stdin.take() {
        // A command that does not read its input closes the pipe; that is fine.
        let _ = stdin.write_all(input);
    }
    match child.wait_with_output() {
        Ok(out) => String::from_utf8_lossy(&out.stdout)
            .trim_end_matches('\n')
            .to_string(),
        Err(_) => String::new(),
    }
}

/// The user's line first, then Pitroom's, on the same row.
fn join(theirs: Option<&str>, ours: &str) -> String {
    match (theirs.filter(|t| !t.is_empty()), ours.is_empty()) {
        (None, _) => ours.to_string(),
        (Some(t), true) => t.to_string(),
        (Some(t), false) => {
            let (first, rest) = t.split_once('\n').unwrap_or((t, ""));
            if rest.is_empty() {
                format!("{first} · {ours}")
            } else {
                format!("{first} · {ours}\n{rest}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_running_and_nothing_saved_prints_nothing() {
        assert_eq!(render(&Status::default()), "");
    }

    #[test]
    fn running_workers_are_counted_per_backend_with_the_weekly_saving() {
        let s = Status {
            running: vec!["opencode".into(), "codex".into(), "opencode".into()],
            saved_week: 0.4234,
        };
        assert_eq!(
            render(&s),
            "🏁 pitroom · 3 running (opencode ×2, codex) · ~$0.42 saved this week"
        );
    }

    #[test]
    fn the_users_line_comes_first_on_the_same_row() {
        assert_eq!(join(Some("main · Opus"), "🏁 x"), "main · Opus · 🏁 x");
        assert_eq!(join(Some("a\nb"), "🏁 x"), "a · 🏁 x\nb");
        assert_eq!(join(Some("a"), ""), "a");
        assert_eq!(join(None, "🏁 x"), "🏁 x");
    }

    #[test]
    fn a_state_dir_without_runs_has_no_status_and_gets_no_cache() {
        let dir = tempfile::tempdir().expect("tmp");
        let home = Home {
            root: dir.path().join("state"),
        };
        assert_eq!(status(&home), None);
        assert!(!home.root.exists());
    }

    #[test]
    fn run_ids_are_told_from_other_names_without_reading_them() {
        assert!(looks_like_run_id("20261201-101500-123a"));
        assert!(!looks_like_run_id(".hidden"));
        assert!(!looks_like_run_id("20261201-101500-123a.tmp"));
    }
}
