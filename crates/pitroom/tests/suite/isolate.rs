//! Isolate mode on the fake worker: a private copy of the current state, and a checked,
//! all-or-nothing `apply`.

use std::path::{Path, PathBuf};

use pitroom_testkit::repo::{dirty_repo, fingerprint, write};
use pitroom_testkit::TestEnv;
use serde_json::{json, Value};

use super::common::{
    assert_stderr_has, assert_stdout_has, changed, code, fake_env, json_stdout, last_id, record,
    stderr, text, use_script,
};

fn edits() -> Value {
    json!([
        {"write": {"path": "calc.py", "content": "def divide(a, b):\n    return a / b if b else 0\n"}},
        {"write": {"path": "README.md", "content": "# demo\n\nuser edit in progress\nworker line\n"}},
        {"write": {"path": "new dir/ñew file.txt", "content": ""}},
        {"rename": {"from": "src/util.rs", "to": "src/helpers.rs"}},
        {"chmod": {"path": "crlf.txt", "mode": 493}},
        {"write": {"path": "crlf.txt", "content": "one\r\ntwo\r\nthree\r\n"}},
        {"text": "SUMMARY: edited in the copy"}
    ])
}

/// A dirty repository after an isolated run of [`edits`]: the environment and the repository.
fn tidied_up() -> (TestEnv, PathBuf) {
    let env = fake_env(edits());
    let repo = dirty_repo(&env, "repo");
    env.run_expecting(&repo, &["-i", "tidy up"], 0);
    (env, repo)
}

#[test]
fn isolated_run_leaves_the_tree_alone_and_apply_lands_exactly_its_edits() {
    let env = fake_env(edits());
    let repo = dirty_repo(&env, "repo");
    let before = fingerprint(&repo);
    let index_before = std::fs::read(repo.join(".git/index")).unwrap();
    let out = env.run_expecting(&repo, &["-i", "tidy up"], 0);
    assert_eq!(
        fingerprint(&repo),
        before,
        "nothing reaches the tree before apply"
    );
    assert_stdout_has(&out, "in the isolated copy, NOT applied yet");
    // A move is a move.
    assert_stdout_has(&out, "R src/util.rs → src/helpers.rs");
    let r = record(&env, &repo);
    let copy = r["copy"].as_str().unwrap().to_string();
    // What the worker left in its copy is exactly what apply must produce.
    let expected = fingerprint(Path::new(&copy));

    env.run_expecting(&repo, &["apply"], 0);
    assert_eq!(
        fingerprint(&repo),
        expected,
        "byte for byte, modes included"
    );
    assert_eq!(
        std::fs::read(repo.join(".git/index")).unwrap(),
        index_before,
        "the index is untouched"
    );
    assert!(!Path::new(&copy).exists(), "the copy goes once applied");
    env.run_expecting(&repo, &["apply"], 3);
}

#[test]
fn deletions_are_refused_unless_allowed_and_the_refusal_lists_them() {
    let env = fake_env(
        json!([{"remove": "calc.py"}, {"write": {"path": "x.txt", "content": "x"}}, {"text": "done"}]),
    );
    let repo = dirty_repo(&env, "repo");
    env.run_expecting(&repo, &["-i", "delete calc"], 0);
    let before = fingerprint(&repo);
    let out = env.run_expecting(&repo, &["apply"], 3);
    let stderr = stderr(&out);
    assert!(
        stderr.contains("deletes 1 file") && stderr.contains("calc.py"),
        "{stderr}"
    );
    assert_eq!(fingerprint(&repo), before, "nothing was applied");
    env.run_expecting(&repo, &["apply", "--allow-delete"], 0);
    assert!(!repo.join("calc.py").exists() && repo.join("x.txt").exists());
}

#[test]
fn a_conflicting_apply_changes_no_byte_and_says_how_to_rerun() {
    let (env, repo) = tidied_up();
    write(&repo, "calc.py", "the user rewrote it meanwhile\n");
    let before = fingerprint(&repo);
    let out = env.run_expecting(&repo, &["apply"], 1);
    // Names the conflicting file.
    assert_stderr_has(&out, "calc.py");
    assert_stderr_has(&out, "pitroom run -i --task-file");
    assert_eq!(fingerprint(&repo), before, "all or nothing");
}

#[test]
fn discard_removes_the_copy_and_keeps_the_patch() {
    let (env, repo) = tidied_up();
    let copy = record(&env, &repo)["copy"].as_str().unwrap().to_string();
    env.run_expecting(&repo, &["discard"], 0);
    assert!(!Path::new(&copy).exists());
    assert_stdout_has(&env.run(&repo, &["show", "--patch"]), "+worker line");
    assert_eq!(
        code(&env.run(&repo, &["discard"])),
        3,
        "nothing left to discard"
    );
}

#[test]
fn discard_never_removes_a_path_outside_the_copies_dir() {
    let (env, repo) = tidied_up();
    let id = last_id(&env, &repo);
    let path = env.state.join("runs").join(&id).join("record.json");
    let mut r: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let victim = env.dir("precious");
    write(&victim, "keep.txt", "keep me");
    r["copy"] = json!(victim.display().to_string());
    std::fs::write(&path, r.to_string()).unwrap();
    let _ = env.run(&repo, &["discard", &id]);
    assert!(
        victim.join("keep.txt").exists(),
        "a tampered record cannot aim discard elsewhere"
    );
}

