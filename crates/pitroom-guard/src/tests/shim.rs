//! The shim's argv model: repository targeting, the subcommand, aliases and the real git.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use super::*;
use crate::shim::{
    find_git_dir, find_on_path, hook_git_dir, is_builtin, is_protected, needs_user_aliases,
    parse_alias_listing, real_git, subcommand, target, DotGit, Target, BUILTIN,
};

fn at(args: &str, cwd: &str) -> Target {
    target(&argv(args), Path::new(cwd), None)
}

fn at_env(args: &str, cwd: &str, git_dir: &str) -> Target {
    target(&argv(args), Path::new(cwd), Some(OsStr::new(git_dir)))
}

fn git_dir(p: &str) -> Target {
    Target::GitDir(p.into())
}

fn discover(p: &str) -> Target {
    Target::Discover(p.into())
}

/// A file system with `.git` directories at `dirs` and `.git` files (path, text) at `files`.
fn probe<'a>(
    dirs: &'a [&'a str],
    files: &'a [(&'a str, &'a str)],
) -> impl FnMut(&Path) -> DotGit + 'a {
    move |dot: &Path| {
        let dir = dot.parent().and_then(Path::to_str).unwrap_or_default();
        if dirs.contains(&dir) {
            DotGit::Dir
        } else if let Some((_, text)) = files.iter().find(|(d, _)| *d == dir) {
            DotGit::File(text.to_string())
        } else {
            DotGit::Missing
        }
    }
}

#[test]
fn a_plain_call_discovers_from_the_working_directory() {
    assert_eq!(at("status", "/p/src"), discover("/p/src"));
    assert_eq!(at("", "/p"), discover("/p"));
    assert_eq!(at("--no-pager log -n 1", "/p"), discover("/p"));
}

#[test]
fn dash_c_moves_the_working_directory() {
    assert_eq!(at("-C sub status", "/p"), discover("/p/sub"));
    assert_eq!(at("-C a -C b status", "/p"), discover("/p/a/b"));
    assert_eq!(at("-C ../other log", "/p"), discover("/p/../other"));
    // A path outside the project: judged where it points, not where the worker is.
    assert_eq!(
        at("-C /elsewhere reset --hard", "/p"),
        discover("/elsewhere")
    );
    assert_eq!(
        at("-C /elsewhere -C repo commit", "/p"),
        discover("/elsewhere/repo")
    );
    // A trailing -C has no directory to move to.
    assert_eq!(at("-C", "/p"), discover("/p"));
}

#[test]
fn git_dir_in_argv_or_the_environment_is_explicit() {
    assert_eq!(at("--git-dir=/r/.git log", "/p"), git_dir("/r/.git"));
    assert_eq!(at("--git-dir /r/.git log", "/p"), git_dir("/r/.git"));
    assert_eq!(at("--git-dir=.git log", "/p"), git_dir("/p/.git"));
    // Relative to the directory after every -C, whatever the order.
    assert_eq!(
        at("--git-dir=x.git -C sub log", "/p"),
        git_dir("/p/sub/x.git")
    );
    assert_eq!(
        at("-C sub --git-dir x.git log", "/p"),
        git_dir("/p/sub/x.git")
    );
    assert_eq!(at_env("log", "/p", "/r/.git"), git_dir("/r/.git"));
    assert_eq!(at_env("-C sub log", "/p", "g.git"), git_dir("/p/sub/g.git"));
    // argv wins over the environment, the last --git-dir over earlier ones.
    assert_eq!(at_env("--git-dir=/a log", "/p", "/r/.git"), git_dir("/a"));
    assert_eq!(at("--git-dir=/a --git-dir /b log", "/p"), git_dir("/b"));
    // A trailing --git-dir clears it, as the shim always did.
    assert_eq!(at_env("--git-dir", "/p", "/r/.git"), discover("/p"));
}

