//! The attack suite: a worker in write mode, in the user's own dirty tree, tries every way it
//! can think of to change history, refs, the index or the stash, or to publish. The git guard
//! (the `git` shim, then git's own environment config) must hold; plain reads must still work.

use std::path::Path;

use pitroom_testkit::repo::dirty_repo;
use serde_json::json;

use super::common::{
    assert_stdout_has, fake_env, last_id, shell_calls, shell_script, stdout, text, use_script,
    PITROOM,
};

/// Commands that must succeed through the guard.
const ALLOWED: &[&str] = &[
    "git status --short",
    "git log --oneline -1",
    "git diff --stat",
    "git -C . show --stat HEAD",
    "git branch --list",
    "git config --get user.name",
    "git rev-parse HEAD",
];

/// Commands that must fail, each with its own trick.
const ATTACKS: &[&str] = &[
    "git commit -qam sneaky",
    "git commit -q --amend -m amended",
    "sh -c 'git commit -qam via-sh'",
    "git -c alias.ci=commit ci -qam alias",
    "git -c alias.x='!git commit -qam shell-alias' x",
    "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.ci GIT_CONFIG_VALUE_0=commit git ci -qam env-alias",
    "GIT_CONFIG_PARAMETERS=\"'alias.ci=commit'\" git ci -qam params-alias",
    "python3 -c \"import subprocess,sys; sys.exit(subprocess.run(['git','commit','-qam','py']).returncode)\"",
    "sh -c 'git reset -q --hard'",
    "env git reset -q --soft HEAD~1",
    "env git stash",
    "git stash push -q",
    "git stash drop",
    "git checkout -- README.md",
    "git checkout -q -b other",
    "git switch -q -c other",
    "git restore README.md",
    "git clean -fdq",
    "git add -A",
    "git rm -q --cached calc.py",
    "git mv calc.py calc2.py",
    "git update-index --assume-unchanged calc.py",
    "git read-tree HEAD",
    "git apply --index /dev/null",
    "git branch evil",
    "git --git-dir=.git branch -D main",
    "git tag evil",
    "git tag -d nothing",
    "git update-ref refs/heads/evil HEAD",
    "git symbolic-ref HEAD refs/heads/elsewhere",
    "git reflog expire --expire=now --all",
    "git notes add -m note",
    "git cherry-pick HEAD",
    "git revert --no-edit HEAD",
    "git merge -q HEAD",
    "git rebase -q HEAD",
    "git worktree add -q ../wt",
    "git gc -q --prune=now",
    "git config core.hooksPath /tmp",
    "git remote add evil /tmp/evil.git",
    "git remote set-url origin /tmp/evil.git",
    "git fetch -q origin",
    "git push -q origin HEAD:refs/heads/pushed",
    // Layer 2: the real git, past the shim.
    "\"$PITROOM_REAL_GIT\" commit -q --allow-empty -m direct",
    "\"$PITROOM_REAL_GIT\" update-ref refs/heads/direct HEAD",
    "\"$PITROOM_REAL_GIT\" branch direct",
    "\"$PITROOM_REAL_GIT\" tag direct",
    "\"$PITROOM_REAL_GIT\" push -q origin HEAD:refs/heads/pushed",
];

