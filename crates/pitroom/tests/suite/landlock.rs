//! Layer 3: Landlock around every worker (and a read-only `.git` in edit runs). Each test makes a
//! worker write where it must not and where it may, through its shell, inside a real run, and
//! checks both the file system afterwards and what the run record says held.

use std::path::Path;

use pitroom_testkit::repo::{dirty_repo, fingerprint};
use serde_json::{json, Value};

use super::common::assert_str_has;
use super::common::{assert_exit, assert_stdout_has, changed, fake_env, record, shell_calls};

/// Asserts every command in `refused` failed with one of `errors` and every one in `allowed`
/// worked.
fn assert_outcomes(
    calls: &[(String, i64, String)],
    refused: &[String],
    allowed: &[String],
    errors: &[&str],
) {
    assert_eq!(calls.len(), refused.len() + allowed.len(), "{calls:#?}");
    for (command, exit, output) in calls {
        if refused.contains(command) {
            assert_ne!(*exit, 0, "{command} must be refused: {output}");
            assert!(
                errors.iter().any(|e| output.contains(e)),
                "{command}: {output}"
            );
        } else {
            assert_eq!(*exit, 0, "{command} must work: {output}");
        }
    }
}

fn script(commands: &[String]) -> Value {
    let mut actions: Vec<Value> = commands.iter().map(|c| json!({"sh": c})).collect();
    actions.push(json!({"text": "SUMMARY: tried"}));
    Value::Array(actions)
}

fn expect_landlock(r: &Value) {
    assert!(
        pitroom_proc::kernel_abi().is_some(),
        "these tests need a kernel with Landlock (Linux 5.13+)"
    );
    assert_eq!(r["safety"]["landlock"]["landlock"], "enforced", "{r:#}");
    assert!(
        r["safety"]["landlock"]["abi"].as_i64().unwrap_or(0) >= 3,
        "{r:#}"
    );
    assert_eq!(r["safety"]["guard_shim"], true);
    assert_eq!(r["safety"]["git_env_config"], true);
}

#[test]
fn a_read_worker_cannot_write_the_project_its_git_dir_home_or_tmp_but_its_own_dirs_work() {
    let marker = format!("pitroom-landlock-{}", std::process::id());
    let env0 = fake_env(json!([]));
    let repo = dirty_repo(&env0, "repo");
    let outside_tmp = format!("/tmp/{marker}.txt");
    let refused = vec![
        "echo x > new.txt".to_string(),
        "echo x >> calc.py".to_string(),
        "echo 0000000000000000000000000000000000000000 > .git/refs/heads/x".to_string(),
        format!("echo x > '{}/escaped.txt'", repo.display()),
        "echo x > \"$HOME/home.txt\"".to_string(),
        format!("echo x > {outside_tmp}"),
    ];
    let allowed = vec![
        "echo x > \"$TMPDIR/ok.txt\" && cat \"$TMPDIR/ok.txt\"".to_string(),
        "echo x > \"$XDG_DATA_HOME/ok.txt\"".to_string(),
        "echo x > /dev/null".to_string(),
        "git status --short >/dev/null".to_string(),
    ];
    let all: Vec<String> = refused.iter().chain(&allowed).cloned().collect();
    let mut env = env0;
    env.set("PITROOM_FAKE_SCRIPT", script(&all).to_string());
    let before = fingerprint(&repo);

    let out = env.run(&repo, &["look but do not touch"]);
    assert_exit(&out, 0);

    assert_outcomes(
        &shell_calls(&env, &repo),
        &refused,
        &allowed,
        &["Permission denied"],
    );
    assert_eq!(fingerprint(&repo), before, "the user's tree is unchanged");
    assert!(!env.home.join("home.txt").exists());
    assert!(!Path::new(&outside_tmp).exists());
    let r = record(&env, &repo);
    expect_landlock(&r);
    assert_eq!(r["safety"]["landlock"]["git_dir"], "not_exposed", "{r:#}");
    assert_eq!(r["safety"]["blocked_writes"], refused.len(), "{r:#}");
    assert_eq!(r["read_only_violation"], false);
    assert_stdout_has(
        &out,
        "warning: the sandbox refused writes in 6 tool result(s)",
    );
}

