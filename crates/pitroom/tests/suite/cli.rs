//! Fast CLI tests on the fake worker binary (it speaks OpenCode's stream).

use std::io::Write;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use pitroom_testkit::repo::{dirty_repo, fingerprint, write};
use pitroom_testkit::TestEnv;
use serde_json::{json, Value};

use super::common::{
    args_of, assert_exit, assert_some_line, assert_stderr_has, assert_stdout_has,
    background_job_env, bg_id, changed, code, eventually, fake_env, json_stdout,
    processes_with_cmdline, record, record_invocations, recorded_invocation, recorded_prompt,
    recording_env, stderr, stdout, str_has, text, PITROOM,
};

fn answer(text: &str) -> Value {
    json!([{"step": {"input": 100, "output": 10, "cost": 0.001}}, {"text": text}, {"step": {"input": 50, "output": 5, "reason": "stop"}}])
}

#[test]
fn bare_task_runs_a_read_worker_with_the_prompt_on_a_closed_stdin() {
    let env = recording_env(answer("SUMMARY: fine"));
    let repo = dirty_repo(&env, "repo");
    env.run_expecting(&repo, &["Which files read the cookie?"], 0);
    let inv = recorded_invocation(&env);
    let prompt = inv["prompt"].as_str().expect("prompt");
    assert!(
        prompt.contains("TASK:\nWhich files read the cookie?"),
        "{prompt}"
    );
    assert!(prompt.contains("READ-ONLY"), "{prompt}");
    let args = args_of(&inv);
    for expected in ["run", "--format", "json", "pitroom-read", "--title"] {
        assert!(args.contains(&expected), "{args:?}");
    }
    assert!(
        !args
            .iter()
            .any(|a| a.contains("TASK:") || *a == "Which files read the cookie?"),
        "the prompt goes on stdin, not in the arguments: {args:?}"
    );
    let envs = &inv["env"];
    assert_eq!(envs["PITROOM_ACTIVE"], "1");
    assert_eq!(envs["OPENCODE_DISABLE_AUTOUPDATE"], "1");
    assert_eq!(envs["OPENCODE_DISABLE_MODELS_FETCH"], "1");
    let config: Value =
        serde_json::from_str(envs["OPENCODE_CONFIG_CONTENT"].as_str().unwrap()).unwrap();
    assert_eq!(config["permission"]["edit"], "deny");
    assert_eq!(config["permission"]["webfetch"], "deny");
    let state = env.state.display().to_string();
    for var in [
        "XDG_DATA_HOME",
        "XDG_STATE_HOME",
        "XDG_CACHE_HOME",
        "TMPDIR",
    ] {
        assert!(
            envs[var].as_str().is_some_and(|v| v.starts_with(&state)),
            "{var} = {}",
            envs[var]
        );
    }
    let cwd = inv["cwd"].as_str().unwrap();
    // Where the kernel allows it (Landlock, a mount namespace), a read run reads in place.
    let r = record(&env, &repo);
    assert_eq!(r["view"], "in_place", "{r:#}");
    let top = std::fs::canonicalize(&repo).unwrap();
    assert_eq!(
        cwd,
        top.to_str().unwrap(),
        "read runs read the project in place"
    );
    assert_eq!(envs["PWD"].as_str(), Some(cwd));
}

#[test]
fn read_copy_holds_the_users_uncommitted_and_untracked_work() {
    let mut env = fake_env(json!([{"tool": "read", "input": {"filePath": "x"}}, {"text": "ok"}]));
    env.set("PITROOM_READ_VIEW", "copy");
    let repo = dirty_repo(&env, "repo");
    env.run_expecting(&repo, &["look"], 0);
    let r = record(&env, &repo);
    let copy = Path::new(r["copy"].as_str().unwrap());
    assert_eq!(
        std::fs::read_to_string(copy.join("README.md")).unwrap(),
        "# demo\n\nuser edit in progress\n"
    );
    assert!(copy.join("notes/todo list é.txt").is_file());
    assert!(!repo.join(".pitroom").exists());
}

