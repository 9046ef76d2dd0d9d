//! Crews, the slot queue, `watch`, group commands and the fallback chain, on the fake worker.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use pitroom_testkit::repo::{dirty_repo, fingerprint};
use pitroom_testkit::TestEnv;
use serde_json::{json, Value};

use super::common::{
    assert_exit, assert_stderr_has, assert_stdout_has, changed, eventually, fake_env, json_stdout,
    processes_with_cmdline, record_invocations, recorded, show, stdout, str_has, text,
};

/// A worker that takes `ms`, makes one step with a tool call, and answers.
fn slow_answer(ms: u64, answer: &str) -> Value {
    json!([
        {"tool": "read", "input": {"filePath": "calc.py"}, "status": "completed"},
        {"step": {"input": 100, "output": 10, "reason": "tool-calls"}},
        {"sleep_ms": ms},
        {"text": format!("SUMMARY: {answer}")},
        {"step": {"input": 100, "output": 10, "reason": "stop"}}
    ])
}

/// OpenCode's stream for a provider's 429, then the CLI's exit.
fn rate_limited() -> Vec<Value> {
    vec![
        json!({"error": {"name": "APIError", "data": {"message": "Rate limit reached for requests. Please try again in 2 hours.", "statusCode": 429, "isRetryable": true}}}),
        json!({"exit": 1}),
    ]
}

fn crew(env: &TestEnv, dir: &Path, group: &str, tasks: &[&str], extra: &[&str]) -> Vec<String> {
    let mut args = vec!["crew", "-g", group];
    args.extend_from_slice(extra);
    args.extend_from_slice(tasks);
    let out = env.run_expecting(dir, &args, 0);
    let ids: Vec<String> = stdout(&out).lines().map(str::to_string).collect();
    assert_eq!(ids.len(), tasks.len(), "{}", text(&out));
    ids
}

fn timestamp(v: &Value) -> jiff::Timestamp {
    v.as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not a timestamp: {v}"))
}

#[test]
fn a_crew_queues_in_arrival_order_and_never_runs_more_than_max_parallel() {
    let mut env = fake_env(slow_answer(700, "ok"));
    // The spans (and a run's lifetime) are read from the records' stamps: real time.
    env.real_clock();
    env.set("PITROOM_MAX_PARALLEL", "2");
    let dir = env.dir("plain");
    let tasks = ["t1", "t2", "t3", "t4", "t5", "t6"];
    let ids = crew(&env, &dir, "six", &tasks, &[]);
    env.run_expecting(&dir, &["wait", "-g", "six", "--timeout", "60"], 0);

    let records: Vec<Value> = ids.iter().map(|id| show(&env, &dir, id)).collect();
    let spans: Vec<(jiff::Timestamp, jiff::Timestamp)> = records
        .iter()
        .map(|r| {
            let start = timestamp(&r["started_at"]);
            let ms = r["duration_ms"].as_i64().expect("duration");
            (start, start + jiff::SignedDuration::from_millis(ms))
        })
        .collect();
    // Let go in the order the runs were given (the ids sort by creation), by the scheduler's
    // own grant numbers. When two slots free at once, both of the next two runs are entitled
    // and either may take its slot first, so with two slots a run's grant is within one place
    // of its arrival — never further (a ticket with k tickets ahead needs more than k free).
    let grants: Vec<i64> = records
        .iter()
        .map(|r| r["slot_grant"].as_i64().expect("slot_grant"))
        .collect();
    let mut sorted = grants.clone();
    sorted.sort();
    assert_eq!(sorted, [1, 2, 3, 4, 5, 6], "one grant each: {grants:?}");
    for (arrival, grant) in grants.iter().enumerate() {
        assert!(
            (grant - (arrival as i64 + 1)).abs() <= 1,
            "run {arrival} was let go {grant}th: {grants:?}"
        );
    }
    // At no instant more than two workers.
    for (i, (start, _)) in spans.iter().enumerate() {
        let overlapping = spans
            .iter()
            .filter(|(s, e)| s <= start && start < e)
            .count();
        assert!(
            overlapping <= 2,
            "run {i} started with {overlapping} running"
        );
    }
    // Queue time is recorded apart from worker time: the last run was let go fifth or sixth,
    // so it waited in the queue, and its worker time does not include that wait. (How long it
    // waited depends on how fast the crew's supervisors started: no bound is asserted.)
    let last = &records[5];
    let queued = last["queued_ms"].as_i64().expect("queued_ms");
    let worked = last["duration_ms"].as_i64().expect("duration_ms");
    assert!(grants[5] >= 5, "{grants:?}");
    let created = timestamp(&last["created_at"]);
    let ended = timestamp(&last["ended_at"]);
    let lifetime = ended.duration_since(created).as_millis() as i64;
    assert!(queued + worked <= lifetime + 5, "{last:#}");
    // Every slot is free again and the queue is empty.
    assert!(std::fs::read_dir(env.state.join("queue"))
        .unwrap()
        .flatten()
        .all(|e| e.file_name().to_string_lossy().starts_with('.')));
}

