//! Property tests: over generated repositories with random dirty states, an isolated copy edited
//! at random (edits, additions, deletions, renames, mode changes, binary files, symlinks) yields
//! a patch that `apply` lands exactly; and an apply that conflicts changes no byte.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use pitroom_git::{apply_patch, build_copy, diff_trees, snapshot, ApplyCheck, Direction, Repo};
use pitroom_testkit::repo::fingerprint;
use proptest::prelude::*;

/// Fuzzing `apply_patch` with mutated and arbitrary patch text.
mod fuzz_patch;

const NAMES: &[&str] = &[
    "a.txt",
    "dir/b c.txt",
    "déjà/vu.md",
    "bin.dat",
    "crlf.txt",
    "empty",
    "deep/x/y/z.rs",
    "run.sh",
];

#[derive(Debug, Clone)]
enum Content {
    Lines(Vec<String>),
    Crlf(Vec<String>),
    Binary(Vec<u8>),
    Empty,
}

impl Content {
    fn bytes(&self) -> Vec<u8> {
        match self {
            Content::Lines(l) => l
                .iter()
                .map(|s| format!("{s}\n"))
                .collect::<String>()
                .into_bytes(),
            Content::Crlf(l) => l
                .iter()
                .map(|s| format!("{s}\r\n"))
                .collect::<String>()
                .into_bytes(),
            Content::Binary(b) => {
                let mut v = vec![0u8];
                v.extend(b);
                v
            }
            Content::Empty => Vec::new(),
        }
    }
}

#[derive(Debug, Clone)]
enum Op {
    Write(usize, Content),
    Delete(usize),
    Rename(usize, usize),
    Chmod(usize),
    Symlink(usize, usize),
}

fn content() -> impl Strategy<Value = Content> {
    let line = "[a-z ]{0,12}";
    prop_oneof![
        prop::collection::vec(line, 1..6).prop_map(Content::Lines),
        prop::collection::vec(line, 1..4).prop_map(Content::Crlf),
        prop::collection::vec(any::<u8>(), 1..24).prop_map(Content::Binary),
        Just(Content::Empty),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let n = NAMES.len();
    prop_oneof![
        3 => (0..n, content()).prop_map(|(i, c)| Op::Write(i, c)),
        1 => (0..n).prop_map(Op::Delete),
        1 => (0..n, 0..n).prop_map(|(a, b)| Op::Rename(a, b)),
        1 => (0..n).prop_map(Op::Chmod),
        1 => (0..n, 0..n).prop_map(|(a, b)| Op::Symlink(a, b)),
    ]
}

/// The path of `NAMES[i]` in `root`, with a suffix so renames land on fresh names.
fn path(root: &Path, i: usize, renamed: bool) -> std::path::PathBuf {
    let name = NAMES[i];
    if renamed {
        root.join(format!("moved/{name}"))
    } else {
        root.join(name)
    }
}

fn perform(root: &Path, op: &Op) {
    let is_file = |p: &Path| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file());
    match op {
        Op::Write(i, c) => {
            let p = path(root, *i, false);
            if std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_dir()) {
                return;
            }
            let _ = std::fs::remove_file(&p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, c.bytes()).unwrap();
        }
        Op::Delete(i) => {
            let _ = std::fs::remove_file(path(root, *i, false));
        }
        Op::Rename(a, b) => {
            let (from, to) = (path(root, *a, false), path(root, *b, true));
            if is_file(&from) && std::fs::symlink_metadata(&to).is_err() {
                std::fs::create_dir_all(to.parent().unwrap()).unwrap();
                std::fs::rename(from, to).unwrap();
            }
        }
        Op::Chmod(i) => {
            let p = path(root, *i, false);
            if is_file(&p) {
                let mode = std::fs::metadata(&p).unwrap().permissions().mode();
                let flipped = if mode & 0o100 != 0 { 0o644 } else { 0o755 };
                std::fs::set_permissions(p, std::fs::Permissions::from_mode(flipped)).unwrap();
            }
        }
        Op::Symlink(a, b) => {
            let link = path(root, *a, false).with_extension("link");
            if std::fs::symlink_metadata(&link).is_err() {
                std::fs::create_dir_all(link.parent().unwrap()).unwrap();
                let _ = std::os::unix::fs::symlink(NAMES[*b], link);
            }
        }
    }
}

