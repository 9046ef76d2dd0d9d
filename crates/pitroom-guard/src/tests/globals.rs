//! Reading commands, global options and help forms.

use super::*;

#[test]
fn read_commands_pass_through() {
    check(&[
        ("status", ALLOW),
        ("status --porcelain=v2", ALLOW),
        ("log --oneline -n 5", ALLOW),
        ("show HEAD:src/main.rs", ALLOW),
        ("diff --cached", ALLOW),
        ("grep -n foo", ALLOW),
        ("blame src/lib.rs", ALLOW),
        ("ls-files -z", ALLOW),
        ("ls-tree -r HEAD", ALLOW),
        ("rev-parse --show-toplevel", ALLOW),
        ("rev-list --count HEAD", ALLOW),
        ("cat-file -p HEAD", ALLOW),
        ("describe --tags", ALLOW),
        ("shortlog -sn", ALLOW),
        ("whatchanged", ALLOW),
        ("cherry -v main", ALLOW),
        ("range-diff a...b", ALLOW),
        ("merge-base HEAD main", ALLOW),
        ("name-rev HEAD", ALLOW),
        ("for-each-ref refs/heads", ALLOW),
        ("show-ref --heads", ALLOW),
        ("check-ignore -v target", ALLOW),
        ("check-attr -a file", ALLOW),
        ("count-objects -v", ALLOW),
        ("fsck", ALLOW),
        ("var GIT_EDITOR", ALLOW),
        ("format-patch -1 -o /tmp/p", ALLOW),
        ("diff-tree -r HEAD", ALLOW),
        ("diff-files", ALLOW),
        ("diff-index HEAD", ALLOW),
        ("ls-remote origin", ALLOW),
        ("write-tree", ALLOW),
        ("commit-graph write", ALLOW),
        ("mktree", ALLOW),
        ("mktag", ALLOW),
        ("archive HEAD -o /tmp/a.tar", ALLOW),
        ("clone https://example.com/r.git /tmp/r", ALLOW),
        ("merge-tree --write-tree a b", ALLOW),
        ("version", ALLOW),
        ("help", ALLOW),
        ("frobnicate --all", ALLOW),
    ]);
}

#[test]
fn no_subcommand_is_allowed() {
    check(&[
        ("", ALLOW),
        ("--no-pager", ALLOW),
        ("-C dir", ALLOW),
        ("-c user.name=x", ALLOW),
    ]);
}

#[test]
fn global_options_are_walked_before_the_subcommand() {
    check(&[
        ("-C dir -c x=y --git-dir=.git commit -m wip", BLOCK),
        ("-C dir -c x=y --git-dir=.git status", ALLOW),
        ("--git-dir .git --work-tree . commit", BLOCK),
        ("--git-dir .git --work-tree . log", ALLOW),
        ("--work-tree=. --namespace ns push", BLOCK),
        ("--namespace=ns log", ALLOW),
        ("-p log", ALLOW),
        ("--paginate reset --hard", BLOCK),
        ("-P commit", BLOCK),
        ("--no-pager diff", ALLOW),
        (
            "--bare --no-replace-objects --no-lazy-fetch --literal-pathspecs --glob-pathspecs \
             --noglob-pathspecs --icase-pathspecs --no-optional-locks --no-advice rebase main",
            BLOCK,
        ),
        (
            "--bare --no-replace-objects --no-lazy-fetch --literal-pathspecs --glob-pathspecs \
             --noglob-pathspecs --icase-pathspecs --no-optional-locks --no-advice log",
            ALLOW,
        ),
        ("--exec-path=/opt/git commit", BLOCK),
        ("--exec-path=/opt/git status", ALLOW),
        ("--super-prefix=sub/ commit", BLOCK),
        ("--super-prefix sub/ commit", BLOCK),
        ("--attr-source HEAD add .", BLOCK),
        ("--attr-source=HEAD diff", ALLOW),
        ("--shallow-file f reset", BLOCK),
        ("--list-cmds main commit", BLOCK),
        ("--config-env=core.editor=EDITOR commit", BLOCK),
        ("--config-env core.editor=EDITOR status", ALLOW),
        ("-C commit status", ALLOW),
        ("-c commit status", ALLOW),
        ("--git-dir commit log", ALLOW),
    ]);
}

#[test]
fn options_that_make_git_exit_allow_the_call() {
    check(&[
        ("--exec-path", ALLOW),
        ("--exec-path commit", ALLOW),
        ("--html-path", ALLOW),
        ("--man-path commit", ALLOW),
        ("--info-path", ALLOW),
        ("--list-cmds=main,others", ALLOW),
    ]);
}

#[test]
fn unrecognised_global_options_are_blocked() {
    check(&[
        ("--frobnicate commit", BLOCK),
        ("--frobnicate status", BLOCK),
        ("-cuser.name=x commit", BLOCK),
        ("- status", BLOCK),
    ]);
    let got = decide_with(&argv("--frobnicate status"), &[], &[]);
    assert_eq!(reason_of(&got), Some(UNKNOWN_OPTION));
}

#[test]
fn help_forms_of_blocked_commands_are_allowed() {
    check(&[
        ("commit --help", ALLOW),
        ("help commit", ALLOW),
        ("commit -h", ALLOW),
        ("push --help", ALLOW),
        ("reset -h", ALLOW),
        ("--help commit", ALLOW),
        ("-h", ALLOW),
        ("--help", ALLOW),
        ("--version", ALLOW),
        ("-v commit", ALLOW),
        ("-c x=y --version", ALLOW),
        ("-C dir rebase --help", ALLOW),
        ("branch -h", ALLOW),
        ("stash -h", ALLOW),
        // -h among other arguments is not the help form.
        ("commit -m -h", BLOCK),
        ("commit -h -m x", BLOCK),
    ]);
}