#[test]
fn a_write_in_read_mode_is_a_violation_and_the_users_tree_is_untouched() {
    let mut env = fake_env(
        json!([{"write": {"path": "evil.txt", "content": "x"}}, {"text": "SUMMARY: nothing changed, honest"}]),
    );
    // The snapshot check on its own, as on a machine without Landlock (which would refuse the
    // write outright: suite/landlock.rs).
    env.set("PITROOM_LANDLOCK", "off");
    let repo = dirty_repo(&env, "repo");
    let before = fingerprint(&repo);
    let out = env.run_expecting(&repo, &["look"], 5);
    assert_stdout_has(&out, "READ-ONLY VIOLATION");
    assert_stdout_has(&out, "A evil.txt");
    assert_eq!(fingerprint(&repo), before);
}

#[test]
fn write_run_patch_excludes_user_work_and_revert_is_byte_exact() {
    let env = fake_env(json!([
        {"write": {"path": "README.md", "content": "# demo\n\nuser edit in progress\nworker\n"}},
        {"write": {"path": "dir with space/ñew.txt", "content": "new\r\n"}},
        {"tool": "edit", "input": {"filePath": "README.md"}},
        {"text": "SUMMARY: done"}
    ]));
    let repo = dirty_repo(&env, "repo");
    let before = fingerprint(&repo);
    let out = env.run_expecting(&repo, &["-w", "edit"], 0);
    let r = record(&env, &repo);
    let paths = changed(&r);
    assert_eq!(paths, vec!["README.md", "dir with space/ñew.txt"]);
    assert_eq!(
        r["unreported"],
        json!(["dir with space/ñew.txt"]),
        "flags files the worker never reported"
    );
    assert_stdout_has(&out, "(not reported by the worker)");
    let patch = stdout(&env.run(&repo, &["show", "--patch"]));
    assert!(
        patch.contains("+worker") && !patch.contains("+user edit"),
        "{patch}"
    );

    env.run_expecting(&repo, &["revert"], 0);
    assert_eq!(fingerprint(&repo), before);
}

#[test]
fn revert_is_refused_without_changes_when_files_changed_since() {
    let env = fake_env(
        json!([{"write": {"path": "calc.py", "content": "worker version\n"}}, {"text": "done"}]),
    );
    let repo = dirty_repo(&env, "repo");
    env.run_expecting(&repo, &["-w", "edit"], 0);
    write(&repo, "calc.py", "the user changed it again\n");
    let before = fingerprint(&repo);
    let out = env.run_expecting(&repo, &["revert"], 1);
    assert_stderr_has(&out, "changed since the run");
    assert_eq!(
        fingerprint(&repo),
        before,
        "a refused revert changes nothing"
    );
}

#[test]
fn a_second_write_run_in_the_same_repository_is_refused() {
    let env = fake_env(json!([{"sleep_ms": 4000}, {"text": "done"}]));
    let repo = dirty_repo(&env, "repo");
    let first = env.run_expecting(&repo, &["-w", "--bg", "slow edit"], 0);
    let second = env.run_expecting(&repo, &["-w", "another edit"], 3);
    assert_stderr_has(&second, "another write run");
    env.run_expecting(&repo, &["a read run is fine"], 0);
    let id = bg_id(&first);
    env.run_expecting(&repo, &["wait", &id, "--timeout", "30"], 0);
}

#[test]
fn background_run_prints_its_id_and_wait_follows_it() {
    // The worker waits for the test's go-ahead, so `--bg` has returned while it still runs.
    let go = tempfile::tempdir().expect("scratch").keep().join("go");
    let env = fake_env(json!([
        {"wait_file": go.display().to_string()},
        {"step": {"input": 10, "output": 1}},
        {"text": "SUMMARY: bg answer"}
    ]));
    let dir = env.dir("plain");
    let id = bg_id(&env.run_expecting(&dir, &["--bg", "background task"], 0));
    env.run_expecting(&dir, &["status", &id], 75);
    env.run_expecting(&dir, &["wait", &id, "--timeout", "0.1"], 75);
    std::fs::write(&go, "").expect("go");
    let done = env.run_expecting(&dir, &["wait", &id, "--timeout", "30"], 0);
    assert_stdout_has(&done, "bg answer");
    env.run_expecting(&dir, &["status", &id], 0);
}