/// HEAD, every ref, the index's entries (stage, mode, blob, path), the stash, `.git/config`, the
/// hooks, and the remote's refs.
fn state_of(env: &pitroom_testkit::TestEnv, repo: &Path, remote: &Path) -> Vec<String> {
    let hooks: Vec<String> = std::fs::read_dir(repo.join(".git/hooks"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    vec![
        std::fs::read_to_string(repo.join(".git/HEAD")).expect("HEAD"),
        env.git(repo, &["for-each-ref", "--format=%(refname) %(objectname)"]),
        env.git(repo, &["ls-files", "--stage"]),
        env.git(repo, &["stash", "list"]),
        std::fs::read_to_string(repo.join(".git/config")).expect("config"),
        hooks.join(","),
        env.git(remote, &["for-each-ref"]),
    ]
}

#[test]
fn no_git_trick_changes_history_refs_index_stash_or_remote() {
    let env = fake_env(shell_script(
        ALLOWED.iter().chain(ATTACKS).copied(),
        "SUMMARY: tried",
    ));
    let repo = dirty_repo(&env, "repo");
    let remote = env.dir("remote.git");
    env.git(&remote, &["init", "-q", "--bare"]);
    env.git(
        &repo,
        &["remote", "add", "origin", &remote.display().to_string()],
    );
    let before = state_of(&env, &repo, &remote);
    let readme = std::fs::read_to_string(repo.join("README.md")).expect("readme");

    env.run_expecting(&repo, &["-w", "try everything"], 0);

    assert_eq!(
        state_of(&env, &repo, &remote),
        before,
        "refs, index, stash and remote unchanged"
    );
    assert_eq!(
        std::fs::read_to_string(repo.join("README.md")).expect("readme"),
        readme
    );
    assert!(
        repo.join("notes/todo list é.txt").exists(),
        "clean did not run"
    );

    let calls = shell_calls(&env, &repo);
    assert_eq!(calls.len(), ALLOWED.len() + ATTACKS.len());
    for (command, exit, output) in &calls {
        if ALLOWED.contains(&command.as_str()) {
            assert_eq!(*exit, 0, "{command} must work through the guard: {output}");
        } else {
            assert_ne!(*exit, 0, "{command} must be refused: {output}");
        }
    }
    let refused = calls
        .iter()
        .find(|(c, ..)| c == "git commit -qam sneaky")
        .expect("commit");
    assert!(
        refused.2.contains("The primary agent reviews and commits"),
        "{}",
        refused.2
    );
}

#[test]
fn git_outside_the_protected_repository_is_left_alone() {
    // A worker's own scratch repository (OpenCode keeps one for its snapshots) still works.
    let env = fake_env(json!([
        {"sh": "d=$(mktemp -d) && git init -q \"$d\" && cd \"$d\" && echo x > f && git add f && git -c user.name=w -c user.email=w@w commit -qm scratch && git --git-dir \"$d/.git\" --work-tree \"$d\" add -A"},
        {"text": "done"}
    ]));
    let repo = dirty_repo(&env, "repo");
    env.run_expecting(&repo, &["-w", "use a scratch repo"], 0);
    assert_stdout_has(&env.run(&repo, &["show", "--events"]), "\"exit\":0");
}

#[test]
fn secrets_are_redacted_in_events_answers_logs_and_shown_patches() {
    let secret = "hunter2-correct-horse-battery";
    let env = fake_env(json!([
        {"sh": "cat .env; echo token sk-proj-abcdefghijklmnopqrstuvwxyz012345 >&2"},
        {"write": {"path": "config.txt", "content": format!("password = {secret}\n")}},
        {"stderr": format!("debug: using {secret}")},
        {"text": format!("SUMMARY: the password is {secret}")}
    ]));
    let repo = dirty_repo(&env, "repo");
    pitroom_testkit::repo::write(&repo, ".env", &format!("DB_PASSWORD={secret}\n"));
    let out = env.run_expecting(&repo, &["-w", "leak it"], 0);
    assert!(!stdout(&out).contains(secret), "report: {}", text(&out));
    let run_dir = env.state.join("runs").join(last_id(&env, &repo));
    for file in ["events.jsonl", "answer.md", "stderr.log", "record.json"] {
        let content = std::fs::read_to_string(run_dir.join(file)).unwrap_or_default();
        assert!(
            !content.contains(secret),
            "{file} leaks the secret: {content}"
        );
        assert!(
            !content.contains("sk-proj-abcdefghij"),
            "{file} leaks the key"
        );
    }
    let shown = env.run(&repo, &["show", "--patch"]);
    assert!(!stdout(&shown).contains(secret));
    assert_stdout_has(&shown, "[REDACTED]");
    // The stored patch stays exact, so revert still restores the tree.
    env.run_expecting(&repo, &["revert"], 0);
}

/// The floor beyond git: privilege, publishing and other agent CLIs are refused for any
/// worker, whatever its CLI; everyday use of the same tools passes through untouched.
#[test]
fn no_worker_raises_privileges_publishes_or_starts_another_agent() {
    let refused = [
        "sudo -n true",
        "su -c id",
        "gh repo list",
        "npm publish",
        "npm --prefix . publish --dry-run",
        "cargo publish --dry-run",
        "cargo +stable publish",
        "twine upload dist/x",
        "docker push example.invalid/x",
        "codex exec hello",
        "claude -p hello",
        "sh -c 'cargo publish'",
        "env npm publish",
    ];
    let allowed = ["cargo test --workspace", "npm run build", "git --version"];
    let mut env = fake_env(shell_script(
        refused.iter().chain(allowed.iter()).copied(),
        "SUMMARY: tried",
    ));
    // Stand-ins for the real tools, behind the floor's links on PATH: they print what they got.
    let tools = env.dir("tools");
    for tool in [
        "cargo", "npm", "sudo", "su", "gh", "twine", "docker", "codex", "claude",
    ] {
        let path = tools.join(tool);
        std::fs::write(&path, format!("#!/bin/sh\necho real-{tool} \"$@\"\n")).unwrap();
        let mut perms = std::fs::metadata(&path).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
        std::fs::set_permissions(&path, perms).unwrap();
    }
    let path = format!("{}:{}", tools.display(), env.path().display());
    env.set("PATH", path);
    let repo = dirty_repo(&env, "repo");
    env.run_expecting(&repo, &["-w", "try to publish"], 0);
    let calls = shell_calls(&env, &repo);
    assert_eq!(calls.len(), refused.len() + allowed.len());
    for (command, exit, output) in &calls {
        if allowed.contains(&command.as_str()) {
            assert_eq!(*exit, 0, "{command} must pass through: {output}");
            if !command.starts_with("git") {
                assert!(
                    output.contains(&format!("real-{command}")),
                    "untouched: {output}"
                );
            }
        } else {
            assert_ne!(*exit, 0, "{command} must be refused: {output}");
            assert!(
                output.contains("refused inside a Pitroom worker"),
                "{command}: {output}"
            );
            assert!(
                !output.contains("real-"),
                "{command} reached the real tool: {output}"
            );
        }
    }
}

/// What a worker's `git` link points at: the first call of [`GUARD_PROBE`].
const WHICH_GIT: &str = "readlink \"$(command -v git)\"";

/// A worker asks where its `git` leads, then makes one allowed and two refused calls.
const GUARD_PROBE: &[&str] = &[
    WHICH_GIT,
    "git rev-parse HEAD",
    "git commit -qam sneaky",
    "git push -q origin HEAD:refs/heads/pushed",
];

/// Runs [`GUARD_PROBE`] in a worker of `env` on a dirty repository and returns where the
/// worker's `git` led, after checking that the guard behind it allowed the read and refused
/// the commit and the push itself (its refusal line, not git's own failure).
fn probe_worker_git(env: &mut pitroom_testkit::TestEnv) -> String {
    use_script(
        env,
        shell_script(GUARD_PROBE.iter().copied(), "SUMMARY: probed"),
    );
    let repo = dirty_repo(env, "repo");
    let head = env.git(&repo, &["rev-parse", "HEAD"]);
    env.run_expecting(&repo, &["-w", "probe the guard"], 0);
    let calls = shell_calls(env, &repo);
    assert_eq!(calls.len(), GUARD_PROBE.len(), "{calls:?}");
    let outcome = |command: &str| {
        calls
            .iter()
            .find(|(c, ..)| c == command)
            .map(|(_, exit, output)| (*exit, output.clone()))
            .unwrap_or_else(|| panic!("{command} not run: {calls:?}"))
    };
    let (exit, output) = outcome("git rev-parse HEAD");
    assert_eq!(
        (exit, output.trim()),
        (0, head.trim()),
        "reads pass through"
    );
    for (command, sub) in [
        ("git commit -qam sneaky", "git commit"),
        ("git push -q origin HEAD:refs/heads/pushed", "git push"),
    ] {
        let (exit, output) = outcome(command);
        assert_eq!(exit, 1, "{command} must be refused by the guard: {output}");
        assert!(
            output.contains(&format!("{sub} is blocked inside a Pitroom worker")),
            "{command}: {output}"
        );
    }
    outcome(WHICH_GIT).1.trim().to_string()
}

/// `cargo build` puts `pitroom-guard` next to `pitroom`: a worker's `git` is that small
/// executable, and it refuses what the guard refuses.
#[test]
fn worker_git_is_the_small_guard_beside_pitroom_and_refuses_commit_and_push() {
    let guard = Path::new(env!("CARGO_BIN_EXE_pitroom-guard"));
    assert_eq!(
        guard.file_name().and_then(|n| n.to_str()),
        Some(pitroom_guard::env::GUARD_EXE),
        "the binary's name is the one install_links looks for"
    );
    assert_eq!(guard.parent(), Path::new(PITROOM).parent());
    let mut env = fake_env(json!([]));
    let git = probe_worker_git(&mut env);
    assert_eq!(Path::new(&git), guard);
}

/// Without `pitroom-guard` beside it (a copied binary), `pitroom` links the worker's `git` to
/// itself and plays the guard's roles as before.
#[test]
fn without_the_small_guard_pitroom_itself_is_the_workers_git_and_refuses() {
    let mut env = fake_env(json!([]));
    let alone = env.dir("alone").join("pitroom");
    if std::fs::hard_link(PITROOM, &alone).is_err() {
        std::fs::copy(PITROOM, &alone).expect("copy pitroom");
    }
    env.bin = alone.clone();
    let git = probe_worker_git(&mut env);
    assert_eq!(Path::new(&git), alone);
}
