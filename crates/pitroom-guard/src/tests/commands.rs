//! Commands that write, and the read-only forms of those that can.

use super::*;
use crate::tables::{ALLOWED, BLOCKED, CONDITIONAL};

#[test]
fn history_writers_are_blocked() {
    check(&[
        ("commit -m wip", BLOCK),
        ("commit --amend --no-edit", BLOCK),
        ("commit-tree HEAD^{tree}", BLOCK),
        ("merge feature", BLOCK),
        ("merge --abort", BLOCK),
        ("rebase -i HEAD~3", BLOCK),
        ("revert HEAD", BLOCK),
        ("cherry-pick abc123", BLOCK),
        ("am 0001.patch", BLOCK),
        ("pull", BLOCK),
        ("pull --rebase origin main", BLOCK),
        ("filter-branch --tree-filter x", BLOCK),
        ("filter-repo --path src", BLOCK),
        ("replay --onto main a..b", BLOCK),
        ("COMMIT -m x", BLOCK),
    ]);
    let got = decide_with(&argv("commit -m x"), &[], &[]);
    assert_eq!(reason_of(&got), Some(HISTORY));
}

#[test]
fn work_tree_and_index_writers_are_blocked() {
    check(&[
        ("reset", BLOCK),
        ("reset --hard HEAD~1", BLOCK),
        ("checkout main", BLOCK),
        ("checkout -- src/lib.rs", BLOCK),
        ("checkout -b topic", BLOCK),
        ("switch -c topic", BLOCK),
        ("restore src/lib.rs", BLOCK),
        ("restore --staged .", BLOCK),
        ("clean -fdx", BLOCK),
        ("clean -f -n", BLOCK),
        ("clean --no-dry-run -n", BLOCK),
        ("rm file", BLOCK),
        ("rm --cached file", BLOCK),
        ("mv a b", BLOCK),
        ("add .", BLOCK),
        ("add -p", BLOCK),
        ("stage file", BLOCK),
        ("update-index --refresh", BLOCK),
        ("read-tree HEAD", BLOCK),
        ("checkout-index -a -f", BLOCK),
        ("mergetool", BLOCK),
        ("gc --prune=now", BLOCK),
        ("prune", BLOCK),
        ("repack -ad", BLOCK),
        ("maintenance run", BLOCK),
        ("init", BLOCK),
        ("init-db", BLOCK),
    ]);
    assert_eq!(
        reason_of(&decide_with(&argv("add ."), &[], &[])),
        Some(INDEX)
    );
    assert_eq!(
        reason_of(&decide_with(&argv("reset --hard"), &[], &[])),
        Some(DISCARD)
    );
}

#[test]
fn clean_is_allowed_as_a_dry_run_only() {
    check(&[
        ("clean -n", ALLOW),
        ("clean --dry-run -d", ALLOW),
        ("clean -ndx", ALLOW),
        ("clean -n -e target", ALLOW),
        ("clean -nd -- src", ALLOW),
        ("clean -d", BLOCK),
        ("clean -ni", BLOCK),
    ]);
}

#[test]
fn ref_writers_and_publishers_are_blocked() {
    check(&[
        ("update-ref refs/heads/x HEAD", BLOCK),
        ("pack-refs --all", BLOCK),
        ("fast-import", BLOCK),
        ("push origin main", BLOCK),
        ("push --dry-run", BLOCK),
        ("send-email 0001.patch", BLOCK),
        ("request-pull v1 origin", BLOCK),
        ("daemon --export-all", BLOCK),
        ("instaweb", BLOCK),
        ("http-backend", BLOCK),
        ("send-pack remote", BLOCK),
        ("credential fill", BLOCK),
        ("credential-store get", BLOCK),
        ("credential-osxkeychain get", BLOCK),
    ]);
    assert_eq!(
        reason_of(&decide_with(&argv("push"), &[], &[])),
        Some(PUBLISHES)
    );
}

#[test]
fn stash_is_blocked_except_list_and_show() {
    check(&[
        ("stash", BLOCK),
        ("stash push -m x", BLOCK),
        ("stash -u", BLOCK),
        ("stash pop", BLOCK),
        ("stash apply", BLOCK),
        ("stash drop", BLOCK),
        ("stash clear", BLOCK),
        ("stash branch b", BLOCK),
        ("stash store abc", BLOCK),
        ("stash create", BLOCK),
        ("stash save wip", BLOCK),
        ("stash list", ALLOW),
        ("stash show -p stash@{0}", ALLOW),
    ]);
}

