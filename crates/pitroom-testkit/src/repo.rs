//! Generated repositories with history and uncommitted user work, for tests.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::TestEnv;

/// Makes a repository at `env.root/name` with two commits and a dirty tree: a modified
/// tracked file, a staged change, an untracked file, a file with spaces and non-ASCII in its
/// name, a CRLF file, a binary file, an executable and a symlink.
pub fn dirty_repo(env: &TestEnv, name: &str) -> PathBuf {
    let dir = env.dir(name);
    env.git(&dir, &["init", "-q"]);
    write(&dir, "calc.py", "def add(a, b):\n    return a + b\n\n\ndef divide(a, b):\n    # no zero check\n    return a / b\n");
    write(&dir, "README.md", "# demo\n");
    write(&dir, "src/lib.rs", "pub fn answer() -> u32 {\n    42\n}\n");
    env.git(&dir, &["add", "-A"]);
    env.git(&dir, &["commit", "-qm", "first"]);
    write(&dir, "src/util.rs", "pub fn helper() {}\n");
    std::fs::write(dir.join("crlf.txt"), b"one\r\ntwo\r\n").expect("crlf");
    std::fs::write(dir.join("blob.bin"), [0u8, 159, 146, 150, 0, 1, 2, 255]).expect("bin");
    write(&dir, "run.sh", "#!/bin/sh\necho hi\n");
    std::fs::set_permissions(dir.join("run.sh"), std::fs::Permissions::from_mode(0o755))
        .expect("chmod");
    std::os::unix::fs::symlink("calc.py", dir.join("link.py")).expect("symlink");
    env.git(&dir, &["add", "-A"]);
    env.git(&dir, &["commit", "-qm", "second"]);
    // The user's uncommitted work.
    write(&dir, "README.md", "# demo\n\nuser edit in progress\n");
    write(
        &dir,
        "src/lib.rs",
        "pub fn answer() -> u32 {\n    41 + 1\n}\n",
    );
    env.git(&dir, &["add", "src/lib.rs"]);
    write(&dir, "notes/todo list é.txt", "untracked user notes\n");
    dir
}

/// Writes a file, creating its parent directories.
pub fn write(root: &Path, rel: &str, content: &str) {
    let path = root.join(rel);
    if let Some(p) = path.parent() {
        std::fs::create_dir_all(p).expect("parent");
    }
    std::fs::write(path, content).expect("write");
}

/// Every file under `root` (not `.git`) with its bytes, mode and symlink target: a fingerprint
/// for byte-exact comparisons.
pub fn fingerprint(root: &Path) -> BTreeMap<String, (Vec<u8>, u32)> {
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, (Vec<u8>, u32)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.file_name().is_some_and(|n| n == ".git") {
            continue;
        }
        let rel = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .display()
            .to_string();
        let meta = std::fs::symlink_metadata(&path).expect("metadata");
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&path).expect("link");
            out.insert(rel, (target.display().to_string().into_bytes(), 0o120000));
        } else if meta.is_dir() {
            walk(root, &path, out);
        } else {
            let bytes = std::fs::read(&path).expect("read");
            out.insert(rel, (bytes, meta.permissions().mode()));
        }
    }
}

/// Runs git in `dir` with no user or system config (a fixed identity) and panics on failure;
/// for tests that need a repository without a `TestEnv`.
pub fn git_ok(dir: &Path, args: &[&str]) -> String {
    String::from_utf8_lossy(&git_bytes(dir, args)).into_owned()
}

/// [`git_ok`]'s output as git wrote it, byte for byte (a patch need not be UTF-8).
pub fn git_bytes(dir: &Path, args: &[&str]) -> Vec<u8> {
    let out = std::process::Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(["-c", "core.autocrlf=false"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}
