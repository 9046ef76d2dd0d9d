//! Fuzzing the patch applier (issue 16, item 7) through its public API: `apply_patch` over
//! mutations of real patches from `diff_trees` (torn at any byte, lines dropped, repeated or
//! swapped, hunk headers with huge or zero numbers, paths leading out of the tree, flipped and
//! non-UTF-8 bytes) and over arbitrary bytes. Whatever the text, the answer is typed (clean, a
//! conflict, or a `GitError`), never a panic; a check or a conflict writes nothing; and nothing
//! outside the work tree, nor the index, is ever touched.
//!
//! Cases default to a few dozen (each runs `git apply`); `PROPTEST_CASES` raises them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use pitroom_git::{apply_patch, diff_trees, snapshot, ApplyCheck, Direction, Repo};
use pitroom_testkit::repo::{fingerprint, git_ok, write};
use proptest::prelude::*;
use proptest::test_runner::Config as ProptestConfig;

/// `cases` unless `PROPTEST_CASES` says otherwise.
fn config(cases: u32) -> ProptestConfig {
    let mut config = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = cases;
    }
    config
}

/// A committed repository to copy per case, and real patches against it.
struct Corpus {
    _tmp: tempfile::TempDir,
    template: PathBuf,
    patches: Vec<Vec<u8>>,
    lines: Vec<Vec<u8>>,
}

fn files(top: &Path) {
    write(
        top,
        "calc.py",
        "def add(a, b):\n    return a + b\n\n\ndef divide(a, b):\n    return a / b\n",
    );
    write(top, "README.md", "# demo\n");
    write(top, "src/lib.rs", "pub fn answer() -> u32 {\n    42\n}\n");
    write(top, "dir/b c.txt", "spaces\n");
    write(top, "déjà/vu.md", "non-ASCII path\n");
    std::fs::write(top.join("crlf.txt"), b"one\r\ntwo\r\n").unwrap();
    std::fs::write(top.join("blob.bin"), [0u8, 159, 146, 150, 0, 1, 2, 255]).unwrap();
    write(top, "run.sh", "#!/bin/sh\necho hi\n");
    std::os::unix::fs::symlink("calc.py", top.join("link.py")).unwrap();
}

/// Edits a copy the way a worker might; each set gives one seed patch.
fn edit(top: &Path, set: usize) {
    use std::os::unix::fs::PermissionsExt;
    match set {
        0 => write(top, "calc.py", "def add(a, b):\n    return a + b\n\n\ndef divide(a, b):\n    if b == 0:\n        raise ZeroDivisionError\n    return a / b\n"),
        1 => {
            write(top, "src/new é.rs", "pub fn new() {}\n");
            std::fs::remove_file(top.join("README.md")).unwrap();
        }
        2 => {
            std::fs::rename(top.join("dir/b c.txt"), top.join("moved.txt")).unwrap();
            std::fs::set_permissions(top.join("run.sh"), std::fs::Permissions::from_mode(0o644))
                .unwrap();
        }
        3 => {
            std::fs::write(top.join("blob.bin"), [1u8, 0, 2, 0, 255, 254, 7]).unwrap();
            std::fs::write(top.join("crlf.txt"), b"one\r\ntwo\r\nthree").unwrap();
        }
        _ => {
            std::fs::remove_file(top.join("link.py")).unwrap();
            std::os::unix::fs::symlink("src/lib.rs", top.join("link.py")).unwrap();
            write(top, "déjà/vu.md", "");
        }
    }
}

fn copy_tree(from: &Path, to: &Path) {
    let out = std::process::Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .output()
        .unwrap();
    assert!(out.status.success(), "cp -a: {out:?}");
}