#[test]
fn branch_lists_but_never_writes() {
    check(&[
        ("branch", ALLOW),
        ("branch -l", ALLOW),
        ("branch --list feat*", ALLOW),
        ("branch -a", ALLOW),
        ("branch -r", ALLOW),
        ("branch -v", ALLOW),
        ("branch -vv", ALLOW),
        ("branch -av", ALLOW),
        ("branch --show-current", ALLOW),
        ("branch --contains HEAD", ALLOW),
        ("branch --contains", ALLOW),
        ("branch --merged", ALLOW),
        ("branch --no-merged main", ALLOW),
        ("branch --points-at HEAD", ALLOW),
        ("branch --format=%(refname:short)", ALLOW),
        ("branch --format %(refname)", ALLOW),
        ("branch --sort=-committerdate", ALLOW),
        ("branch --sort refname", ALLOW),
        ("branch --column", ALLOW),
        ("branch --no-column", ALLOW),
        ("branch --color=always", ALLOW),
        ("branch --no-color", ALLOW),
        ("branch topic", BLOCK),
        ("branch topic main", BLOCK),
        ("branch -v topic", BLOCK),
        ("branch -a topic", BLOCK),
        ("branch --sort=refname topic", BLOCK),
        ("branch -d topic", BLOCK),
        ("branch -D topic", BLOCK),
        ("branch --delete topic", BLOCK),
        ("branch --del topic", BLOCK),
        ("branch -m a b", BLOCK),
        ("branch -M b", BLOCK),
        ("branch --move a b", BLOCK),
        ("branch -c a b", BLOCK),
        ("branch -C a b", BLOCK),
        ("branch --copy a b", BLOCK),
        ("branch -f topic HEAD", BLOCK),
        ("branch --force topic", BLOCK),
        ("branch -u origin/topic", BLOCK),
        ("branch --set-upstream-to=origin/topic", BLOCK),
        ("branch --unset-upstream", BLOCK),
        ("branch --edit-description", BLOCK),
        ("branch -t topic origin/topic", BLOCK),
        ("branch --track topic origin/topic", BLOCK),
        ("branch --no-track topic origin/topic", BLOCK),
        ("branch --list -d topic", BLOCK),
        ("branch --contains -D topic", BLOCK),
        ("branch -- topic", BLOCK),
    ]);
}

#[test]
fn tag_lists_and_verifies_but_never_writes() {
    check(&[
        ("tag", ALLOW),
        ("tag -l", ALLOW),
        ("tag --list v1.*", ALLOW),
        ("tag -l -n3 v*", ALLOW),
        ("tag -n", ALLOW),
        ("tag -v v1.0", ALLOW),
        ("tag --verify v1.0", ALLOW),
        ("tag --contains HEAD", ALLOW),
        ("tag --points-at HEAD", ALLOW),
        ("tag --sort=-v:refname", ALLOW),
        ("tag v1.0", BLOCK),
        ("tag v1.0 HEAD~2", BLOCK),
        ("tag -d v1.0", BLOCK),
        ("tag -a v1.0 -m msg", BLOCK),
        ("tag -s v1.0", BLOCK),
        ("tag -m msg v1.0", BLOCK),
        ("tag -f v1.0", BLOCK),
        ("tag -l -f v1.0", BLOCK),
    ]);
}

#[test]
fn config_reads_but_never_writes() {
    check(&[
        ("config user.name", ALLOW),
        ("config --get user.name", ALLOW),
        ("config --get-all remote.origin.fetch", ALLOW),
        ("config --get-regexp ^alias\\.", ALLOW),
        ("config --get-urlmatch http https://x", ALLOW),
        ("config -l", ALLOW),
        ("config --list --show-origin", ALLOW),
        ("config --global --list", ALLOW),
        ("config -f .gitmodules --get-regexp path", ALLOW),
        ("config --type=bool --get core.bare", ALLOW),
        ("config get user.name", ALLOW),
        ("config list --global", ALLOW),
        ("config user.name Mallory", BLOCK),
        ("config --global user.name Mallory", BLOCK),
        ("config set user.name x", BLOCK),
        ("config unset user.name", BLOCK),
        ("config rename-section a b", BLOCK),
        ("config remove-section a", BLOCK),
        ("config edit", BLOCK),
        ("config -e", BLOCK),
        ("config --edit", BLOCK),
        ("config --add a.b c", BLOCK),
        ("config --unset user.name", BLOCK),
        ("config --unset-all user.name", BLOCK),
        ("config --replace-all a.b c", BLOCK),
        ("config --rename-section a b", BLOCK),
        ("config --remove-section a", BLOCK),
        ("config --list --unset a.b", BLOCK),
    ]);
    assert_eq!(
        reason_of(&decide_with(&argv("config a.b c"), &[], &[])),
        Some(CONFIG)
    );
}

