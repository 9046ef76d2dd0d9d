//! A stop (or the timeout) ends a run in whichever phase it is — the slot wait, the tree's
//! preparation, the worker, `--verify`, recording the changes — with its helpers (git
//! included), and leaves no half-built copy behind. Each test parks a run in one phase on
//! something the code or a stand-in records (a queued state, a fake git that says where it
//! parked, a worker's step, a `--verify` marker), stops it, and reads the outcome from the
//! record, `/proc` and the state dir.

use std::path::{Path, PathBuf};
use std::time::Duration;

use pitroom_testkit::TestEnv;
use serde_json::{json, Value};

use super::common::{assert_exit, eventually, fake_env, processes_with_env, text};
use super::common::{assert_str_has, entries_under};

/// How long a condition the code brings about may take to show (a bound on the wait, not a
/// figure under test: the latencies are measured in `bench/`, `--bin stop`).
const SETTLE: Duration = Duration::from_secs(20);

/// A worker that makes one step, then hangs.
fn hanging_worker() -> Value {
    json!([{"step": {"input": 5, "output": 1}}, {"sleep_ms": 120000}])
}

/// A worker that answers at once.
fn quick_worker() -> Value {
    json!([{"text": "SUMMARY: done"}, {"step": {"reason": "stop"}}])
}

/// A worker that writes `new.txt`, then answers.
fn writing_worker() -> Value {
    json!([
        {"write": {"path": "new.txt", "content": "made by the worker\n"}},
        {"text": "SUMMARY: done"},
        {"step": {"reason": "stop"}}
    ])
}

/// A quick worker whose read runs read a copy.
fn read_copy_env() -> TestEnv {
    let mut env = fake_env(quick_worker());
    env.set("PITROOM_READ_VIEW", "copy");
    env
}

/// Where a git call parks: while checking out a copy being built (`copy`), or while taking the
/// "after" snapshot (`after`).
#[derive(Clone, Copy)]
enum Park {
    Copy,
    After,
}

/// Puts a `git` first on `PATH` that runs the real one, except for the call `park` names: that
/// one writes the returned marker file and turns into a long `sleep`, in git's place (its pid,
/// its process group), until it is killed.
fn park_git(env: &mut TestEnv, park: Park) -> PathBuf {
    let real = String::from_utf8(
        std::process::Command::new("sh")
            .args(["-c", "command -v git"])
            .output()
            .expect("sh")
            .stdout,
    )
    .expect("utf-8");
    let bin = env.dir("fake-git-bin");
    let marker = env.root.join("git-parked");
    let condition = match park {
        // The copy's checkout, in the `.tmp-` directory it is built in.
        Park::Copy => r#"case "$*" in *.tmp-*read-tree*) true ;; *) false ;; esac"#,
        Park::After => r#"case "$GIT_INDEX_FILE" in */after.index) true ;; *) false ;; esac"#,
    };
    let script = format!(
        "#!/bin/sh\nif {condition}; then : > '{}'; exec sleep 293.1; fi\nexec '{}' \"$@\"\n",
        marker.display(),
        real.trim()
    );
    let git = bin.join("git");
    std::fs::write(&git, script).expect("fake git");
    std::fs::set_permissions(&git, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let path = format!("{}:{}", bin.display(), env.path().display());
    env.set("PATH", path);
    marker
}

/// Parks git where `park` says (see [`park_git`]), starts a run of `args` in a dirty repository
/// and waits for git to park; returns the environment, the repository and the run's id.
fn start_parked(mut env: TestEnv, park: Park, args: &[&str]) -> (TestEnv, PathBuf, String) {
    let marker = park_git(&mut env, park);
    let dir = pitroom_testkit::repo::dirty_repo(&env, "repo");
    let id = start(&env, &dir, args);
    let parked = match park {
        Park::Copy => "git parked in the copy's checkout",
        Park::After => "git parked in the after snapshot",
    };
    wait_for(parked, || marker.exists());
    (env, dir, id)
}

/// Starts one background run and returns its id.
fn start(env: &TestEnv, dir: &Path, args: &[&str]) -> String {
    let mut all = vec!["crew", "-g", "parked"];
    all.extend_from_slice(args);
    let out = env.run(dir, &all);
    assert_exit(&out, 0);
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn show(env: &TestEnv, dir: &Path, id: &str) -> Value {
    let out = env.run(dir, &["show", id, "--json"]);
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)))
}

