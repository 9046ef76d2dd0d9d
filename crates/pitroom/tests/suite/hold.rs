//! Holds on the fake worker: a run whose every target is cooling down after a rate limit waits,
//! `held`, until the earliest reset, and starts then; `stop` ends a hold; `--no-hold` starts at
//! once as before. Cooldowns run on the wall clock, so these tests write them relative to now.

use std::path::Path;
use std::time::{Duration, Instant};

use pitroom_testkit::repo::dirty_repo;
use pitroom_testkit::TestEnv;
use serde_json::json;

use super::common::{bg_id, fake_env, show};

/// Puts `target` on cooldown until `secs` from now, as a rate-limited run would have.
fn cool_down(env: &TestEnv, target: &str, secs: i64) -> String {
    let until = jiff::Timestamp::now()
        .checked_add(jiff::SignedDuration::from_secs(secs))
        .expect("a time")
        .to_string();
    std::fs::create_dir_all(&env.state).expect("state dir");
    std::fs::write(
        env.state.join("cooldowns.json"),
        json!({target: {"until": until, "reason": "429 Too Many Requests"}}).to_string(),
    )
    .expect("cooldowns");
    until
}

/// The record of `id` once `done` says so: a bounded wait on what the supervisor records.
fn record_once(
    env: &TestEnv,
    repo: &Path,
    id: &str,
    done: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let record = show(env, repo, id);
        if done(&record) {
            return record;
        }
        assert!(Instant::now() < deadline, "{record:#}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_run_whose_only_target_is_cooling_down_is_held_and_stop_ends_the_hold() {
    let env = fake_env(json!([{"text": "SUMMARY: never reached"}]));
    let repo = dirty_repo(&env, "repo");
    let until = cool_down(&env, "opencode", 3600);
    std::fs::write(env.root.join("pitroom.toml"), "max_hold = \"2h\"\n").expect("config");
    let id = bg_id(&env.run_expecting(&repo, &["--bg", "look around"], 0));
    let held = record_once(&env, &repo, &id, |r| r["phase"] == "held");
    assert_eq!(held["state"], "queued");
    assert_eq!(held["held_until"], until.as_str());
    let status = env.run(&repo, &["status", &id]);
    assert!(
        String::from_utf8_lossy(&status.stdout).contains(" held "),
        "{status:?}"
    );
    let watched = env.run(&repo, &["watch", &id, "--json", "--timeout", "1"]);
    let events = String::from_utf8_lossy(&watched.stdout);
    assert!(
        events.contains(&format!(
            r#"{{"event":"held","run":"{id}","until":"{until}"}}"#
        )),
        "{events}"
    );

    env.run_expecting(&repo, &["stop", &id], 0);
    let stopped = record_once(&env, &repo, &id, |r| r["state"] == "stopped");
    assert_eq!(stopped["interrupted_in"], "held");
    assert!(
        stopped["error"].as_str().is_some_and(
            |e| e.contains("while held for a rate limit to reset; the worker never started")
        ),
        "{stopped:#}"
    );
}

#[test]
fn a_held_run_starts_once_the_cooldown_clears() {
    let env = fake_env(json!([{"text": "SUMMARY: ran after the reset"}]));
    let repo = dirty_repo(&env, "repo");
    let until = cool_down(&env, "opencode", 4);
    let out = env.run_expecting(&repo, &["look around", "--json"], 0);
    let record: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(record["state"], "done");
    assert_eq!(
        record["held_until"],
        until.as_str(),
        "it waited for the reset"
    );
    assert!(
        jiff::Timestamp::now() >= until.parse::<jiff::Timestamp>().expect("until"),
        "it returned only after the reset"
    );
}

#[test]
fn no_hold_and_a_reset_beyond_max_hold_start_at_once() {
    let env = fake_env(json!([{"text": "SUMMARY: ran at once"}]));
    let repo = dirty_repo(&env, "repo");
    cool_down(&env, "opencode", 3600);
    let no_hold = env.run_json(&repo, &["--no-hold", "look around", "--json"]);
    assert_eq!(no_hold["state"], "done");
    assert!(no_hold.get("held_until").is_none(), "{no_hold:#}");
    // The default max_hold is 30 minutes: an hour's cooldown is not waited for.
    let beyond = env.run_json(&repo, &["look around", "--json"]);
    assert!(beyond.get("held_until").is_none(), "{beyond:#}");
}