static CORPUS: LazyLock<Corpus> = LazyLock::new(|| {
    let tmp = tempfile::tempdir().unwrap();
    let template = tmp.path().join("template");
    std::fs::create_dir_all(&template).unwrap();
    git_ok(&template, &["init", "-q", "--template="]);
    files(&template);
    git_ok(&template, &["add", "-A"]);
    git_ok(&template, &["commit", "-qm", "initial"]);
    let mut patches = Vec::new();
    for set in 0..5 {
        let top = tmp.path().join(format!("seed{set}"));
        copy_tree(&template, &top);
        let repo = Repo::discover(&top).unwrap().unwrap();
        let index = |name: &str| tmp.path().join(format!("{name}{set}.index"));
        let base = snapshot(&repo.git_dir, &top, &repo.index, &index("base")).unwrap();
        edit(&top, set);
        let after = snapshot(&repo.git_dir, &top, &repo.index, &index("after")).unwrap();
        let changes = diff_trees(&repo.git_dir, &base.tree, &after.tree, true).unwrap();
        assert!(!changes.patch.is_empty(), "seed {set} changes something");
        patches.push(changes.patch);
    }
    let lines = patches
        .iter()
        .flat_map(|p| p.split_inclusive(|b| *b == b'\n').map(<[u8]>::to_vec))
        .collect();
    Corpus {
        _tmp: tmp,
        template,
        patches,
        lines,
    }
});

/// A work tree's files and its index.
type State = (BTreeMap<String, (Vec<u8>, u32)>, Option<Vec<u8>>);

fn state_of(top: &Path) -> State {
    (fingerprint(top), std::fs::read(top.join(".git/index")).ok())
}

/// The template's state, which each case starts from.
static PRISTINE: LazyLock<State> = LazyLock::new(|| state_of(&CORPUS.template));

/// A patch line that asks for something odd.
fn odd_line() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => prop::sample::select(vec![
            "@@ -1,99999999999999999999 +1 @@\n",
            "@@ -0,0 +0,0 @@\n",
            "@@ -4294967296,1 +1,1 @@\n",
            "@@ -18446744073709551616 +18446744073709551616 @@\n",
            "@@ -3,2 +1,0 @@\n",
            "@@ -1 +1 @@\n",
            "diff --git a/../outside.txt b/../outside.txt\n",
            "diff --git a//tmp/abs b//tmp/abs\n",
            "diff --git a/.git/config b/.git/config\n",
            "--- a/../outside.txt\n",
            "+++ b/../outside.txt\n",
            "+++ /dev/null\n",
            "--- /dev/null\n",
            "new file mode 100755\n",
            "new file mode 120000\n",
            "deleted file mode 100644\n",
            "old mode 777777777777\n",
            "rename from ../outside.txt\n",
            "rename to link.py/x\n",
            "copy from calc.py\n",
            "similarity index 200%\n",
            "index 0000000000000000000000000000000000000000..ffffffffffffffffffffffffffffffffffffffff 100644\n",
            "GIT binary patch\n",
            "literal 99999999999999999999\n",
            "delta 5\n",
            "zcmV?d00001\n",
            "\\ No newline at end of file\n",
            "Binary files a/blob.bin and b/blob.bin differ\n",
            "+\n",
            "-\n",
            " \n",
            "\n",
        ])
        .prop_map(|s| s.as_bytes().to_vec()),
        1 => prop::collection::vec(any::<u8>(), 0..40),
    ]
}

#[derive(Debug, Clone)]
enum Mutation {
    Truncate(prop::sample::Index),
    DropLine(prop::sample::Index),
    RepeatLine(prop::sample::Index),
    SwapLines(prop::sample::Index, prop::sample::Index),
    /// Put a recorded line (of any seed) or an odd one at a position.
    Insert(prop::sample::Index, Vec<u8>),
    Replace(prop::sample::Index, Vec<u8>),
    FlipByte(prop::sample::Index, u8),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let idx = any::<prop::sample::Index>;
    let line = || {
        prop_oneof![
            (0..CORPUS.lines.len()).prop_map(|i| CORPUS.lines[i].clone()),
            odd_line(),
        ]
    };
    prop_oneof![
        1 => idx().prop_map(Mutation::Truncate),
        1 => idx().prop_map(Mutation::DropLine),
        1 => idx().prop_map(Mutation::RepeatLine),
        1 => (idx(), idx()).prop_map(|(a, b)| Mutation::SwapLines(a, b)),
        2 => (idx(), line()).prop_map(|(i, l)| Mutation::Insert(i, l)),
        2 => (idx(), line()).prop_map(|(i, l)| Mutation::Replace(i, l)),
        1 => (idx(), any::<u8>()).prop_map(|(i, b)| Mutation::FlipByte(i, b)),
    ]
}