fn stop(env: &TestEnv, dir: &Path, id: &str) {
    let out = env.run(dir, &["stop", id]);
    assert_exit(&out, 0);
}

/// Every `.tmp-*` entry under the state dir: half-built copies.
fn temp_copies(root: &Path) -> Vec<PathBuf> {
    entries_under(root)
        .into_iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(".tmp-"))
        })
        .collect()
}

/// The run's record says it ended `state`, interrupted in `phase`; returns the record.
fn assert_interrupted(env: &TestEnv, dir: &Path, id: &str, state: &str, phase: &str) -> Value {
    let r = show(env, dir, id);
    assert_eq!(r["state"], state, "{r:#}");
    assert_eq!(r["interrupted_in"], phase, "{r:#}");
    r
}

/// The run ended `state`, interrupted in `phase`; every process of the state dir is gone (its
/// supervisor, git and its `sleep`, keepers, workers) and no half-built copy is left.
fn assert_ended_in(env: &TestEnv, dir: &Path, id: &str, state: &str, phase: &str) -> Value {
    let r = assert_interrupted(env, dir, id, state, phase);
    let state_dir = env.state.display().to_string();
    assert!(
        eventually(SETTLE, || processes_with_env(&state_dir).is_empty()),
        "processes of the run left: {:?}",
        processes_with_env(&state_dir)
    );
    assert_eq!(temp_copies(&env.state), Vec::<PathBuf>::new());
    r
}

fn wait_for(what: &str, check: impl FnMut() -> bool) {
    assert!(eventually(SETTLE, check), "{what} never happened");
}

#[test]
fn a_stop_in_the_slot_wait_ends_the_queued_run_stopped_before_its_worker() {
    let mut env = fake_env(hanging_worker());
    env.set("PITROOM_MAX_PARALLEL", "1");
    let dir = env.dir("plain");
    let holder = start(&env, &dir, &["hold the slot"]);
    wait_for("the first run's step", || {
        show(&env, &dir, &holder)["tally"]["steps"] == 1
    });
    let queued = start(&env, &dir, &["wait for the slot"]);
    wait_for("the second run's supervisor in the queue", || {
        let r = show(&env, &dir, &queued);
        r["state"] == "queued" && r["phase"] == "queued"
    });
    stop(&env, &dir, &queued);
    let r = assert_interrupted(&env, &dir, &queued, "stopped", "queued");
    assert_str_has(&r, "/error", "never started");
    stop(&env, &dir, &holder);
    assert_ended_in(&env, &dir, &holder, "stopped", "worker");
}

#[test]
fn a_stop_while_a_read_copy_is_checked_out_kills_git_and_leaves_no_half_built_copy() {
    let (env, dir, id) = start_parked(read_copy_env(), Park::Copy, &["read it"]);
    stop(&env, &dir, &id);
    let r = assert_ended_in(&env, &dir, &id, "stopped", "tree");
    assert_str_has(&r, "/error", "while preparing the tree");
}

#[test]
fn a_run_waiting_for_another_runs_copy_stops_without_waiting_for_it() {
    let (env, dir, builder) = start_parked(read_copy_env(), Park::Copy, &["build the copy"]);
    // The same tree: this run waits for the builder's copy.
    let waiter = start(&env, &dir, &["wait for the copy"]);
    wait_for("the second run preparing its tree", || {
        show(&env, &dir, &waiter)["phase"] == "tree"
    });
    stop(&env, &dir, &waiter);
    assert_interrupted(&env, &dir, &waiter, "stopped", "tree");
    assert_eq!(
        show(&env, &dir, &builder)["state"],
        "running",
        "the builder is still parked: the waiter did not wait for it"
    );
    stop(&env, &dir, &builder);
    assert_ended_in(&env, &dir, &builder, "stopped", "tree");
}

#[test]
fn a_stop_while_an_isolated_copy_is_built_leaves_no_half_built_copy() {
    let (env, dir, id) = start_parked(fake_env(quick_worker()), Park::Copy, &["-i", "edit a copy"]);
    stop(&env, &dir, &id);
    let r = assert_ended_in(&env, &dir, &id, "stopped", "tree");
    assert!(r["copy"].is_null(), "no copy is recorded: {r:#}");
    let copies = env.state.join("copies");
    let left: Vec<_> = std::fs::read_dir(&copies)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(
        left.is_empty(),
        "nothing left in {}: {left:?}",
        copies.display()
    );
}