#[test]
fn remote_reads_but_never_writes() {
    check(&[
        ("remote", ALLOW),
        ("remote -v", ALLOW),
        ("remote show origin", ALLOW),
        ("remote -v show origin", ALLOW),
        ("remote get-url origin", ALLOW),
        ("remote add fork https://x", BLOCK),
        ("remote remove origin", BLOCK),
        ("remote rm origin", BLOCK),
        ("remote rename origin upstream", BLOCK),
        ("remote set-url origin https://x", BLOCK),
        ("remote set-head origin -a", BLOCK),
        ("remote set-branches origin main", BLOCK),
        ("remote prune origin", BLOCK),
        ("remote update", BLOCK),
    ]);
}

#[test]
fn reflog_shows_but_never_expires() {
    check(&[
        ("reflog", ALLOW),
        ("reflog show main", ALLOW),
        ("reflog HEAD", ALLOW),
        ("reflog exists refs/heads/main", ALLOW),
        ("reflog list", ALLOW),
        ("reflog expire --expire=now --all", BLOCK),
        ("reflog delete HEAD@{1}", BLOCK),
        ("reflog drop main", BLOCK),
    ]);
}

#[test]
fn notes_worktree_sparse_checkout_and_submodule_read_forms_only() {
    check(&[
        ("notes", ALLOW),
        ("notes list", ALLOW),
        ("notes show HEAD", ALLOW),
        ("notes --ref=review show HEAD", ALLOW),
        ("notes --ref review list", ALLOW),
        ("notes add -m x", BLOCK),
        ("notes append -m x", BLOCK),
        ("notes copy a b", BLOCK),
        ("notes edit", BLOCK),
        ("notes merge other", BLOCK),
        ("notes remove HEAD", BLOCK),
        ("notes prune", BLOCK),
        ("notes --ref review add -m x", BLOCK),
        ("worktree list", ALLOW),
        ("worktree list --porcelain", ALLOW),
        ("worktree add ../x", BLOCK),
        ("worktree remove ../x", BLOCK),
        ("worktree move a b", BLOCK),
        ("worktree prune", BLOCK),
        ("worktree lock x", BLOCK),
        ("worktree unlock x", BLOCK),
        ("worktree repair", BLOCK),
        ("sparse-checkout list", ALLOW),
        ("sparse-checkout set src", BLOCK),
        ("sparse-checkout add docs", BLOCK),
        ("sparse-checkout reapply", BLOCK),
        ("sparse-checkout init --cone", BLOCK),
        ("sparse-checkout disable", BLOCK),
        ("submodule", ALLOW),
        ("submodule status --recursive", ALLOW),
        ("submodule summary", ALLOW),
        ("submodule --quiet status", ALLOW),
        ("submodule update --init", BLOCK),
        ("submodule add https://x sub", BLOCK),
        ("submodule foreach git reset --hard", BLOCK),
        ("submodule deinit sub", BLOCK),
    ]);
}

#[test]
fn apply_is_allowed_unless_it_touches_the_index() {
    check(&[
        ("apply fix.patch", ALLOW),
        ("apply --check fix.patch", ALLOW),
        ("apply --stat fix.patch", ALLOW),
        ("apply --numstat fix.patch", ALLOW),
        ("apply --summary fix.patch", ALLOW),
        ("apply -p1 -R fix.patch", ALLOW),
        ("apply -C3 fix.patch", ALLOW),
        ("apply --index fix.patch", BLOCK),
        ("apply --cached fix.patch", BLOCK),
        ("apply --3way fix.patch", BLOCK),
        ("apply -3 fix.patch", BLOCK),
        ("apply -v3 fix.patch", BLOCK),
        ("apply --ind fix.patch", BLOCK),
        ("apply --cach fix.patch", BLOCK),
        ("apply -N fix.patch", BLOCK),
        ("apply --intent-to-add fix.patch", BLOCK),
    ]);
}