fn mutate(patch: &[u8], mutations: &[Mutation]) -> Vec<u8> {
    let mut lines: Vec<Vec<u8>> = patch
        .split_inclusive(|b| *b == b'\n')
        .map(<[u8]>::to_vec)
        .collect();
    for m in mutations {
        let n = lines.len().max(1);
        match m {
            Mutation::Truncate(i) => {
                let mut bytes = lines.concat();
                bytes.truncate(i.index(bytes.len() + 1));
                lines = vec![bytes];
            }
            Mutation::DropLine(i) if !lines.is_empty() => {
                lines.remove(i.index(n));
            }
            Mutation::RepeatLine(i) if !lines.is_empty() => {
                let k = i.index(n);
                lines.insert(k, lines[k].clone());
            }
            Mutation::SwapLines(a, b) if !lines.is_empty() => lines.swap(a.index(n), b.index(n)),
            Mutation::Insert(i, line) => lines.insert(i.index(lines.len() + 1), line.clone()),
            Mutation::Replace(i, line) if !lines.is_empty() => lines[i.index(n)] = line.clone(),
            Mutation::FlipByte(i, b) if !lines.is_empty() => {
                let line = &mut lines[i.index(n)];
                if !line.is_empty() {
                    let k = i.index(line.len());
                    line[k] ^= b | 1;
                }
            }
            _ => {}
        }
    }
    lines.concat()
}

fn patch_text() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        6 => (0..CORPUS.patches.len(), prop::collection::vec(mutation(), 1..5))
            .prop_map(|(i, ms)| mutate(&CORPUS.patches[i], &ms)),
        1 => (0..CORPUS.patches.len()).prop_map(|i| CORPUS.patches[i].clone()),
        1 => prop::collection::vec(any::<u8>(), 0..300),
    ]
}

proptest! {
    #![proptest_config(config(48))]

    #[test]
    fn fuzz_apply_answers_any_patch_text_typed_and_a_check_or_conflict_writes_nothing(
        patch in patch_text(),
        reverse in any::<bool>(),
        check_only in any::<bool>(),
    ) {
        // One work tree for every case (they run one after another), copied afresh from the
        // template only after a case changed it.
        static WORK: LazyLock<tempfile::TempDir> = LazyLock::new(|| tempfile::tempdir().unwrap());
        let tmp = &*WORK;
        let top = tmp.path().join("repo");
        if state_of(&top) != *PRISTINE {
            let _ = std::fs::remove_dir_all(&top);
            copy_tree(&CORPUS.template, &top);
        }
        // A file beside the work tree that a patch naming `../outside.txt` would reach.
        let outside = tmp.path().join("outside.txt");
        std::fs::write(&outside, "beside the tree\n").unwrap();
        let file = tmp.path().join("fuzz.patch");
        std::fs::write(&file, &patch).unwrap();
        let tree = fingerprint(&top);
        let index = std::fs::read(top.join(".git/index")).unwrap();
        let direction = if reverse { Direction::Reverse } else { Direction::Forward };

        let result = apply_patch(&top, &file, direction, check_only);

        let unchanged = fingerprint(&top) == tree;
        match &result {
            Ok(ApplyCheck::Clean) => prop_assert!(!check_only || unchanged, "a check writes nothing"),
            Ok(ApplyCheck::Conflict { .. }) => prop_assert!(unchanged, "a conflict writes nothing"),
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
        prop_assert_eq!(std::fs::read(&outside).unwrap(), b"beside the tree\n".to_vec());
        prop_assert!(
            !tmp.path().join("abs").exists() && !tmp.path().join("x").exists(),
            "nothing lands beside the tree"
        );
        prop_assert!(std::fs::read(top.join(".git/index")).unwrap() == index, "never the index");
    }
}