#[test]
fn the_timeout_ends_a_run_whose_tree_is_still_being_prepared() {
    let (env, dir, id) = start_parked(read_copy_env(), Park::Copy, &["-t", "1s", "read it"]);
    wait_for("the run to end", || {
        show(&env, &dir, &id)["state"] != "running"
    });
    let r = assert_ended_in(&env, &dir, &id, "timeout", "tree");
    assert_str_has(&r, "/error", "timed out after 1s while preparing the tree");
}

#[test]
fn a_stop_while_the_worker_runs_ends_it_stopped_in_the_worker_phase() {
    let env = fake_env(hanging_worker());
    let dir = pitroom_testkit::repo::dirty_repo(&env, "repo");
    let id = start(&env, &dir, &["-w", "edit in place"]);
    wait_for("the worker's step", || {
        show(&env, &dir, &id)["tally"]["steps"] == 1
    });
    stop(&env, &dir, &id);
    let r = assert_ended_in(&env, &dir, &id, "stopped", "worker");
    // What the stopped worker did is still recorded: the "after" snapshot was taken.
    assert!(r["after_tree"].is_string(), "{r:#}");
    assert!(r["receipt"].is_object(), "{r:#}");
}

#[test]
fn the_worker_starts_with_no_signal_blocked_so_a_stop_reaches_it() {
    // The keeper and the init block the signals they wait for; a worker that inherited that
    // mask ignored the sweep's SIGTERM, and only the SIGKILL after the grace period ended it.
    let mut env = TestEnv::new(Path::new(super::common::PITROOM));
    // A dir of the test's, opened to the worker.
    let marks = env.dir("marks");
    env.set("PITROOM_SANDBOX_WRITABLE", marks.display().to_string());
    let worker = env.dir("bin").join("mask-reporting-worker");
    // The shell reads its own mask with builtins only (a child it forks gets a cleared mask,
    // and while it waits for one it shows a full mask for a moment), then becomes the sleep.
    std::fs::write(
        &worker,
        format!(
            "#!/bin/sh\nwhile IFS= read -r line; do case \"$line\" in SigBlk:*) echo \"$line\" > {m}/mask.tmp ;; esac; done < /proc/self/status\nmv {m}/mask.tmp {m}/mask\nexec sleep 299.7\n",
            m = marks.display()
        ),
    )
    .expect("worker");
    std::fs::set_permissions(&worker, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    env.set("PITROOM_OPENCODE_BIN", worker.display().to_string());
    let dir = env.dir("plain");
    let id = start(&env, &dir, &["hang"]);
    wait_for("the worker's report", || marks.join("mask").exists());
    let mask = std::fs::read_to_string(marks.join("mask")).expect("mask");
    stop(&env, &dir, &id);
    assert_eq!(
        mask.trim_start_matches("SigBlk:").trim(),
        "0000000000000000",
        "signals blocked in the worker"
    );
    assert_ended_in(&env, &dir, &id, "stopped", "worker");
}

#[test]
fn a_stop_during_verify_kills_its_command_and_keeps_the_workers_work() {
    let env = fake_env(writing_worker());
    let dir = pitroom_testkit::repo::dirty_repo(&env, "repo");
    // In the tree: --verify runs in the worker's sandbox, which writes nothing outside it.
    let marker = dir.join("verify-started");
    let verify = format!(": > '{}'; exec sleep 297.3", marker.display());
    let id = start(&env, &dir, &["-w", "--verify", &verify, "edit in place"]);
    wait_for("the --verify command", || marker.exists());
    stop(&env, &dir, &id);
    let r = assert_ended_in(&env, &dir, &id, "stopped", "verify");
    assert_eq!(r["verify"]["passed"], false, "{r:#}");
    assert!(
        r["changes"]
            .as_array()
            .is_some_and(|c| c.iter().any(|f| f["path"] == "new.txt")),
        "the worker's change is recorded: {r:#}"
    );
}

#[test]
fn a_stop_while_the_changes_are_recorded_kills_git_and_says_no_patch_was_kept() {
    let (env, dir, id) = start_parked(
        fake_env(writing_worker()),
        Park::After,
        &["-w", "edit in place"],
    );
    stop(&env, &dir, &id);
    let r = assert_ended_in(&env, &dir, &id, "stopped", "finishing");
    assert_str_has(&r, "/error", "no patch was recorded");
    assert!(
        r["receipt"].is_object(),
        "the record is sealed all the same: {r:#}"
    );
}
