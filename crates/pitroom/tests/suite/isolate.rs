//! Isolate mode on the fake worker: a private copy of the current state, and a checked,
//! all-or-nothing `apply`.

use std::path::Path;

use pitroom_testkit::repo::{dirty_repo, fingerprint, write};
use serde_json::{json, Value};

use super::common::{changed, code, fake_env, record, text};

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

#[test]
fn isolated_run_leaves_the_tree_alone_and_apply_lands_exactly_its_edits() {
    let env = fake_env(edits());
    let repo = dirty_repo(&env, "repo");
    let before = fingerprint(&repo);
    let index_before = std::fs::read(repo.join(".git/index")).unwrap();
    let out = env.run(&repo, &["-i", "tidy up"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert_eq!(
        fingerprint(&repo),
        before,
        "nothing reaches the tree before apply"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("in the isolated copy, NOT applied yet"),
        "{stdout}"
    );
    assert!(
        stdout.contains("R src/util.rs → src/helpers.rs"),
        "a move is a move: {stdout}"
    );
    let r = record(&env, &repo);
    let copy = r["copy"].as_str().unwrap().to_string();
    // What the worker left in its copy is exactly what apply must produce.
    let expected = fingerprint(Path::new(&copy));

    let out = env.run(&repo, &["apply"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
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
    let again = env.run(&repo, &["apply"]);
    assert_eq!(code(&again), 3, "{}", text(&again));
}

#[test]
fn deletions_are_refused_unless_allowed_and_the_refusal_lists_them() {
    let env = fake_env(
        json!([{"remove": "calc.py"}, {"write": {"path": "x.txt", "content": "x"}}, {"text": "done"}]),
    );
    let repo = dirty_repo(&env, "repo");
    assert_eq!(code(&env.run(&repo, &["-i", "delete calc"])), 0);
    let before = fingerprint(&repo);
    let out = env.run(&repo, &["apply"]);
    assert_eq!(code(&out), 3, "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("deletes 1 file") && stderr.contains("calc.py"),
        "{stderr}"
    );
    assert_eq!(fingerprint(&repo), before, "nothing was applied");
    let out = env.run(&repo, &["apply", "--allow-delete"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert!(!repo.join("calc.py").exists() && repo.join("x.txt").exists());
}

#[test]
fn a_conflicting_apply_changes_no_byte_and_says_how_to_rerun() {
    let env = fake_env(edits());
    let repo = dirty_repo(&env, "repo");
    assert_eq!(code(&env.run(&repo, &["-i", "tidy up"])), 0);
    write(&repo, "calc.py", "the user rewrote it meanwhile\n");
    let before = fingerprint(&repo);
    let out = env.run(&repo, &["apply"]);
    assert_eq!(code(&out), 1, "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("calc.py"),
        "names the conflicting file: {stderr}"
    );
    assert!(stderr.contains("pitroom run -i --task-file"), "{stderr}");
    assert_eq!(fingerprint(&repo), before, "all or nothing");
}

#[test]
fn discard_removes_the_copy_and_keeps_the_patch() {
    let env = fake_env(edits());
    let repo = dirty_repo(&env, "repo");
    assert_eq!(code(&env.run(&repo, &["-i", "tidy up"])), 0);
    let copy = record(&env, &repo)["copy"].as_str().unwrap().to_string();
    let out = env.run(&repo, &["discard"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert!(!Path::new(&copy).exists());
    let patch = env.run(&repo, &["show", "--patch"]);
    assert!(String::from_utf8_lossy(&patch.stdout).contains("+worker line"));
    assert_eq!(
        code(&env.run(&repo, &["discard"])),
        3,
        "nothing left to discard"
    );
}

#[test]
fn discard_never_removes_a_path_outside_the_copies_dir() {
    let env = fake_env(edits());
    let repo = dirty_repo(&env, "repo");
    assert_eq!(code(&env.run(&repo, &["-i", "tidy up"])), 0);
    let id = record(&env, &repo)["id"].as_str().unwrap().to_string();
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
    assert_eq!(code(&env.run(&repo, &["-i", "first"])), 0);
    env.set(
        "PITROOM_FAKE_SCRIPT",
        json!([{"write": {"path": "second.txt", "content": "2"}}, {"text": "two"}]).to_string(),
    );
    let out = env.run(&repo, &["run", "--continue", "last", "second"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let r = record(&env, &repo);
    let paths = changed(&r);
    assert_eq!(paths, vec!["first.txt", "second.txt"]);
    assert_eq!(code(&env.run(&repo, &["apply"])), 0);
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
    let out = env.run(&repo, &["-i", "--link", "node_modules", "use the dep"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
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
    assert_eq!(code(&env.run(&repo, &["-i", "-g", "g1", "a"])), 0);
    env.set(
        "PITROOM_FAKE_SCRIPT",
        json!([{"write": {"path": "b.txt", "content": "b"}}, {"text": "b"}]).to_string(),
    );
    assert_eq!(code(&env.run(&repo, &["-i", "-g", "g1", "b"])), 0);
    env.set(
        "PITROOM_FAKE_SCRIPT",
        json!([{"write": {"path": "a.txt", "content": "other"}}, {"text": "c"}]).to_string(),
    );
    assert_eq!(code(&env.run(&repo, &["-i", "-g", "g1", "c"])), 0);
    let out = env.run(&repo, &["apply", "-g", "g1", "--json"]);
    assert_eq!(code(&out), 1, "{}", text(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["applied"].as_array().unwrap().len(), 2, "{v:#}");
    assert_eq!(v["not_applied"].as_array().unwrap().len(), 1, "{v:#}");
    assert_eq!(std::fs::read_to_string(repo.join("a.txt")).unwrap(), "a");
    assert!(repo.join("b.txt").exists());
}

#[test]
fn verify_failure_fails_the_run_with_exit_6_and_keeps_the_output() {
    let env = fake_env(json!([{"write": {"path": "x.txt", "content": "x"}}, {"text": "done"}]));
    let repo = dirty_repo(&env, "repo");
    let out = env.run(
        &repo,
        &["-i", "--verify", "echo checking; test -f missing.txt", "x"],
    );
    assert_eq!(code(&out), 6, "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("failed · verify failed"), "{stdout}");
    assert!(stdout.contains("── verify: ✘ failed (exit 1)"), "{stdout}");
    assert!(stdout.contains("| checking"), "{stdout}");
    let ok = env.run(&repo, &["-i", "--verify", "test -f x.txt", "x"]);
    assert_eq!(code(&ok), 0, "verify runs in the copy: {}", text(&ok));
    assert!(String::from_utf8_lossy(&ok.stdout).contains("── verify: ✔ passed"));
}

#[test]
fn verify_has_a_time_limit() {
    let mut env = fake_env(json!([{"text": "done"}]));
    std::fs::write(env.root.join("pitroom.toml"), "verify_timeout = \"1s\"\n").unwrap();
    env.set("X", "1");
    let repo = dirty_repo(&env, "repo");
    let out = env.run(&repo, &["--verify", "sleep 600", "x"]);
    assert_eq!(code(&out), 6, "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("timed out"));
}

#[test]
fn read_runs_keep_secret_looking_files_out_of_the_copy() {
    let mut env = fake_env(json!([{"text": "done"}]));
    env.set("PITROOM_READ_VIEW", "copy");
    let repo = dirty_repo(&env, "repo");
    write(&repo, ".env", "API_KEY=hunter2\n");
    write(&repo, ".env.example", "API_KEY=\n");
    write(&repo, "certs/server.pem", "-----BEGIN-----\n");
    let out = env.run(&repo, &["look"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let copy = record(&env, &repo)["copy"].as_str().unwrap().to_string();
    assert!(!Path::new(&copy).join(".env").exists());
    assert!(!Path::new(&copy).join("certs/server.pem").exists());
    assert!(Path::new(&copy).join(".env.example").exists());
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("2 secret-looking file(s) kept out"),
        "{}",
        text(&out)
    );
}