#[test]
fn a_run_whose_supervisor_died_shows_as_failed_not_running() {
    let env = fake_env(json!([{"sleep_ms": 60000}]));
    let dir = env.dir("plain");
    let id = bg_id(&env.run(&dir, &["--bg", "slow"]));
    let record_path = env.state.join("runs").join(&id).join("record.json");
    let pid = {
        let mut pid = None;
        eventually(Duration::from_secs(10), || {
            let r: Value = serde_json::from_slice(&std::fs::read(&record_path).unwrap_or_default())
                .unwrap_or(Value::Null);
            pid = r["pid"].as_i64().filter(|_| r["state"] == "running");
            pid.is_some()
        });
        pid.expect("the supervisor recorded its pid")
    };
    kill(Pid::from_raw(pid as i32), Signal::SIGKILL).expect("kill");
    assert!(eventually(Duration::from_secs(5), || {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_err()
    }));
    let status = env.run(&dir, &["status", &id, "--json"]);
    let r = json_stdout(&status);
    assert_eq!(r["state"], "failed", "{r:#}");
    assert!(r["error"].as_str().unwrap().contains("exited unexpectedly"));
    assert_eq!(code(&status), 1);
}

#[test]
fn timeout_ends_the_worker_keeps_the_record_and_exits_4() {
    let env = fake_env(json!([{"step": {"input": 10, "output": 1}}, {"sleep_ms": 60000}]));
    let dir = env.dir("plain");
    env.run_expecting(&dir, &["slow", "-t", "1s"], 4);
    let r = record(&env, &dir);
    assert_eq!(r["state"], "timeout");
    assert_eq!(r["tally"]["steps"], 1, "what it did is kept");
}

#[test]
fn sigterm_stops_the_run_and_records_stopped() {
    let env = fake_env(json!([{"sleep_ms": 60000}]));
    let dir = env.dir("plain");
    let child = env
        .pitroom(&dir, &["slow"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let runs = env.state.join("runs");
    assert!(eventually(Duration::from_secs(10), || {
        std::fs::read_dir(&runs)
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| {
                std::fs::read_to_string(e.path().join("record.json"))
                    .is_ok_and(|t| t.contains("\"running\""))
            })
    }));
    std::thread::sleep(Duration::from_millis(300));
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).unwrap();
    assert_exit(&child.wait_with_output().unwrap(), 1);
    assert_eq!(record(&env, &dir)["state"], "stopped");
}

#[test]
fn worker_that_prints_garbage_fails_with_no_answer() {
    let env = fake_env(json!([{"raw": "this is not json\n{\"type\":\"text\",\"part\":{\"te"}]));
    let dir = env.dir("plain");
    let out = env.run_expecting(&dir, &["x"], 1);
    assert_stdout_has(&out, "(no answer)");
    assert_eq!(record(&env, &dir)["state"], "failed");
}

#[test]
fn worker_that_prints_nothing_and_exits_zero_is_failed_not_done() {
    let env = fake_env(json!([]));
    let dir = env.dir("plain");
    env.run_expecting(&dir, &["x"], 1);
    let r = record(&env, &dir);
    assert_eq!(r["state"], "failed");
    assert!(r["error"].as_str().unwrap().contains("no events"), "{r:#}");
}

#[test]
fn worker_error_event_is_reported_and_classified() {
    let env = fake_env(
        json!([{"error": {"name": "APIError", "data": {"message": "Rate limit reached for requests", "statusCode": 429}}}, {"exit": 1}]),
    );
    let dir = env.dir("plain");
    let out = env.run_expecting(&dir, &["x"], 1);
    let r = record(&env, &dir);
    assert_eq!(r["failure"], "rate_limited");
    assert_stdout_has(&out, "error: Rate limit reached");
}