#[test]
fn watch_json_follows_a_group_line_by_line_until_all_done() {
    let mut env = fake_env(slow_answer(300, "looked"));
    env.set("PITROOM_MAX_PARALLEL", "1");
    let dir = env.dir("plain");
    let ids = crew(&env, &dir, "watched", &["a", "b", "c"], &[]);
    let out = env.run_expecting(
        &dir,
        &["watch", "-g", "watched", "--json", "--timeout", "60"],
        0,
    );
    let lines: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let mut per_run: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in &lines {
        let event = line["event"].as_str().expect("event");
        let keys: Vec<&str> = match event {
            "queued" | "started" => vec!["run", "mode", "task"],
            "progress" => vec!["run", "steps", "tools", "last"],
            "fallback" => vec!["run", "failed", "reason"],
            "done" | "failed" | "timeout" | "stopped" => {
                vec!["run", "time", "worker", "changes"]
            }
            "all-done" => vec!["runs", "ok", "failed"],
            other => panic!("unknown event {other}: {line}"),
        };
        for key in keys {
            assert!(line.get(key).is_some(), "{event} without {key}: {line}");
        }
        if let Some(run) = line["run"].as_str() {
            per_run
                .entry(run.to_string())
                .or_default()
                .push(event.to_string());
        }
    }
    assert_eq!(
        lines.last().unwrap(),
        &json!({"event": "all-done", "runs": 3, "ok": 3, "failed": 0})
    );
    assert_eq!(per_run.len(), 3, "{lines:#?}");
    for id in &ids {
        let events = &per_run[id];
        assert_eq!(
            events.last().map(String::as_str),
            Some("done"),
            "{id}: {events:?}"
        );
        assert_eq!(events.iter().filter(|e| *e == "done").count(), 1);
    }
    // The last run waited behind the other two: it was seen queued, then started.
    let third = &per_run[&ids[2]];
    let pos = |e: &str| third.iter().position(|x| x == e);
    assert!(pos("queued") < pos("started"), "{third:?}");
    let done = lines
        .iter()
        .find(|l| l["event"] == "done" && l["run"] == ids[2].as_str())
        .unwrap();
    assert_eq!(done["summary"], "looked");
    assert_eq!(done["worker"], "opencode");
}