#[test]
fn fetch_is_allowed_as_a_dry_run_only() {
    check(&[
        ("fetch --dry-run", ALLOW),
        ("fetch --dry-run origin main:main", ALLOW),
        ("fetch -v --dry-run --prune origin", ALLOW),
        ("fetch", BLOCK),
        ("fetch origin", BLOCK),
        ("fetch origin main:main", BLOCK),
        ("fetch --prune", BLOCK),
        ("fetch --dry-run --no-dry-run", BLOCK),
        ("fetch --dry-run --no-dry", BLOCK),
        ("fetch --upload-pack --dry-run origin", BLOCK),
        ("fetch --upload --dry-run origin", BLOCK),
        ("fetch --dry-run --set-upstream origin main", BLOCK),
        ("fetch --dry-run --unshallow", BLOCK),
        ("fetch --dry-run -u origin", BLOCK),
    ]);
}

#[test]
fn symbolic_ref_reads_one_name_only() {
    check(&[
        ("symbolic-ref HEAD", ALLOW),
        ("symbolic-ref --short HEAD", ALLOW),
        ("symbolic-ref -q HEAD", ALLOW),
        ("symbolic-ref HEAD refs/heads/x", BLOCK),
        ("symbolic-ref -m why HEAD refs/heads/x", BLOCK),
        ("symbolic-ref -d HEAD", BLOCK),
        ("symbolic-ref --delete HEAD", BLOCK),
    ]);
}

#[test]
fn remaining_conditional_commands_allow_their_read_forms() {
    check(&[
        ("bisect log", ALLOW),
        ("bisect terms", ALLOW),
        ("bisect start", BLOCK),
        ("bisect good", BLOCK),
        ("bisect bad HEAD", BLOCK),
        ("bisect reset", BLOCK),
        ("bisect run make test", BLOCK),
        ("hash-object file", ALLOW),
        ("hash-object -t blob file", ALLOW),
        ("hash-object -tw file", ALLOW),
        ("hash-object -w file", BLOCK),
        ("hash-object --stdin -w", BLOCK),
        ("lfs ls-files", ALLOW),
        ("lfs status", ALLOW),
        ("lfs push origin main", BLOCK),
        ("lfs migrate import", BLOCK),
        ("replace", ALLOW),
        ("replace -l", ALLOW),
        ("replace --list --format=long", ALLOW),
        ("replace abc def", BLOCK),
        ("replace -d abc", BLOCK),
        ("refs verify", ALLOW),
        ("refs migrate --ref-format=reftable", BLOCK),
        ("rerere status", ALLOW),
        ("rerere forget path", BLOCK),
        ("for-each-repo --config=maintenance.repo log -1", ALLOW),
        ("for-each-repo --config=maintenance.repo gc", BLOCK),
        (
            "for-each-repo --config maintenance.repo -- commit -m x",
            BLOCK,
        ),
        ("shell -c git-receive-pack", BLOCK),
    ]);
}

#[test]
fn every_blocked_command_is_blocked_with_any_arguments() {
    for (name, reason) in BLOCKED {
        for tail in ["", " --dry-run", " -n", " list"] {
            let got = decide_with(&argv(&format!("{name}{tail}")), &[], &[]);
            assert_eq!(reason_of(&got), Some(*reason), "git {name}{tail}");
        }
    }
}

#[test]
fn every_table_command_is_known() {
    let guard = Guard::new(&[]);
    let frame = Frame {
        depth: 0,
        top_level: true,
        hypothetical: false,
    };
    let aliases = Aliases::default();
    for name in BLOCKED
        .iter()
        .map(|(n, _)| *n)
        .chain(CONDITIONAL.iter().copied())
        .chain(ALLOWED.iter().copied())
    {
        assert!(
            guard
                .rule(
                    name,
                    &[],
                    EvalCtx {
                        aliases: &aliases,
                        frame
                    }
                )
                .is_some(),
            "{name} has no rule"
        );
    }
    for name in ALLOWED {
        assert_eq!(
            decide_with(&argv(name), &[], &[]),
            Decision::Allow,
            "git {name}"
        );
    }
}
