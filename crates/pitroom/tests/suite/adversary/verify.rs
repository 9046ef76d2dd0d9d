//! Class 2: `--verify` runs the worker's code (a test that imports what the worker wrote), so
//! it runs confined like the worker: no commit, no branch, no write outside the tree it
//! checks, nothing in HOME — and what it changes in the tree is recorded.

use super::{attack_env, users};

/// A check script a worker leaves for `--verify` to run: it attacks, then "passes".
fn planted_check(repo: &std::path::Path) -> String {
    let script = format!(
        "#!/bin/sh\n\
         /usr/bin/git -c core.hooksPath=/dev/null commit -qam owned 2>&1\n\
         /usr/bin/git branch evil 2>&1\n\
         echo x > .git/owned 2>&1\n\
         echo x > \"$HOME/owned.txt\" 2>&1\n\
         echo x > '{}/owned-from-verify.txt' 2>&1\n\
         echo changed-by-verify > verify-made.txt\n\
         exit 0\n",
        repo.display()
    );
    format!("printf '%s' '{}' > check.sh", script.replace('\'', "'\\''"))
}

#[test]
fn verify_cannot_commit_branch_or_write_outside_the_tree_it_checks() {
    for user in users() {
        for mode in ["-w", "-i"] {
            let mut a = attack_env(user, serde_json::json!([]));
            a.script(&[planted_check(&a.repo)]);
            let before = a.git_state();
            let (code, out) = a.run(&[mode, "--verify", "sh check.sh", "write a check"]);
            assert_eq!(code, 0, "{} {mode}: {out}", a.who());

            assert_eq!(a.git_state(), before, "{} {mode}: git untouched", a.who());
            assert!(!a.env.home.join("owned.txt").exists(), "{} {mode}", a.who());
            let r = a.record();
            assert_eq!(
                r["safety"]["verify_sandbox"]["landlock"],
                "enforced",
                "{} {mode}: {r:#}",
                a.who()
            );
            let changes = crate::suite::common::changed(&r);
            assert!(
                changes.contains(&"verify-made.txt"),
                "{} {mode}: what the check changed is in the patch: {changes:?}",
                a.who()
            );
            if mode == "-i" {
                assert!(
                    !a.repo.join("owned-from-verify.txt").exists(),
                    "{}: an isolated run's check cannot write the user's tree",
                    a.who()
                );
            }
        }
    }
}