#[test]
fn watchdog_ends_a_worker_stuck_in_empty_steps() {
    let mut steps = vec![json!({"text": "partial"})];
    for _ in 0..6 {
        steps.push(json!({"step": {"reason": "unknown"}}));
    }
    steps.push(json!({"sleep_ms": 60000}));
    let mut env = fake_env(Value::Array(steps));
    env.set("PITROOM_WATCHDOG", "1s");
    let dir = env.dir("plain");
    env.run_expecting(&dir, &["x", "-t", "600s"], 1);
    assert!(record(&env, &dir)["error"]
        .as_str()
        .unwrap()
        .contains("no progress"));
}

#[test]
fn follow_up_passes_the_session_and_keeps_the_mode() {
    let mut env = fake_env(answer("first"));
    let dir = env.dir("plain");
    env.run_expecting(&dir, &["first"], 0);
    record_invocations(&mut env, "opencode");
    env.run_expecting(&dir, &["run", "--continue", "last", "second"], 0);
    let call = recorded_invocation(&env);
    let args = args_of(&call);
    let at = args
        .iter()
        .position(|a| *a == "--session")
        .expect("--session");
    assert_eq!(args[at + 1], "ses_fake0001");
    // A follow-up keeps the mode.
    env.run_expecting(&dir, &["run", "--continue", "last", "-w", "third"], 2);
}