#[test]
fn an_isolated_worker_edits_its_copy_but_cannot_touch_the_copys_git_dir() {
    let refused = vec![
        "echo 0000000000000000000000000000000000000000 > .git/refs/heads/x".to_string(),
        "rm .git/index".to_string(),
        "echo '[core]' >> .git/config".to_string(),
        "touch .git/index.lock".to_string(),
        "mv .git gone".to_string(),
    ];
    let allowed = vec![
        "echo created > created.txt".to_string(),
        "echo more >> calc.py".to_string(),
        "mkdir -p newdir && echo x > newdir/f.txt && mv newdir renamed".to_string(),
        "echo x > /dev/null".to_string(),
        "echo x > \"$TMPDIR/ok.txt\"".to_string(),
    ];
    let all: Vec<String> = refused.iter().chain(&allowed).cloned().collect();
    let env = fake_env(script(&all));
    let repo = dirty_repo(&env, "repo");
    let before = fingerprint(&repo);

    let out = env.run(&repo, &["-i", "edit what you like"]);
    assert_exit(&out, 0);

    let r = record(&env, &repo);
    expect_landlock(&r);
    let calls = shell_calls(&env, &repo);
    if pitroom_proc::landlock::can_protect_git_dir_with_mount() {
        assert_eq!(
            r["safety"]["landlock"]["git_dir"], "read_only_mount",
            "{r:#}"
        );
        // Renaming the mount point itself is EBUSY; everything else EROFS.
        assert_outcomes(
            &calls,
            &refused,
            &allowed,
            &["Read-only file system", "Device or resource busy"],
        );
    } else {
        assert_eq!(r["safety"]["landlock"]["git_dir"], "writable", "{r:#}");
    }
    let copy = Path::new(r["copy"].as_str().expect("copy")).to_path_buf();
    assert!(copy.join(".git/index").exists(), "the index survived");
    assert!(!copy.join(".git/refs/heads/x").exists());
    assert!(!copy.join(".git/index.lock").exists());
    assert!(!copy.join("gone").exists());
    let paths = changed(&r);
    for path in ["created.txt", "calc.py", "renamed/f.txt"] {
        assert!(paths.contains(&path), "{path} in {paths:?}");
    }
    assert_eq!(
        fingerprint(&repo),
        before,
        "isolated: the user's tree waits for apply"
    );
}

#[test]
fn a_write_worker_edits_the_users_tree_but_not_its_git_dir_nor_anything_outside() {
    let refused = [
        "echo 0000000000000000000000000000000000000000 > .git/refs/heads/main".to_string(),
        "rm .git/index".to_string(),
        "echo x > ../outside.txt".to_string(),
    ];
    let allowed = vec!["echo created > created.txt".to_string()];
    let all: Vec<String> = refused.iter().chain(&allowed).cloned().collect();
    let env = fake_env(script(&all));
    let repo = dirty_repo(&env, "repo");
    let head = env.git(&repo, &["rev-parse", "refs/heads/main"]);
    let index = std::fs::read(repo.join(".git/index")).expect("index");

    let out = env.run(&repo, &["-w", "edit in place"]);
    assert_exit(&out, 0);

    let r = record(&env, &repo);
    expect_landlock(&r);
    let calls = shell_calls(&env, &repo);
    assert_eq!(calls.len(), all.len(), "{calls:#?}");
    // Outside the repository Landlock refuses (EACCES) whatever the mount namespace does.
    let outside = calls.iter().find(|c| c.0 == refused[2]).expect("call");
    assert_ne!(outside.1, 0);
    assert!(outside.2.contains("Permission denied"), "{}", outside.2);
    assert!(!repo.parent().expect("parent").join("outside.txt").exists());
    assert!(repo.join("created.txt").exists());
    if pitroom_proc::landlock::can_protect_git_dir_with_mount() {
        assert_eq!(
            r["safety"]["landlock"]["git_dir"], "read_only_mount",
            "{r:#}"
        );
        assert_outcomes(&calls[..2], &refused[..2], &[], &["Read-only file system"]);
        assert_eq!(env.git(&repo, &["rev-parse", "refs/heads/main"]), head);
        assert_eq!(
            std::fs::read(repo.join(".git/index")).expect("index"),
            index
        );
    }
}

#[test]
fn landlock_turned_off_is_on_record_and_in_the_report() {
    let mut env = fake_env(script(&["echo x > \"$HOME/home.txt\"".to_string()]));
    env.set("PITROOM_LANDLOCK", "off");
    let repo = dirty_repo(&env, "repo");
    let out = env.run(&repo, &["look"]);
    assert_exit(&out, 0);
    let r = record(&env, &repo);
    assert_eq!(r["safety"]["landlock"]["landlock"], "skipped", "{r:#}");
    assert!(
        env.home.join("home.txt").exists(),
        "unconfined: the write went through"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(
            "warning: layer 3 (Landlock) not applied: turned off with PITROOM_LANDLOCK=off"
        ),
        "{stdout}"
    );
}