#[test]
fn values_of_other_global_options_are_not_the_subcommand() {
    assert_eq!(at("--work-tree /w status", "/p"), discover("/p"));
    assert_eq!(at("--work-tree=/w status", "/p"), discover("/p"));
    assert_eq!(at("-c core.x=1 -C sub status", "/p"), discover("/p/sub"));
    assert_eq!(
        at("--namespace ns --config-env a=B -C s log", "/p"),
        discover("/p/s")
    );
    assert_eq!(
        at(
            "--attr-source HEAD --shallow-file f --super-prefix x -C s log",
            "/p"
        ),
        discover("/p/s")
    );
    // After the subcommand, -C and --git-dir belong to it.
    assert_eq!(at("log -C x --git-dir=/y", "/p"), discover("/p"));
}

#[test]
fn init_is_judged_by_where_the_repository_goes() {
    assert_eq!(at("init", "/p"), discover("/p"));
    assert_eq!(at("init new", "/p"), discover("/p/new"));
    assert_eq!(at("init -q --bare /tmp/x", "/p"), discover("/tmp/x"));
    assert_eq!(at("-C sub init new", "/p"), discover("/p/sub/new"));
    // An explicit git dir wins.
    assert_eq!(at("--git-dir=/g init new", "/p"), git_dir("/g"));
    assert_eq!(at_env("init new", "/p", "/g"), git_dir("/g"));
}

#[test]
fn discovery_finds_the_nearest_repository() {
    let dirs = ["/p", "/p/vendor/lib"];
    assert_eq!(
        find_git_dir(Path::new("/p/src/deep"), probe(&dirs, &[])),
        Some("/p/.git".into())
    );
    // A repository nested inside the project is its own.
    assert_eq!(
        find_git_dir(Path::new("/p/vendor/lib/src"), probe(&dirs, &[])),
        Some("/p/vendor/lib/.git".into())
    );
    assert_eq!(
        find_git_dir(Path::new("/p"), probe(&dirs, &[])),
        Some("/p/.git".into())
    );
    // Outside every repository.
    assert_eq!(
        find_git_dir(Path::new("/elsewhere/x"), probe(&dirs, &[])),
        None
    );
}

#[test]
fn discovery_follows_gitdir_files() {
    let files = [
        ("/wt", "gitdir: /p/.git/worktrees/wt\n"),
        ("/p/sub", "gitdir: ../.git/modules/sub"),
        ("/odd", "not a pointer"),
    ];
    let dirs = ["/p"];
    assert_eq!(
        find_git_dir(Path::new("/wt/src"), probe(&dirs, &files)),
        Some("/p/.git/worktrees/wt".into())
    );
    // A submodule's relative pointer is relative to its directory, and wins over the
    // superproject around it.
    assert_eq!(
        find_git_dir(Path::new("/p/sub/x"), probe(&dirs, &files)),
        Some("/p/sub/../.git/modules/sub".into())
    );
    // A .git file that is no pointer ends the search.
    assert_eq!(
        find_git_dir(Path::new("/odd/a"), probe(&dirs, &files)),
        None
    );
}

#[test]
fn the_hook_guards_git_dir_else_the_discovered_repository_else_cwd() {
    let dirs = ["/p"];
    let cwd = Path::new("/p/src");
    assert_eq!(
        hook_git_dir(cwd, Some(OsStr::new("/r/.git")), probe(&dirs, &[])),
        PathBuf::from("/r/.git")
    );
    assert_eq!(
        hook_git_dir(cwd, Some(OsStr::new(".git")), probe(&dirs, &[])),
        PathBuf::from("/p/src/.git")
    );
    assert_eq!(
        hook_git_dir(cwd, None, probe(&dirs, &[])),
        PathBuf::from("/p/.git")
    );
    assert_eq!(
        hook_git_dir(Path::new("/x"), None, probe(&dirs, &[])),
        PathBuf::from("/x")
    );
}

