//! A read run's view of the project: where the kernel offers Landlock and a
//! private mount namespace, the worker reads the live tree in place, unable to write it, with
//! every secret-looking file hidden behind an empty one; elsewhere, or when asked, a read-only
//! copy. The record says which view the run had.

use pitroom_testkit::repo::{dirty_repo, fingerprint, write};
use serde_json::{json, Value};

use super::common::assert_str_has;
use super::common::{
    assert_exit, assert_stdout_has, code, fake_env, invocation_file, record, shell_calls,
};

/// A dirty repository with secrets a worker could open: an ignored `.env`, a key deep in an
/// ignored `node_modules`, and a tracked certificate.
fn repo_with_secrets(env: &pitroom_testkit::TestEnv) -> std::path::PathBuf {
    let repo = dirty_repo(env, "repo");
    write(&repo, ".gitignore", ".env\nnode_modules/\n");
    write(&repo, ".env", "API_KEY=hunter2\n");
    write(&repo, ".env.example", "API_KEY=\n");
    write(
        &repo,
        "node_modules/pkg/test/fixture.key",
        "PRIVATE KEY hunter3\n",
    );
    write(&repo, "certs/server.pem", "-----BEGIN hunter4-----\n");
    env.git(&repo, &["add", "certs/server.pem", ".gitignore"]);
    repo
}

fn the_kernel_allows_in_place() {
    assert!(
        pitroom_proc::kernel_abi().is_some_and(|abi| abi >= 3)
            && pitroom_proc::landlock::can_protect_git_dir_with_mount(),
        "these tests need Landlock ABI 3+ and CAP_SYS_ADMIN (a private mount namespace)"
    );
}

#[test]
fn a_read_run_in_place_sees_the_live_tree_but_not_its_secrets_and_cannot_write_it() {
    the_kernel_allows_in_place();
    let env0 = fake_env(json!([]));
    let repo = repo_with_secrets(&env0);
    let reads = [
        "cat README.md",
        "cat notes/'todo list é.txt'",
        "cat .env.example",
    ];
    let hidden = [
        "cat .env",
        "cat node_modules/pkg/test/fixture.key",
        "cat certs/server.pem",
    ];
    let refused = [
        "echo x > new.txt",
        "echo API_KEY=stolen > .env",
        "rm calc.py",
    ];
    let mut actions: Vec<Value> = reads
        .iter()
        .chain(&hidden)
        .chain(&refused)
        .map(|c| json!({"sh": c}))
        .collect();
    actions.push(json!({"text": "SUMMARY: division is in calc.py:6"}));
    let mut env = env0;
    env.set("PITROOM_FAKE_SCRIPT", Value::Array(actions).to_string());
    env.set(
        "PITROOM_FAKE_RECORD",
        invocation_file(&env, "opencode").display().to_string(),
    );
    let before = fingerprint(&repo);

    let out = env.run(&repo, &["where is division?"]);
    assert_exit(&out, 0);

    let calls = shell_calls(&env, &repo);
    assert_eq!(calls.len(), 9, "{calls:#?}");
    let output = |cmd: &str| {
        let (_, exit, output) = calls.iter().find(|(c, ..)| c == cmd).expect("the call");
        (*exit, output.clone())
    };
    // The live tree, the user's uncommitted and untracked work included.
    assert!(output("cat README.md").1.contains("user edit in progress"));
    assert!(output("cat notes/'todo list é.txt'")
        .1
        .contains("untracked user notes"));
    assert!(output("cat .env.example").1.contains("API_KEY="));
    for cmd in hidden {
        let (exit, text) = output(cmd);
        assert_eq!(exit, 0, "{cmd}: the file reads as empty: {text}");
        assert!(!text.contains("hunter"), "{cmd} leaked: {text}");
    }
    for cmd in refused {
        let (exit, text) = output(cmd);
        assert_ne!(exit, 0, "{cmd} must be refused: {text}");
    }
    assert_eq!(fingerprint(&repo), before, "the user's tree is unchanged");
    assert_eq!(
        std::fs::read_to_string(repo.join(".env")).expect(".env"),
        "API_KEY=hunter2\n"
    );

    let inv: Value = serde_json::from_str(
        &std::fs::read_to_string(invocation_file(&env, "opencode")).expect("invocation"),
    )
    .expect("json");
    let top = std::fs::canonicalize(&repo).expect("canonical");
    assert_eq!(
        inv["cwd"].as_str(),
        top.to_str(),
        "the worker ran in the project"
    );

    let r = record(&env, &repo);
    assert_eq!(r["view"], "in_place", "{r:#}");
    assert!(r["copy"].is_null(), "{r:#}");
    assert!(r["base_tree"].is_null(), "no snapshot is taken: {r:#}");
    assert!(r["after_tree"].is_null(), "{r:#}");
    assert_eq!(r["safety"]["landlock"]["landlock"], "enforced", "{r:#}");
    assert_eq!(r["safety"]["landlock"]["hidden"], 3, "{r:#}");
    assert_eq!(r["read_only_violation"], false);
    assert_eq!(
        r["refs"]["verified"], 1,
        "checked against the live tree: {r:#}"
    );
    assert_stdout_has(&out, "3 secret-looking file(s) hidden from the worker");
    assert_stdout_has(
        &env.run(&repo, &["show"]),
        "── view: the live tree, read-only (in place)",
    );
}