#[test]
fn follow_up_reuses_the_copy_and_the_patch_accumulates() {
    let mut env =
        fake_env(json!([{"write": {"path": "first.txt", "content": "1"}}, {"text": "one"}]));
    let repo = dirty_repo(&env, "repo");
    env.run_expecting(&repo, &["-i", "first"], 0);
    use_script(
        &mut env,
        json!([{"write": {"path": "second.txt", "content": "2"}}, {"text": "two"}]),
    );
    env.run_expecting(&repo, &["run", "--continue", "last", "second"], 0);
    let r = record(&env, &repo);
    let paths = changed(&r);
    assert_eq!(paths, vec!["first.txt", "second.txt"]);
    env.run_expecting(&repo, &["apply"], 0);
    assert!(repo.join("first.txt").exists() && repo.join("second.txt").exists());
}

#[test]
fn linked_paths_are_usable_but_the_users_copy_is_never_written() {
    let env = fake_env(json!([
        {"write": {"path": "node_modules/dep/index.js", "content": "tampered"}},
        {"write": {"path": "out.txt", "content": "x"}},
        {"text": "done"}
    ]));
    let repo = dirty_repo(&env, "repo");
    write(&repo, ".gitignore", "node_modules/\n");
    write(&repo, "node_modules/dep/index.js", "original");
    env.run_expecting(&repo, &["-i", "--link", "node_modules", "use the dep"], 0);
    assert_eq!(
        std::fs::read_to_string(repo.join("node_modules/dep/index.js")).unwrap(),
        "original"
    );
    let r = record(&env, &repo);
    let paths = changed(&r);
    assert_eq!(paths, vec!["out.txt"], "linked paths stay out of the patch");
}

#[test]
fn apply_group_lands_runs_in_start_order_and_stops_at_the_first_conflict() {
    let mut env = fake_env(json!([{"write": {"path": "a.txt", "content": "a"}}, {"text": "a"}]));
    let repo = dirty_repo(&env, "repo");
    env.run_expecting(&repo, &["-i", "-g", "g1", "a"], 0);
    use_script(
        &mut env,
        json!([{"write": {"path": "b.txt", "content": "b"}}, {"text": "b"}]),
    );
    env.run_expecting(&repo, &["-i", "-g", "g1", "b"], 0);
    use_script(
        &mut env,
        json!([{"write": {"path": "a.txt", "content": "other"}}, {"text": "c"}]),
    );
    env.run_expecting(&repo, &["-i", "-g", "g1", "c"], 0);
    let v = json_stdout(&env.run_expecting(&repo, &["apply", "-g", "g1", "--json"], 1));
    assert_eq!(v["applied"].as_array().unwrap().len(), 2, "{v:#}");
    assert_eq!(v["not_applied"].as_array().unwrap().len(), 1, "{v:#}");
    assert_eq!(std::fs::read_to_string(repo.join("a.txt")).unwrap(), "a");
    assert!(repo.join("b.txt").exists());
}

#[test]
fn verify_failure_fails_the_run_with_exit_6_and_keeps_the_output() {
    let env = fake_env(json!([{"write": {"path": "x.txt", "content": "x"}}, {"text": "done"}]));
    let repo = dirty_repo(&env, "repo");
    let out = env.run_expecting(
        &repo,
        &["-i", "--verify", "echo checking; test -f missing.txt", "x"],
        6,
    );
    assert_stdout_has(&out, "failed · verify failed");
    assert_stdout_has(&out, "── verify: ✘ failed (exit 1)");
    assert_stdout_has(&out, "| checking");
    let ok = env.run(&repo, &["-i", "--verify", "test -f x.txt", "x"]);
    assert_eq!(code(&ok), 0, "verify runs in the copy: {}", text(&ok));
    assert_stdout_has(&ok, "── verify: ✔ passed");
}

#[test]
fn verify_has_a_time_limit() {
    let mut env = fake_env(json!([{"text": "done"}]));
    std::fs::write(env.root.join("pitroom.toml"), "verify_timeout = \"1s\"\n").unwrap();
    env.set("X", "1");
    let repo = dirty_repo(&env, "repo");
    let out = env.run_expecting(&repo, &["--verify", "sleep 600", "x"], 6);
    assert_stdout_has(&out, "timed out");
}

#[test]
fn read_runs_keep_secret_looking_files_out_of_the_copy() {
    let mut env = fake_env(json!([{"text": "done"}]));
    env.set("PITROOM_READ_VIEW", "copy");
    let repo = dirty_repo(&env, "repo");
    write(&repo, ".env", "API_KEY=hunter2\n");
    write(&repo, ".env.example", "API_KEY=\n");
    write(&repo, "certs/server.pem", "-----BEGIN-----\n");
    let out = env.run_expecting(&repo, &["look"], 0);
    let copy = record(&env, &repo)["copy"].as_str().unwrap().to_string();
    assert!(!Path::new(&copy).join(".env").exists());
    assert!(!Path::new(&copy).join("certs/server.pem").exists());
    assert!(Path::new(&copy).join(".env.example").exists());
    assert_stdout_has(&out, "2 secret-looking file(s) kept out");
}