#[test]
fn protection_defaults_to_everything() {
    let list: Vec<PathBuf> = vec!["/p/.git".into(), "/copy/.git".into()];
    assert!(is_protected(None, None));
    assert!(is_protected(None, Some(Path::new("/anything/.git"))));
    assert!(is_protected(Some(&list), Some(Path::new("/copy/.git"))));
    assert!(!is_protected(Some(&list), Some(Path::new("/other/.git"))));
    assert!(!is_protected(Some(&list), None));
    assert!(!is_protected(Some(&[]), Some(Path::new("/p/.git"))));
}

#[test]
fn the_subcommand_skips_global_options_and_their_values() {
    let sub = |line: &str| subcommand(&argv(line)).map(str::to_string);
    assert_eq!(sub("status -s"), Some("status".into()));
    assert_eq!(
        sub("-C dir -c a=b --git-dir g --work-tree w ci -m x"),
        Some("ci".into())
    );
    assert_eq!(
        sub("--namespace n --config-env a=B --attr-source s --shallow-file f --super-prefix p st"),
        Some("st".into())
    );
    assert_eq!(sub("--git-dir=g --no-pager -p lg"), Some("lg".into()));
    assert_eq!(sub("-C"), None);
    assert_eq!(sub("-c"), None);
    assert_eq!(sub("--git-dir"), None);
    assert_eq!(sub(""), None);
    // Options that print and exit, and options git does not know, run no subcommand.
    assert_eq!(sub("--exec-path log"), None);
    assert_eq!(sub("--list-cmds=main"), None);
    assert_eq!(sub("--frobnicate ci"), None);
    // The legacy spellings of help and version.
    assert_eq!(sub("--version"), Some("version".into()));
    assert_eq!(sub("-h commit"), Some("help".into()));
    assert_eq!(sub("--exec-path=/x -v"), Some("version".into()));
}

#[test]
fn only_words_that_are_not_gits_own_need_the_users_aliases() {
    assert!(is_builtin(None));
    assert!(is_builtin(Some("commit")));
    assert!(!is_builtin(Some("ci")));
    assert!(!needs_user_aliases(&argv("-C x commit -m y")));
    assert!(!needs_user_aliases(&argv("--version")));
    assert!(!needs_user_aliases(&argv("--help ci")));
    assert!(!needs_user_aliases(&argv("--frobnicate ci")));
    assert!(needs_user_aliases(&argv("-c a=b ci -m y")));
    assert!(needs_user_aliases(&argv("lfs ls-files")));
}

#[test]
fn every_builtin_is_one_the_guard_knows() {
    use crate::tables::{ALLOWED, BLOCKED, CONDITIONAL};
    let known = |w: &str| {
        BLOCKED.iter().any(|(b, _)| *b == w) || CONDITIONAL.contains(&w) || ALLOWED.contains(&w)
    };
    let unknown: Vec<&str> = BUILTIN.iter().copied().filter(|w| !known(w)).collect();
    assert!(unknown.is_empty(), "{unknown:?}");
}

#[test]
fn alias_listing_lines_become_name_value_pairs() {
    assert_eq!(
        parse_alias_listing("alias.ci commit -v\nalias.st status\nalias.empty\ncore.x y\n"),
        strings(&[("ci", "commit -v"), ("st", "status"), ("empty", "")])
    );
    assert_eq!(parse_alias_listing(""), Vec::<(String, String)>::new());
}

#[test]
fn the_real_git_is_the_variable_else_the_first_other_git_on_path() {
    let path = OsStr::new("/shim:/usr/local/bin:/usr/bin");
    let not_shim = |c: &PathBuf| c.parent() != Some(Path::new("/shim"));
    assert_eq!(
        real_git(Some(OsStr::new("/opt/git")), path, not_shim),
        Some("/opt/git".into())
    );
    assert_eq!(
        real_git(Some(OsStr::new("")), path, not_shim),
        Some("/usr/local/bin/git".into())
    );
    assert_eq!(
        real_git(None, path, not_shim),
        Some("/usr/local/bin/git".into())
    );
    assert_eq!(real_git(None, OsStr::new("/shim"), not_shim), None);
    assert_eq!(
        find_on_path(path, "sudo", |c| c.starts_with("/usr/bin")),
        Some("/usr/bin/sudo".into())
    );
}