#[test]
fn a_read_run_with_the_copy_forced_reads_a_copy_and_the_record_says_why() {
    let mut env = fake_env(json!([{"sh": "cat .env; pwd"}, {"text": "SUMMARY: read"}]));
    env.set("PITROOM_READ_VIEW", "copy");
    let repo = repo_with_secrets(&env);
    let out = env.run(&repo, &["look"]);
    assert_exit(&out, 0);
    let r = record(&env, &repo);
    assert_eq!(r["view"], "copy", "{r:#}");
    assert_str_has(&r, "/view_reason", "PITROOM_READ_VIEW=copy");
    let copy = r["copy"].as_str().expect("a copy");
    assert!(copy.contains("snapshots"), "{copy}");
    assert!(
        r["base_tree"].is_string() && r["after_tree"].is_string(),
        "{r:#}"
    );
    let calls = shell_calls(&env, &repo);
    assert!(!calls[0].2.contains("hunter"), "{calls:#?}");
    assert_stdout_has(
        &env.run(&repo, &["show"]),
        "── view: a read-only copy: asked for with PITROOM_READ_VIEW=copy",
    );
}

#[test]
fn a_read_run_without_landlock_reads_a_copy_and_the_record_says_why() {
    let mut env = fake_env(json!([{"text": "SUMMARY: read"}]));
    env.set("PITROOM_LANDLOCK", "off");
    let repo = dirty_repo(&env, "repo");
    assert_eq!(code(&env.run(&repo, &["look"])), 0);
    let r = record(&env, &repo);
    assert_eq!(r["view"], "copy", "{r:#}");
    assert_str_has(&r, "/view_reason", "Landlock is off");
}

#[test]
fn a_portable_read_run_reads_a_checked_copy_without_secrets_and_the_record_says_what_was_off() {
    let mut env = fake_env(json!([{"sh": "cat .env; pwd"}, {"text": "SUMMARY: read"}]));
    env.set(pitroom_proc::PORTABLE_ENV, "1");
    let repo = repo_with_secrets(&env);
    let out = env.run(&repo, &["look"]);
    assert_exit(&out, 0);
    let r = record(&env, &repo);
    let off = "turned off by PITROOM_PORTABLE";
    // The view macOS gets: a copy, checked against snapshots taken before and after.
    assert_eq!(r["view"], "copy", "{r:#}");
    assert_str_has(&r, "/view_reason", off);
    assert!(
        r["base_tree"].is_string() && r["after_tree"].is_string(),
        "{r:#}"
    );
    assert_eq!(r["read_only_violation"], false, "{r:#}");
    assert_eq!(r["safety"]["landlock"]["landlock"], "skipped", "{r:#}");
    assert_str_has(&r, "/safety/landlock/reason", off);
    assert_eq!(
        r["safety"]["containment"]["mechanism"], "process_sweep",
        "{r:#}"
    );
    assert_str_has(&r, "/safety/containment/reason", off);
    let calls = shell_calls(&env, &repo);
    assert!(!calls[0].2.contains("hunter"), "{calls:#?}");
}

#[test]
fn a_follow_up_of_a_run_in_place_reads_the_live_tree_as_it_is_now() {
    the_kernel_allows_in_place();
    let env = fake_env(json!([{"sh": "cat README.md"}, {"text": "SUMMARY: read"}]));
    let repo = dirty_repo(&env, "repo");
    assert_eq!(code(&env.run(&repo, &["look"])), 0);
    let first = record(&env, &repo);
    assert_eq!(first["view"], "in_place", "{first:#}");
    write(&repo, "README.md", "# demo\n\nedited meanwhile\n");
    let id = first["id"].as_str().expect("id");
    let out = env.run(&repo, &["run", "--continue", id, "and now?"]);
    assert_exit(&out, 0);
    let second = record(&env, &repo);
    assert_eq!(second["view"], "in_place", "{second:#}");
    let calls = shell_calls(&env, &repo);
    assert!(calls[0].2.contains("edited meanwhile"), "{calls:#?}");
}

#[test]
fn without_a_pid_namespace_the_keeper_itself_hides_the_secrets_of_a_run_in_place() {
    the_kernel_allows_in_place();
    let mut env = fake_env(json!([{"sh": "cat .env"}, {"text": "SUMMARY: read"}]));
    env.set(pitroom_proc::NO_PID_NAMESPACE_ENV, "1");
    let repo = repo_with_secrets(&env);
    let out = env.run(&repo, &["look"]);
    assert_exit(&out, 0);
    let r = record(&env, &repo);
    assert_eq!(r["view"], "in_place", "{r:#}");
    assert_eq!(
        r["safety"]["containment"]["mechanism"], "process_sweep",
        "{r:#}"
    );
    assert_eq!(r["safety"]["landlock"]["hidden"], 3, "{r:#}");
    let calls = shell_calls(&env, &repo);
    assert_eq!(calls[0].1, 0, "{calls:#?}");
    assert!(!calls[0].2.contains("hunter"), "{calls:#?}");
}