#[test]
fn task_comes_from_stdin_only_with_a_dash_and_from_a_task_file() {
    let env = recording_env(json!([{"echo_prompt": true}]));
    let dir = env.dir("plain");
    let mut child = env
        .pitroom(&dir, &["run", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"task from stdin")
        .unwrap();
    assert_exit(&child.wait_with_output().unwrap(), 0);
    assert!(recorded_prompt(&env).contains("task from stdin"));
    std::fs::write(env.root.join("task.md"), "task from a file").unwrap();
    let file = env.root.join("task.md").display().to_string();
    env.run_expecting(&dir, &["run", "--task-file", &file], 0);
    assert!(recorded_prompt(&env).contains("task from a file"));
}

#[test]
fn help_lists_every_exit_code_once_in_rising_order_with_its_meaning() {
    let env = fake_env(answer("x"));
    let dir = env.dir("plain");
    let stdout = stdout(&env.run_expecting(&dir, &["--help"], 0));
    // Written out, not taken from `pitroom_core::exit`: agents branch on these numbers and texts.
    let table = "Exit codes:
  0   ok
  1   the worker failed or was stopped; a revert conflicted
  2   usage error
  3   refused, or a setup problem (missing worker CLI, busy repository, bad config)
  4   timeout (what the worker did is kept)
  5   read-only violation (a read run changed files; your tree is untouched)
  6   --verify failed
  75  still running: call `pitroom wait` again
";
    assert!(stdout.contains(table), "{stdout}");
    assert_eq!(stdout.matches("Exit codes:").count(), 1, "{stdout}");
}

#[test]
fn bad_input_gets_one_clear_line_and_the_right_exit_code() {
    let env = fake_env(answer("x"));
    let dir = env.dir("plain");
    let repo = dirty_repo(&env, "repo");
    let cases: Vec<(Vec<&str>, i32, &str)> = vec![
        (vec!["run", ""], 2, "task is empty"),
        (vec!["show", "19990101"], 2, "no run matches"),
        (vec!["-w", "edit outside git"], 3, "--allow-non-git"),
        (vec!["-i", "isolate"], 3, "isolate mode"),
        (vec!["-W", "codex", "x"], 3, "PITROOM_CODEX_BIN"),
        (vec!["x", "-t", "soon"], 2, "not a duration"),
        (vec!["wait", "--timeout", "x"], 2, "not a duration"),
    ];
    for (args, expected, message) in cases {
        let out = env.run(&dir, &args);
        assert_eq!(code(&out), expected, "{args:?}: {}", text(&out));
        let stderr = stderr(&out);
        assert!(stderr.contains(message), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    // A missing worker binary names the override variable; nothing in the repo changes.
    let mut env2 = TestEnv::new(Path::new(PITROOM));
    env2.set("PITROOM_OPENCODE_BIN", "/nonexistent/opencode");
    let before = fingerprint(&repo);
    let out = env2.run_expecting(&repo, &["x"], 3);
    assert_stderr_has(&out, "PITROOM_OPENCODE_BIN");
    assert_eq!(fingerprint(&repo), before);
}

#[test]
fn ambiguous_run_prefix_is_a_usage_error() {
    let env = fake_env(answer("x"));
    let dir = env.dir("plain");
    env.run_expecting(&dir, &["a"], 0);
    env.run_expecting(&dir, &["b"], 0);
    let out = env.run_expecting(&dir, &["show", "2"], 2);
    assert_stderr_has(&out, "matches several runs");
}

#[test]
fn unparsable_config_file_is_refused_with_its_path() {
    let env = fake_env(answer("x"));
    std::fs::write(env.root.join("pitroom.toml"), "worker = [unclosed\n").unwrap();
    let dir = env.dir("plain");
    let out = env.run_expecting(&dir, &["x"], 3);
    assert_stderr_has(&out, "pitroom.toml");
}

#[test]
fn config_shows_each_value_with_its_source() {
    let mut env = fake_env(answer("x"));
    std::fs::write(
        env.root.join("pitroom.toml"),
        "timeout = \"10m\"\ncolour = 1\n",
    )
    .unwrap();
    env.set("PITROOM_PRIMARY", "opus");
    let dir = env.dir("plain");
    let out = env.run_expecting(&dir, &["config"], 0);
    let stdout = stdout(&out);
    assert_some_line(&stdout, |l| {
        l.starts_with("timeout") && l.contains("600s") && l.contains("pitroom.toml")
    });
    assert_some_line(&stdout, |l| {
        l.starts_with("primary") && l.contains("opus") && l.contains("env PITROOM_PRIMARY")
    });
    assert_some_line(&stdout, |l| {
        l.starts_with("worker") && l.contains("(default)")
    });
    assert_stderr_has(&out, "unknown key `colour`");
    let v = json_stdout(&env.run(&dir, &["config", "--json"]));
    assert!(v["entries"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["key"] == "timeout" && e["source"]["kind"] == "file"));
}

#[test]
fn read_outside_git_runs_in_place_with_a_warning() {
    let env = fake_env(answer("SUMMARY: ok"));
    let dir = env.dir("plain");
    let out = env.run_expecting(&dir, &["x"], 0);
    assert_stdout_has(&out, "warning: not a git repository");
    env.run_expecting(&dir, &["-w", "--allow-non-git", "edit"], 0);
}

#[test]
fn nested_delegation_from_inside_a_worker_is_refused() {
    let mut env = fake_env(answer("x"));
    env.set("PITROOM_ACTIVE", "1");
    let dir = env.dir("plain");
    env.run_expecting(&dir, &["x"], 3);
}

#[test]
fn report_has_no_ansi_when_not_a_terminal_and_json_is_the_record() {
    let env = fake_env(answer("SUMMARY: plain"));
    let dir = env.dir("plain");
    let out = env.run(&dir, &["x"]);
    assert!(!out.stdout.contains(&0x1b), "{}", text(&out));
    let out = env.run(&dir, &["x", "--json"]);
    let r = json_stdout(&out);
    assert_eq!(r["state"], "done");
    assert!(r["receipt"]["worker_tokens"].as_u64().unwrap() > 0);
    let events = env.run(&dir, &["show", "--events"]);
    assert_stdout_has(&events, "\"type\":\"step_finish\"");
    assert_eq!(stdout(&env.run(&dir, &["ls"])).lines().count(), 2);
}

#[test]
fn citations_are_checked_and_bad_ones_listed_with_reasons() {
    let env = fake_env(answer(
        "SUMMARY: see calc.py:5 and calc.py:999 and `nowhere` in src/lib.rs:1",
    ));
    let repo = dirty_repo(&env, "repo");
    let out = env.run_expecting(&repo, &["where?"], 0);
    assert_stdout_has(&out, "── refs: 1/3 verified · bad:");
    assert_stdout_has(&out, "calc.py:999");
    let r = record(&env, &repo);
    assert_eq!(r["refs"]["verified"], 1);
    assert_eq!(r["refs"]["bad"].as_array().map(Vec::len), Some(2), "{r:#}");
}

/// The check called `name` in `doctor --json`'s output `v`.
fn doctor_check(v: &Value, name: &str) -> Value {
    v["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["check"] == name)
        .cloned()
        .unwrap_or_else(|| panic!("no {name} check: {v:#}"))
}

#[test]
fn doctor_reports_each_check_and_fails_only_on_essential_ones() {
    let env = fake_env(answer("x"));
    let dir = env.dir("plain");
    let v = env.run_json(&dir, &["doctor", "--json"]);
    let check = |name: &str| doctor_check(&v, name);
    assert_eq!(check("git guard")["ok"], true, "{v:#}");
    let small_guard = env!("CARGO_BIN_EXE_pitroom-guard");
    assert!(
        check("git guard")["detail"]
            .as_str()
            .is_some_and(|d| d.ends_with(&format!("links to {small_guard}"))),
        "doctor says which executable the links lead to: {v:#}"
    );
    assert_eq!(check("opencode")["ok"], true, "{v:#}");
    // A worker CLI that is not installed is reported, and is not an essential check.
    assert_eq!(check("codex")["ok"], false, "{v:#}");
    assert!(str_has(&check("codex")["detail"], "not found"), "{v:#}");
    assert!(
        env.state.join("bin/git").exists(),
        "doctor installs the guard links"
    );

    let mut broken = fake_env(answer("x"));
    broken.set("PITROOM_HOME", "/dev/null/pitroom");
    broken.set("PITROOM_OPENCODE_BIN", "/nonexistent/opencode");
    let stdout = stdout(&broken.run_expecting(&dir, &["doctor"], 3));
    assert!(stdout.contains("✘ state dir"), "{stdout}");
    assert!(
        stdout.contains("· opencode") && stdout.contains("PITROOM_OPENCODE_BIN"),
        "{stdout}"
    );
}

#[test]
fn doctor_says_what_pitroom_portable_turns_off() {
    let mut env = fake_env(answer("x"));
    env.set(pitroom_proc::PORTABLE_ENV, "1");
    let dir = env.dir("plain");
    let v = env.run_json(&dir, &["doctor", "--json"]);
    let check = |name: &str| doctor_check(&v, name);
    // The containment check starts a keeper: it reports the reason the keeper gave.
    for name in ["landlock", "privileges", "containment", "state-dir watch"] {
        assert!(
            str_has(&check(name)["detail"], "turned off by PITROOM_PORTABLE"),
            "{name}: {v:#}"
        );
    }
    assert_eq!(check("landlock")["ok"], false, "{v:#}");
    assert_eq!(check("containment")["ok"], false, "{v:#}");
}

#[test]
fn stop_ends_a_background_run_and_everything_it_started() {
    let marker = "sleep 283.9";
    let env = background_job_env(marker);
    let dir = env.dir("plain");
    let id = bg_id(&env.run(&dir, &["--bg", "long job"]));
    assert!(
        eventually(Duration::from_secs(15), || {
            !processes_with_cmdline(marker).is_empty()
        }),
        "the job started"
    );
    let out = env.run_expecting(&dir, &["stop", &id], 0);
    assert_stdout_has(&out, "stopped");
    assert!(
        eventually(Duration::from_secs(10), || {
            processes_with_cmdline(marker).is_empty()
        }),
        "no survivor"
    );
    assert_eq!(record(&env, &dir)["state"], "stopped");
    assert_eq!(
        code(&env.run(&dir, &["stop", &id])),
        3,
        "a finished run cannot be stopped"
    );
}

#[test]
fn a_stop_that_races_the_start_is_not_lost() {
    let mut env = fake_env(json!([{"sleep_ms": 60000}]));
    // The supervisor of a test build waits for this file before it claims its run: the stop
    // below lands before the claim every time, not when the scheduler happens to allow it.
    let gate = env.root.join("supervise-gate");
    env.set("PITROOM_TEST_SUPERVISE_GATE", gate.display().to_string());
    let dir = env.dir("plain");
    let id = bg_id(&env.run(&dir, &["--bg", "long job"]));
    let before = record(&env, &dir);
    assert_eq!(before["state"], "queued", "{before}");
    assert!(before["pid"].is_null(), "not claimed yet: {before}");
    // No process to signal yet: the stop leaves its note in the run's dir and waits.
    let stop = env
        .pitroom(&dir, &["stop", &id])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("pitroom stop starts");
    let note = env.state.join("runs").join(&id).join("stop-requested");
    assert!(
        eventually(Duration::from_secs(60), || note.exists()),
        "the stop left no note for the unclaimed run"
    );
    std::fs::write(&gate, "").expect("open the gate");
    let out = stop.wait_with_output().expect("pitroom stop ends");
    assert_exit(&out, 0);
    let after = record(&env, &dir);
    assert_eq!(after["state"], "stopped", "{after}");
    assert!(
        !after["pid"].is_null(),
        "the supervisor claimed the run, then stopped: {after}"
    );
}

#[test]
fn a_mistyped_worker_is_a_usage_error_with_the_nearest_backend_and_starts_nothing() {
    let env = fake_env(answer("SUMMARY: should never run"));
    let repo = dirty_repo(&env, "repo");
    let out = env.run_expecting(
        &repo,
        &["run", "-W", "cdex", "Where is the cookie read?"],
        2,
    );
    assert_stderr_has(&out, "`cdex` is not a worker; did you mean `codex`?");
    env.run_expecting(
        &repo,
        &["run", "-W", "nosuchcli", "Where is the cookie read?"],
        2,
    );
    assert!(
        !env.state.join("runs").exists()
            || std::fs::read_dir(env.state.join("runs")).map_or(0, |d| d.count()) == 0,
        "no run was created"
    );
}

#[test]
fn attached_files_reach_the_prompt_and_missing_or_secret_ones_are_refused() {
    let env = recording_env(answer("SUMMARY: read the plan"));
    let repo = dirty_repo(&env, "repo");
    write(&repo, "docs/plan.md", "step 1: add a zero check\n");
    env.run_expecting(&repo, &["run", "-f", "docs/plan.md", "Follow the plan"], 0);
    let prompt = recorded_prompt(&env);
    assert!(prompt.contains("ATTACHED FILES"), "{prompt}");
    assert!(
        prompt.contains("plan.md ===\nstep 1: add a zero check\n=== end of"),
        "{prompt}"
    );

    let out = env.run_expecting(&repo, &["run", "-f", "no/such.md", "Follow the plan"], 2);
    assert_stderr_has(&out, "no/such.md: no such file");
    write(&repo, ".env", "API_KEY=x\n");
    let out = env.run_expecting(&repo, &["run", "-f", ".env", "Use the key"], 3);
    assert_stderr_has(&out, "looks like a secret file");
}

#[test]
fn a_read_runs_steps_name_project_paths_not_the_read_copy_or_the_absolute_project() {
    // The fake worker reports the absolute path it read: in its read copy, or in the project.
    for view in ["copy", "in_place"] {
        let mut env = fake_env(json!([
            {"tool": "read", "input": {"filePath": "{{cwd}}/calc.py"}},
            {"step": {"input": 100, "output": 10}},
            {"text": "SUMMARY: read it"}
        ]));
        if view == "copy" {
            env.set("PITROOM_READ_VIEW", "copy");
        }
        let repo = dirty_repo(&env, "repo");
        let r = env.run_json(&repo, &["run", "Read calc.py", "--json"]);
        assert_eq!(r["view"], view, "{r:#}");
        if view == "copy" {
            assert!(
                str_has(&r["copy"], "snapshots"),
                "the worker read a copy: {r:#}"
            );
        }
        assert_eq!(r["last"], "read calc.py", "{r:#}");
    }
}
