//! Notifications (`notify = true`) on the fake worker, with a stand-in `notify-send` on PATH
//! that records what it was asked to show.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use pitroom_testkit::repo::dirty_repo;
use pitroom_testkit::TestEnv;
use serde_json::json;

use super::common::{bg_id, fake_env, show};

/// A `notify-send` that appends its arguments, each followed by `|`, and a newline per call,
/// to the file it returns.
fn recording_notifier(env: &mut TestEnv) -> PathBuf {
    let bin = env.dir("notifier-bin");
    let log = env.dir("notifier").join("calls.log");
    let script = bin.join("notify-send");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nprintf '%s|' \"$@\" >> '{}'\necho >> '{}'\n",
            log.display(),
            log.display()
        ),
    )
    .expect("notifier");
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let path = format!("{}:{}", bin.display(), env.path().display());
    env.set("PATH", path);
    std::fs::write(env.root.join("pitroom.toml"), "notify = true\n").expect("config");
    log
}

/// The calls the notifier recorded, once every supervisor in the state dir has exited (the
/// notification is their last act): a bounded wait on what the processes leave, not a sleep.
fn calls_after_supervisors(env: &TestEnv, repo: &Path, ids: &[String], log: &Path) -> String {
    let deadline = Instant::now() + Duration::from_secs(120);
    for id in ids {
        loop {
            let record = show(env, repo, id);
            let pid = record["pid"].as_u64().unwrap_or(0);
            let gone = record["state"] != "running"
                && record["state"] != "queued"
                && !Path::new(&format!("/proc/{pid}")).exists();
            if gone {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "supervisor of {id} still running"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    std::fs::read_to_string(log).unwrap_or_default()
}

#[test]
fn a_background_run_that_ends_is_told_to_the_desktop_once() {
    let mut env = fake_env(json!([{"text": "SUMMARY: the reader is in auth.rs"}]));
    let log = recording_notifier(&mut env);
    let repo = dirty_repo(&env, "repo");
    let id = bg_id(&env.run_expecting(&repo, &["--bg", "find the cookie reader"], 0));
    let calls = calls_after_supervisors(&env, &repo, std::slice::from_ref(&id), &log);
    assert_eq!(
        calls,
        format!(
            "--app-name=Pitroom|--|Pitroom: run {id} done|find the cookie reader\nthe reader is in auth.rs|\n"
        )
    );

    // A foreground run's report is the news: no notification.
    env.run_expecting(&repo, &["find it again"], 0);
    assert_eq!(std::fs::read_to_string(&log).unwrap_or_default(), calls);
}

#[test]
fn a_crew_is_told_once_when_its_last_run_ends() {
    let mut env = fake_env(json!([{"text": "SUMMARY: looked"}]));
    let log = recording_notifier(&mut env);
    let repo = dirty_repo(&env, "repo");
    let out = env.run_expecting(&repo, &["crew", "-g", "trio", "one", "two", "three"], 0);
    let ids: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(ids.len(), 3);
    let calls = calls_after_supervisors(&env, &repo, &ids, &log);
    assert_eq!(
        calls,
        "--app-name=Pitroom|--|Pitroom: group trio done|3 run(s): 3 done, 0 not (pitroom status -g trio)|\n",
        "one call, from whichever run ended last"
    );
}