#[test]
fn watch_shows_runs_that_join_the_group_later() {
    use std::io::BufRead;
    // Every run of the group waits for the gate: the first is still running when the second
    // joins, however slow the machine.
    let mut env = fake_env(json!([]));
    let gate = env.dir("gate").join("open");
    env.set(
        "PITROOM_FAKE_SCRIPT",
        json!([
            {"tool": "read", "input": {"filePath": "calc.py"}, "status": "completed"},
            {"step": {"input": 100, "output": 10, "reason": "tool-calls"}},
            {"wait_file": gate.display().to_string()},
            {"text": "SUMMARY: joined"},
            {"step": {"input": 100, "output": 10, "reason": "stop"}}
        ])
        .to_string(),
    );
    let dir = env.dir("plain");
    let first = crew(&env, &dir, "late", &["first"], &[]);
    let mut watcher = env
        .pitroom(&dir, &["watch", "-g", "late", "--json", "--timeout", "60"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("watch starts");
    let mut lines = std::io::BufReader::new(watcher.stdout.take().expect("stdout")).lines();
    // Watch is following once it has said something about the first run.
    let mut seen = Vec::new();
    for line in lines.by_ref() {
        let line = line.expect("watch's output");
        let about_first = line.contains(&first[0]);
        seen.push(line);
        if about_first {
            break;
        }
    }
    assert!(
        seen.iter().all(|l| !l.contains("all-done")),
        "watch ended before the second run joined: {seen:?}"
    );
    let joined = crew(&env, &dir, "late", &["second"], &[]);
    std::fs::write(&gate, "").expect("open the gate");
    seen.extend(lines.map(|l| l.expect("watch's output")));
    let status = watcher.wait().expect("watch ends");
    assert!(status.success(), "watch: {status:?}: {seen:?}");
    let done = format!("\"event\":\"done\",\"run\":\"{}\"", joined[0]);
    assert!(seen.iter().any(|l| l.contains(&done)), "{seen:?}");
    assert_eq!(
        seen.last().map(String::as_str),
        Some(r#"{"event":"all-done","runs":2,"ok":2,"failed":0}"#),
        "{seen:?}"
    );
}

#[test]
fn status_and_wait_report_a_group_and_exit_75_while_any_runs() {
    let env = fake_env(slow_answer(1500, "slow"));
    let dir = env.dir("plain");
    crew(&env, &dir, "pair", &["x", "y"], &[]);
    let out = env.run_expecting(&dir, &["status", "-g", "pair"], 75);
    assert_stdout_has(&out, "2 runs:");
    let out = env.run_expecting(&dir, &["wait", "-g", "pair", "--timeout", "0.2"], 75);
    assert_stderr_has(&out, "pitroom wait -g pair");
    env.run_expecting(
        &dir,
        &["wait", "-g", "pair", "--brief", "--timeout", "30"],
        0,
    );
    let out = env.run(&dir, &["ls", "-g", "pair", "--json"]);
    let listed: Vec<Value> = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(listed.len(), 2);
    assert!(listed
        .iter()
        .all(|r| r["spec"]["group"] == "pair" && r["state"] == "done"));
}

#[test]
fn wait_any_returns_when_the_first_run_of_a_group_finishes() {
    let env = fake_env(json!({"by_model": {
        "fake/quick": [{"text": "SUMMARY: quick"}, {"step": {"reason": "stop"}}],
        "*": [{"sleep_ms": 60000}]
    }}));
    let dir = env.dir("plain");
    crew(&env, &dir, "race", &["slow"], &[]);
    crew(
        &env,
        &dir,
        "race",
        &["quick"],
        &["-W", "opencode:fake/quick"],
    );
    // The slow run sleeps for a minute: exit 0 within the 30 s timeout (not 75) is `--any`.
    let out = env.run_expecting(
        &dir,
        &["wait", "-g", "race", "--any", "--brief", "--timeout", "30"],
        0,
    );
    assert_stdout_has(&out, "quick");
    assert_stderr_has(&out, "1 still active");
    env.run_expecting(&dir, &["stop", "-g", "race"], 0);
}

#[test]
fn stop_on_a_group_ends_running_and_queued_runs() {
    let mut env = fake_env(json!([{"sleep_ms": 60000}]));
    env.set("PITROOM_MAX_PARALLEL", "1");
    let dir = env.dir("plain");
    let ids = crew(&env, &dir, "halt", &["a", "b", "c"], &[]);
    assert!(eventually(Duration::from_secs(10), || {
        show(&env, &dir, &ids[0])["state"] == "running"
    }));
    // The others' supervisors have put them in the queue (a loaded machine starts them late).
    assert!(eventually(Duration::from_secs(30), || {
        ids[1..]
            .iter()
            .all(|id| show(&env, &dir, id)["phase"] == "queued")
    }));
    env.run_expecting(&dir, &["stop", "-g", "halt"], 0);
    for (i, id) in ids.iter().enumerate() {
        let r = show(&env, &dir, id);
        assert_eq!(r["state"], "stopped", "{r:#}");
        if i > 0 {
            assert!(
                r["error"].as_str().unwrap().contains("while queued"),
                "{r:#}"
            );
            assert!(
                r["started_at"].is_null(),
                "a queued run never started its worker"
            );
        }
    }
    assert!(eventually(Duration::from_secs(5), || {
        processes_with_cmdline(&env.state.display().to_string()).is_empty()
    }));
}

#[test]
fn a_supervisor_killed_while_others_queue_frees_its_slot_and_leaves_no_worker() {
    let mut env = fake_env(json!({"by_model": {
        "fake/hang": [{"sleep_ms": 60000}],
        "*": [{"text": "SUMMARY: second"}, {"step": {"reason": "stop"}}]
    }}));
    env.set("PITROOM_MAX_PARALLEL", "1");
    let dir = env.dir("plain");
    let first = crew(
        &env,
        &dir,
        "crash",
        &["hang"],
        &["-W", "opencode:fake/hang"],
    );
    let second = crew(&env, &dir, "crash", &["after"], &[]);
    let pid = {
        let mut pid = None;
        assert!(eventually(Duration::from_secs(10), || {
            let r = show(&env, &dir, &first[0]);
            pid = (r["state"] == "running")
                .then(|| r["pid"].as_i64())
                .flatten();
            pid.is_some()
        }));
        pid.unwrap() as i32
    };
    assert_eq!(show(&env, &dir, &second[0])["state"], "queued");
    kill(Pid::from_raw(pid), Signal::SIGKILL).expect("kill the supervisor");
    // The killed run held its slot for a minute more: the second finishing within the wait
    // (exit 0, not 75) means the kernel freed the slot at once.
    env.run_expecting(&dir, &["wait", &second[0], "--timeout", "20"], 0);
    let crashed = show(&env, &dir, &first[0]);
    assert_eq!(crashed["state"], "failed", "{crashed:#}");
    assert!(eventually(Duration::from_secs(5), || {
        processes_with_cmdline("fake/hang").is_empty()
    }));
}

#[test]
fn a_write_crew_of_several_tasks_is_a_usage_error() {
    let env = fake_env(json!([]));
    let repo = dirty_repo(&env, "repo");
    let out = env.run_expecting(&repo, &["crew", "-w", "a", "b"], 2);
    assert_stderr_has(&out, "-i");
}

#[test]
fn a_task_file_gives_one_run_per_dashed_section() {
    let env = fake_env(slow_answer(0, "ok"));
    let dir = env.dir("plain");
    let file = dir.join("tasks.md");
    std::fs::write(&file, "first task\n---\nsecond\ntask\n---\n").unwrap();
    let v = env.run_json(
        &dir,
        &[
            "crew",
            "-g",
            "file",
            "--json",
            "--task-file",
            file.to_str().unwrap(),
        ],
    );
    assert_eq!(v["group"], "file");
    let tasks: Vec<&str> = v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["task"].as_str())
        .collect();
    assert_eq!(tasks, ["first task", "second\ntask"]);
    env.run_expecting(&dir, &["wait", "-g", "file", "--timeout", "30"], 0);
}

#[test]
fn a_rate_limited_target_falls_back_at_zero_steps_and_cools_down() {
    let mut env = fake_env(json!({"by_model": {
        "fake/limited": rate_limited(),
        "fake/good": [{"text": "SUMMARY: answered by the second target"}, {"step": {"reason": "stop"}}]
    }}));
    env.set("PITROOM_FALLBACK", "opencode:fake/good");
    let dir = env.dir("plain");
    let out = env.run_expecting(&dir, &["-W", "opencode:fake/limited", "where is x?"], 0);
    assert_stdout_has(&out, "answered by the second target");
    assert_stdout_has(&out, "── attempts:");
    assert_stdout_has(&out, "opencode:fake/limited: rate limited");
    let r = show(&env, &dir, "last");
    // The spec still says what was asked; the record says which target answered.
    assert_eq!(r["spec"]["model"], "fake/limited", "{r:#}");
    assert_eq!(
        r["fell_back_to"],
        json!({"backend": "opencode", "model": "fake/good"}),
        "{r:#}"
    );
    let attempts = r["attempts"].as_array().expect("attempts");
    assert_eq!(attempts.len(), 2, "{r:#}");
    assert_eq!(attempts[0]["failure"], "rate_limited");
    assert_eq!(attempts[0]["fell_back"], true);
    assert_eq!(attempts[1]["state"], "done");
    assert!(dir.exists());

    // The provider said "2 hours": the target cools down that long.
    let cooling = json_stdout(&env.run(&dir, &["cooldown", "--json"]));
    let until = timestamp(&cooling["opencode:fake/limited"]["until"]);
    let left = until.duration_since(jiff::Timestamp::now()).as_secs();
    assert!((7000..=7200).contains(&left), "{cooling:#}");

    // While it cools, the next run skips it and goes straight to the second target.
    let r = env.run_json(&dir, &["-W", "opencode:fake/limited", "again?", "--json"]);
    assert_eq!(r["attempts"][0]["state"], "skipped", "{r:#}");
    assert!(r["attempts"][0]["error"]
        .as_str()
        .unwrap()
        .contains("cooling down"));

    env.run_expecting(&dir, &["cooldown", "--clear"], 0);
    assert_eq!(stdout(&env.run(&dir, &["cooldown", "--json"])).trim(), "{}");
}

#[test]
fn no_fallback_and_a_lone_target_fail_with_the_real_cause() {
    let mut env = fake_env(json!({"by_model": {"*": rate_limited()}}));
    env.set("PITROOM_FALLBACK", "opencode:fake/good");
    let dir = env.dir("plain");
    // The one target, without a fallback: the same run twice.
    let lone = || {
        env.run(
            &dir,
            &[
                "-W",
                "opencode:fake/limited",
                "--no-fallback",
                "x",
                "--json",
            ],
        )
    };
    let out = lone();
    assert_exit(&out, 1);
    let r = json_stdout(&out);
    assert_eq!(r["failure"], "rate_limited");
    assert_eq!(r["attempts"].as_array().map(Vec::len), Some(1), "{r:#}");
    // A lone target is tried even while it cools down.
    let r = json_stdout(&lone());
    assert_eq!(r["attempts"][0]["state"], "failed", "{r:#}");
}

/// OpenCode's words when its session database stayed locked by another run past its busy
/// timeout (anomalyco/opencode#47566), and its exit.
fn database_locked() -> [Value; 2] {
    [
        json!({"stderr": "Error: SQLiteError: database is locked"}),
        json!({"exit": 1}),
    ]
}

#[test]
fn a_worker_whose_session_database_was_busy_runs_once_more_on_the_same_target() {
    let env = fake_env(json!([
        {"once": {"marker": "first-try", "do": database_locked()}},
        {"text": "SUMMARY: answered on the second try"},
        {"step": {"reason": "stop"}}
    ]));
    let dir = env.dir("plain");
    // The lone target, too: a passing fault is no reason to try another one.
    let out = env.run_expecting(
        &dir,
        &["-W", "opencode:fake/busy", "--no-fallback", "where is x?"],
        0,
    );
    assert_stdout_has(&out, "answered on the second try");
    assert_stdout_has(
        &out,
        "passing fault of the worker CLI after 0 steps → ran again",
    );
    let r = show(&env, &dir, "last");
    let attempts = r["attempts"].as_array().expect("attempts");
    assert_eq!(attempts.len(), 2, "{r:#}");
    assert_eq!(attempts[0]["failure"], "transient", "{r:#}");
    assert_eq!(attempts[0]["target"], attempts[1]["target"], "{r:#}");
    assert_eq!(attempts[1]["state"], "done", "{r:#}");
    let run_dir = env.state.join("runs").join(r["id"].as_str().expect("id"));
    let kept = std::fs::read_to_string(run_dir.join("stderr.attempt-1.log")).expect("kept stderr");
    assert!(kept.contains("database is locked"), "{kept}");
}

#[test]
fn a_database_busy_on_the_rerun_too_fails_the_run_after_that_one_rerun() {
    let env = fake_env(json!(database_locked()));
    let dir = env.dir("plain");
    let out = env.run(
        &dir,
        &["-W", "opencode:fake/busy", "--no-fallback", "x", "--json"],
    );
    assert_exit(&out, 1);
    let r = json_stdout(&out);
    assert_eq!(r["failure"], "transient", "{r:#}");
    assert_eq!(r["attempts"].as_array().map(Vec::len), Some(2), "{r:#}");
}

#[test]
fn a_worker_cut_off_mid_task_is_finished_by_the_next_and_the_patch_holds_both() {
    let mut env = fake_env(json!({"by_model": {
        "fake/limited": [
            {"write": {"path": "first.txt", "content": "from the first worker\n"}},
            {"tool": "write", "input": {"filePath": "first.txt"}, "status": "completed"},
            {"step": {"input": 100, "output": 10, "reason": "tool-calls"}},
            rate_limited()[0], rate_limited()[1]
        ],
        "fake/good": [
            {"write": {"path": "second.txt", "content": "from the second worker\n"}},
            {"tool": "write", "input": {"filePath": "second.txt"}, "status": "completed"},
            {"text": "SUMMARY: finished what the first worker started"},
            {"step": {"input": 100, "output": 10, "reason": "stop"}}
        ]
    }}));
    env.set("PITROOM_FALLBACK", "opencode:fake/good");
    let record_file = record_invocations(&mut env, "opencode");
    let repo = dirty_repo(&env, "repo");
    let r = env.run_json(
        &repo,
        &[
            "-w",
            "-W",
            "opencode:fake/limited",
            "add two files",
            "--json",
        ],
    );
    let files = changed(&r);
    assert_eq!(files, ["first.txt", "second.txt"], "{r:#}");
    assert_eq!(r["attempts"][0]["steps"], 1);
    assert_eq!(r["attempts"][1]["handed_off"], true);
    assert_eq!(r["tally"]["steps"], 2, "the receipt counts both workers");
    // The second worker was told what the first did, including its diff.
    let seen = recorded(&record_file);
    let prompt = seen["prompt"].as_str().unwrap();
    assert!(prompt.contains("HAND-OFF"), "{prompt}");
    assert!(prompt.contains("opencode:fake/limited"), "{prompt}");
    assert!(prompt.contains("+from the first worker"), "{prompt}");
    let _ = std::fs::remove_file(&record_file);
    // Revert undoes both workers' edits exactly.
    let before_revert = fingerprint(&repo);
    env.run_expecting(&repo, &["revert"], 0);
    assert_ne!(fingerprint(&repo), before_revert);
    assert!(!repo.join("first.txt").exists() && !repo.join("second.txt").exists());
}

#[test]
fn thirty_two_second_workers_all_finish_within_the_default_twenty_slots() {
    let mut env = fake_env(json!([
        {"sleep_ms": 2000},
        {"text": "SUMMARY: slept"},
        {"step": {"input": 10, "output": 1, "reason": "stop"}}
    ]));
    // The spans are read from the records' stamps: real time.
    env.real_clock();
    let dir = env.dir("plain");
    let tasks: Vec<String> = (0..30).map(|i| format!("task {i}")).collect();
    let tasks: Vec<&str> = tasks.iter().map(String::as_str).collect();
    let ids = crew(&env, &dir, "thirty", &tasks, &[]);
    env.run_expecting(
        &dir,
        &["wait", "-g", "thirty", "--brief", "--timeout", "120"],
        0,
    );
    let spans: Vec<(jiff::Timestamp, jiff::Timestamp)> = ids
        .iter()
        .map(|id| {
            let r = show(&env, &dir, id);
            assert_eq!(r["state"], "done", "{r:#}");
            let start = timestamp(&r["started_at"]);
            let ms = r["duration_ms"].as_i64().expect("duration");
            (start, start + jiff::SignedDuration::from_millis(ms))
        })
        .collect();
    let peak = spans
        .iter()
        .map(|(start, _)| {
            spans
                .iter()
                .filter(|(s, e)| s <= start && start < e)
                .count()
        })
        .max()
        .unwrap_or(0);
    assert!(peak <= 20, "{peak} workers at once");
    assert!(peak > 1, "they ran side by side");
}

#[test]
fn killing_a_waiter_or_a_watcher_leaves_the_runs_and_the_queue_intact() {
    let mut env = fake_env(slow_answer(1500, "intact"));
    env.set("PITROOM_MAX_PARALLEL", "1");
    let dir = env.dir("plain");
    let ids = crew(&env, &dir, "kept", &["a", "b"], &[]);
    for args in [
        vec!["wait", "-g", "kept"],
        vec!["watch", "-g", "kept", "--json"],
    ] {
        let mut child = env
            .pitroom(&dir, &args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starts");
        std::thread::sleep(Duration::from_millis(300));
        kill(Pid::from_raw(child.id() as i32), Signal::SIGKILL).expect("kill");
        let _ = child.wait();
    }
    env.run_expecting(&dir, &["wait", "-g", "kept", "--timeout", "30"], 0);
    for id in &ids {
        assert_eq!(show(&env, &dir, id)["state"], "done");
    }
}

#[test]
fn a_tier_names_the_configured_target_and_an_unknown_tier_is_a_usage_error() {
    let mut env = fake_env(json!({"by_model": {
        "fake/cheap": [{"text": "SUMMARY: the cheap tier answered"}, {"step": {"reason": "stop"}}],
        "*": [{"text": "SUMMARY: the default answered"}, {"step": {"reason": "stop"}}]
    }}));
    let dir = env.dir("plain");
    let config = dir.join("pitroom.toml");
    std::fs::write(&config, "[tiers]\ncheap = \"opencode:fake/cheap\"\n").unwrap();
    env.set("PITROOM_CONFIG", config.display().to_string());
    let r = env.run_json(&dir, &["--tier", "cheap", "x", "--json"]);
    assert_eq!(r["spec"]["model"], "fake/cheap");
    assert!(r["answer"].as_str().unwrap().contains("cheap tier"));
    // -W wins over a tier.
    let r = json_stdout(&env.run(&dir, &["--tier", "cheap", "-W", "opencode", "x", "--json"]));
    assert!(r["answer"].as_str().unwrap().contains("default"), "{r:#}");
    let out = env.run_expecting(&dir, &["--tier", "premium", "x"], 2);
    assert_stderr_has(&out, "no tier `premium`");
}

#[test]
fn models_without_a_worker_lists_every_backend_with_its_models_or_why_not() {
    let env = fake_env(json!([]));
    let dir = env.dir("plain");
    let v = env.run_json(&dir, &["models", "--all", "--json"]);
    let rows = v["workers"].as_array().expect("workers");
    let names: Vec<&str> = rows.iter().filter_map(|r| r["worker"].as_str()).collect();
    assert_eq!(names, pitroom_workers::KNOWN_BACKENDS, "{v:#}");
    let codex = &rows[names.iter().position(|n| *n == "codex").unwrap()];
    assert!(
        str_has(&codex["error"], "PITROOM_CODEX_BIN"),
        "a CLI that is not installed says how to point at it: {codex:#}"
    );
    // A CLI that is not installed says so the same way, whether or not it could list models
    // without its binary (Qwen's listing reads only its settings).
    let qwen = &rows[names.iter().position(|n| *n == "qwen").unwrap()];
    assert!(
        qwen["error"]
            .as_str()
            .is_some_and(|e| e.contains("qwen not found on PATH") && e.contains("PITROOM_QWEN_BIN")),
        "{qwen:#}"
    );
    // With no worker named, `models` lists them all, as --all does.
    let bare = env.run_json(&dir, &["models", "--json"]);
    assert_eq!(
        bare["workers"].as_array().map(Vec::len),
        Some(names.len()),
        "{bare:#}"
    );
    let stdout = stdout(&env.run_expecting(&dir, &["models", "--all"], 0));
    for name in pitroom_workers::KNOWN_BACKENDS {
        assert!(
            stdout.contains(&format!("{name}:")),
            "{name} missing: {stdout}"
        );
    }
}

#[test]
fn a_target_at_its_own_limit_queues_while_another_targets_run_goes_ahead() {
    let gates = tempfile::tempdir().expect("gates dir");
    let go = gates.path().join("go");
    let mut env = fake_env(json!({"by_model": {
        "fake/capped": [
            {"wait_file": go.display().to_string()},
            {"text": "SUMMARY: the capped target answered"},
            {"step": {"reason": "stop"}}
        ],
        "fake/free": [{"text": "SUMMARY: the free target answered"}, {"step": {"reason": "stop"}}]
    }}));
    let dir = env.dir("plain");
    let config = dir.join("pitroom.toml");
    std::fs::write(
        &config,
        "[max_parallel_per]\n\"opencode:fake/capped\" = 1\n",
    )
    .expect("config");
    env.set("PITROOM_CONFIG", config.display().to_string());
    env.set("PITROOM_MAX_PARALLEL", "3");
    let start = |model: &str, task: &str| {
        super::common::bg_id(&env.run(&dir, &["--bg", "-m", model, task]))
    };
    let first = start("fake/capped", "one");
    assert!(
        eventually(Duration::from_secs(30), || show(&env, &dir, &first)
            ["state"]
            == "running"),
        "the lane's first run starts"
    );
    let second = start("fake/capped", "two");
    let other = start("fake/free", "three");
    // The other target's run, created after the second, finishes while the second waits.
    env.run_expecting(&dir, &["wait", &other, "--timeout", "60"], 0);
    let waiting = show(&env, &dir, &second);
    assert_eq!(waiting["state"], "queued", "{waiting:#}");
    assert_eq!(
        waiting["spec"]["lane"],
        json!({"key": "opencode:fake/capped", "slots": 1}),
        "{waiting:#}"
    );
    std::fs::write(&go, "go").expect("gate");
    env.run_expecting(&dir, &["wait", &first, &second, "--timeout", "60"], 0);
    let grant = |id: &str| show(&env, &dir, id)["slot_grant"].as_u64();
    assert_eq!(
        [grant(&first), grant(&other), grant(&second)],
        [Some(1), Some(2), Some(3)],
        "the second capped run was let go last"
    );
}