#[test]
fn a_real_opencode_read_run_works_under_landlock_and_its_shell_cannot_write_outside() {
    let w = super::real_cli::World::new(&super::real_cli::opencode::CLI);
    let before = fingerprint(&w.repo);
    let out = w.run(&["Where can divide fail?", "-t", "90s"]);
    assert_exit(&out, 0);
    assert_stdout_has(&out, "pitroom ✔ done · read");
    assert_stdout_has(&out, "calc.py:7");
    let r = record(&w.env, &w.repo);
    expect_landlock(&r);
    assert_eq!(r["safety"]["blocked_writes"], 0, "{r:#}");

    // The shell tool writes into the project: refused inside the tool, nothing changes.
    let out = w.run(&["look around scenario:bashwrite", "-t", "90s"]);
    assert_exit(&out, 0);
    let r = record(&w.env, &w.repo);
    expect_landlock(&r);
    assert_eq!(r["read_only_violation"], false, "{r:#}");
    assert_eq!(r["safety"]["blocked_writes"], 1, "{r:#}");
    let events = String::from_utf8_lossy(&w.run(&["show", "--events"]).stdout).into_owned();
    assert!(events.contains("sneaky.txt: Permission denied"), "{events}");
    assert_eq!(fingerprint(&w.repo), before);
}

#[test]
fn a_real_codex_run_keeps_its_own_sandbox_and_the_record_says_landlock_was_skipped() {
    let w = super::real_cli::World::new(&super::real_cli::codex::CLI);
    let out = w.task(&["Where can divide fail?", "-t", "90s"]);
    assert_exit(&out, 0);
    let r = record(&w.env, &w.repo);
    assert_eq!(r["safety"]["landlock"]["landlock"], "skipped", "{r:#}");
    assert_str_has(&r, "/safety/landlock/reason", "own OS sandbox");
}

#[test]
fn a_write_worker_in_a_linked_worktree_cannot_repoint_its_git_file() {
    let refused = [
        "echo 'gitdir: /tmp/planted' > .git".to_string(),
        "rm .git".to_string(),
    ];
    let allowed = ["echo created > created.txt".to_string()];
    let all: Vec<String> = refused.iter().chain(&allowed).cloned().collect();
    let env = fake_env(script(&all));
    let repo = dirty_repo(&env, "repo");
    let worktree = env.root.join("wt");
    env.git(
        &repo,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "wt",
            &worktree.display().to_string(),
        ],
    );
    let pointer = std::fs::read(worktree.join(".git")).expect(".git file");

    let out = env.run(&worktree, &["-w", "edit in the worktree"]);
    assert_exit(&out, 0);

    let r = record(&env, &worktree);
    expect_landlock(&r);
    assert!(worktree.join("created.txt").exists());
    if pitroom_proc::landlock::can_protect_git_dir_with_mount() {
        assert_eq!(
            r["safety"]["landlock"]["git_dir"], "read_only_mount",
            "{r:#}"
        );
        let calls = shell_calls(&env, &worktree);
        assert_outcomes(
            &calls,
            &refused,
            &allowed,
            &["Read-only file system", "Device or resource busy"],
        );
        assert_eq!(
            std::fs::read(worktree.join(".git")).expect(".git file"),
            pointer
        );
    }
}

#[test]
fn a_directory_opted_in_with_sandbox_writable_is_writable_and_nothing_else_is() {
    let cache = tempfile::tempdir().expect("a cache dir");
    let other = tempfile::tempdir().expect("another dir");
    let allowed = vec![format!(
        "echo built > {}/cached.txt",
        cache.path().display()
    )];
    let refused = vec![format!(
        "echo built > {}/elsewhere.txt",
        other.path().display()
    )];
    let mut env = fake_env(script(&[refused.clone(), allowed.clone()].concat()));
    env.set(
        "PITROOM_SANDBOX_WRITABLE",
        cache.path().display().to_string(),
    );
    let repo = dirty_repo(&env, "repo");
    let out = env.run(&repo, &["build and cache"]);
    assert_exit(&out, 0);
    expect_landlock(&record(&env, &repo));
    assert_outcomes(
        &shell_calls(&env, &repo),
        &refused,
        &allowed,
        &["Permission denied"],
    );
    assert!(cache.path().join("cached.txt").exists());
    assert!(!other.path().join("elsewhere.txt").exists());
}