fn git(dir: &Path, args: &[&str]) -> String {
    pitroom_testkit::repo::git_ok(dir, args)
}

/// A repository with `initial` committed and `dirty` applied on top, the worker's copy of its
/// current state with `edits` applied, and the patch between them.
struct Scenario {
    _tmp: tempfile::TempDir,
    repo: Repo,
    copy: std::path::PathBuf,
    patch: std::path::PathBuf,
    changed: Vec<(char, String)>,
}

fn scenario(initial: &[(usize, Content)], dirty: &[Op], edits: &[Op]) -> Scenario {
    let tmp = tempfile::tempdir().unwrap();
    let top = tmp.path().join("repo");
    std::fs::create_dir_all(&top).unwrap();
    git(&top, &["init", "-q"]);
    for (i, c) in initial {
        perform(&top, &Op::Write(*i, c.clone()));
    }
    std::fs::write(top.join("keep"), "keep\n").unwrap();
    git(&top, &["add", "-A"]);
    git(&top, &["commit", "-qm", "initial"]);
    for op in dirty {
        perform(&top, op);
    }
    let repo = Repo::discover(&top).unwrap().unwrap();
    let base = snapshot(
        &repo.git_dir,
        &top,
        &repo.index,
        &tmp.path().join("base.index"),
    )
    .unwrap();
    let copy = tmp.path().join("copy");
    build_copy(&repo, &base.tree, &copy).unwrap();
    for op in edits {
        perform(&copy, op);
    }
    let after = snapshot(
        &copy.join(".git"),
        &copy,
        &copy.join(".git/index"),
        &tmp.path().join("after.index"),
    )
    .unwrap();
    let changes = diff_trees(&copy.join(".git"), &base.tree, &after.tree, true).unwrap();
    let patch = tmp.path().join("changes.patch");
    std::fs::write(&patch, &changes.patch).unwrap();
    let changed = changes
        .files
        .iter()
        .map(|f| (f.status.letter(), f.path.clone()))
        .collect();
    Scenario {
        _tmp: tmp,
        repo,
        copy,
        patch,
        changed,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn apply_lands_exactly_the_copys_state(
        initial in prop::collection::vec((0..NAMES.len(), content()), 1..6),
        dirty in prop::collection::vec(op(), 0..4),
        edits in prop::collection::vec(op(), 1..7),
    ) {
        let s = scenario(&initial, &dirty, &edits);
        prop_assume!(!s.changed.is_empty(), "edits that change nothing leave no patch");
        let expected = fingerprint(&s.copy);
        let result = apply_patch(&s.repo.toplevel, &s.patch, Direction::Forward, false).unwrap();
        prop_assert_eq!(result, ApplyCheck::Clean);
        prop_assert_eq!(fingerprint(&s.repo.toplevel), expected);
    }

    #[test]
    fn a_conflicting_apply_changes_no_byte(
        initial in prop::collection::vec((0..NAMES.len(), content()), 1..6),
        edits in prop::collection::vec(op(), 1..7),
        which in any::<prop::sample::Index>(),
    ) {
        let s = scenario(&initial, &[], &edits);
        // Files whose content the patch needs (a mode-only change applies to any content).
        let patch = String::from_utf8_lossy(&std::fs::read(&s.patch).unwrap()).into_owned();
        let needs_content = |p: &str| {
            patch.split("diff --git ").any(|section| {
                section.starts_with(&format!("a/{p} b/")) && section.contains("\nindex ")
                    && !section.contains("\nnew file mode")
            })
        };
        let touched: Vec<&String> = s
            .changed
            .iter()
            .filter(|(_, p)| s.repo.toplevel.join(p).is_file() && needs_content(p))
            .map(|(_, p)| p)
            .collect();
        prop_assume!(!touched.is_empty());
        // The user rewrites a file the patch needs, after the snapshot.
        let victim = s.repo.toplevel.join(which.get(&touched));
        std::fs::write(&victim, b"the user rewrote this meanwhile\n").unwrap();
        let before = fingerprint(&s.repo.toplevel);
        let result = apply_patch(&s.repo.toplevel, &s.patch, Direction::Forward, false).unwrap();
        prop_assert!(matches!(result, ApplyCheck::Conflict { .. }), "{:?}", result);
        prop_assert_eq!(fingerprint(&s.repo.toplevel), before);
    }
}
