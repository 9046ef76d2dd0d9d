//! `apply` and `revert` at the edges: symlinks, paths through a symlink, nested repositories,
//! converting git attributes, a file over 100 MB, and names git must quote. Each shape either
//! round-trips byte for byte or is refused before anything is written, naming the path and why.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

use pitroom_testkit::repo::{dirty_repo, write};
use pitroom_testkit::TestEnv;
use serde_json::json;

use super::common::{assert_exit, assert_stderr_has, code, fake_env, record, stderr, text};

/// Every entry under `root` but the top `.git`, by its raw path bytes: a hash and length of a
/// file's bytes with its mode, or a symlink's raw target with mode 0o120000. Non-UTF-8 names
/// and big files compare exactly and cheaply.
fn exact(root: &Path) -> BTreeMap<Vec<u8>, (u64, u64, u32)> {
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<Vec<u8>, (u64, u64, u32)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if dir == root && entry.file_name() == ".git" {
            continue;
        }
        let rel = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .as_os_str()
            .as_bytes()
            .to_vec();
        let meta = std::fs::symlink_metadata(&path).expect("metadata");
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&path).expect("link");
            let bytes = target.as_os_str().as_bytes();
            out.insert(rel, (hash(bytes), bytes.len() as u64, 0o120000));
        } else if meta.is_dir() {
            out.insert(rel.clone(), (0, 0, 0o040000));
            walk(root, &path, out);
        } else {
            let bytes = std::fs::read(&path).expect("read");
            out.insert(
                rel,
                (hash(&bytes), bytes.len() as u64, meta.permissions().mode()),
            );
        }
    }
}

fn hash(bytes: &[u8]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut h);
    h.finish()
}

/// A worker whose only action is one shell command in its directory, and the repository it
/// works in: `repo(env)`.
fn shell_worker_in(command: &str, repo: fn(&TestEnv) -> PathBuf) -> (TestEnv, PathBuf) {
    let env = fake_env(json!([{"sh": command}, {"text": "SUMMARY: done"}]));
    let dir = repo(&env);
    (env, dir)
}

/// A [`shell_worker_in`] run in a user's repository with work in progress.
fn shell_worker(command: &str) -> (TestEnv, PathBuf) {
    shell_worker_in(command, |env| dirty_repo(env, "repo"))
}

fn copy_of(env: &TestEnv, repo: &Path) -> PathBuf {
    PathBuf::from(
        record(env, repo)["copy"]
            .as_str()
            .expect("an isolated copy"),
    )
}

/// `pitroom ARGS` in `repo`, which must fail before it wrote anything: its output.
fn refused(env: &TestEnv, repo: &Path, args: &[&str]) -> Output {
    let before = exact(repo);
    let out = env.run(repo, args);
    assert_ne!(code(&out), 0, "refused: {}", text(&out));
    assert_eq!(exact(repo), before, "nothing was written");
    out
}

/// `pitroom COMMAND` (`apply`, `revert`) in `repo`, which must be refused (exit 3) before it
/// wrote anything; its stderr, which names what and why.
fn refused_exit_3(env: &TestEnv, repo: &Path, command: &str) -> String {
    let out = refused(env, repo, &[command]);
    assert_exit(&out, 3);
    stderr(&out)
}

fn refused_apply(env: &TestEnv, repo: &Path) -> String {
    refused_exit_3(env, repo, "apply")
}

fn refused_revert(env: &TestEnv, repo: &Path) -> String {
    refused_exit_3(env, repo, "revert")
}

/// Runs `task` isolated and checks it succeeded; returns the copy the worker left.
fn isolated(env: &TestEnv, repo: &Path) -> PathBuf {
    env.run_expecting(repo, &["-i", "edit"], 0);
    copy_of(env, repo)
}

/// Apply succeeds and the tree becomes exactly what the worker left in its copy.
fn assert_applies_exactly(env: &TestEnv, repo: &Path) {
    assert_applies_exactly_with(env, repo, &[]);
}

/// As [`assert_applies_exactly`], with `flags` given to `apply`.
fn assert_applies_exactly_with(env: &TestEnv, repo: &Path, flags: &[&str]) {
    let copy = isolated(env, repo);
    let expected = exact(&copy);
    let args: Vec<&str> = ["apply"].iter().chain(flags).copied().collect();
    env.run_expecting(repo, &args, 0);
    assert_eq!(
        exact(repo),
        expected,
        "byte for byte, modes and links included"
    );
}

/// A write run, then `revert`: the tree is back byte for byte.
fn assert_reverts_exactly(env: &TestEnv, repo: &Path) {
    let before = exact(repo);
    env.run_expecting(repo, &["-w", "edit"], 0);
    assert_ne!(exact(repo), before, "the run changed the tree");
    env.run_expecting(repo, &["revert"], 0);
    assert_eq!(exact(repo), before, "revert restores every byte");
}

// (1) Symlinks.

#[test]
fn apply_lands_symlinks_pointing_inside_the_project_as_symlinks() {
    let (env, repo) = shell_worker("ln -s calc.py inner.py && mkdir -p docs && ln -s ../README.md docs/readme && ln -sfn src/lib.rs link.py");
    assert_applies_exactly(&env, &repo);
    let meta = std::fs::symlink_metadata(repo.join("docs/readme")).unwrap();
    assert!(meta.file_type().is_symlink(), "mode 120000, not a file");
    assert_eq!(
        std::fs::read_link(repo.join("link.py")).unwrap(),
        Path::new("src/lib.rs")
    );
}

#[test]
fn revert_removes_and_restores_symlinks_exactly() {
    let (env, repo) =
        shell_worker("ln -s calc.py inner.py && rm link.py && ln -s README.md link.py");
    assert_reverts_exactly(&env, &repo);
}

#[test]
fn apply_refuses_symlinks_pointing_outside_the_project_before_writing_anything() {
    let (env, repo) = shell_worker("echo ok > fine.txt && ln -s /etc/passwd passwd && mkdir -p a && ln -s ../../outside a/escape");
    isolated(&env, &repo);
    let err = refused_apply(&env, &repo);
    assert!(
        err.contains("passwd") && err.contains("/etc/passwd"),
        "{err}"
    );
    assert!(err.contains("a/escape") && err.contains("outside"), "{err}");
    assert!(!repo.join("fine.txt").exists());
}

// (2) Paths through a symlink.

#[test]
fn apply_refuses_to_write_through_a_symlinked_directory_in_the_users_tree() {
    let (env, repo) =
        shell_worker("mkdir -p out && echo planted > out/file.txt && echo ok > fine.txt");
    isolated(&env, &repo);
    // Meanwhile `out` became a link to somewhere else in the user's tree.
    let elsewhere = env.dir("elsewhere");
    std::os::unix::fs::symlink(&elsewhere, repo.join("out")).unwrap();
    let err = refused_apply(&env, &repo);
    assert!(
        err.contains("out/file.txt") && err.contains("symlink"),
        "names the path and why: {err}"
    );
    assert!(
        std::fs::read_dir(&elsewhere).unwrap().next().is_none(),
        "never through the link"
    );
}

#[test]
fn revert_refuses_to_delete_through_a_symlinked_directory() {
    let (env, repo) = shell_worker("mkdir -p out && echo planted > out/file.txt");
    env.run_expecting(&repo, &["-w", "edit"], 0);
    // The user moved `out` away and linked it back: revert must not reach through the link.
    let elsewhere = env.root.join("elsewhere");
    std::fs::rename(repo.join("out"), &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, repo.join("out")).unwrap();
    let err = stderr(&refused(&env, &repo, &["revert"]));
    assert!(
        err.contains("out/file.txt") && err.contains("symlink"),
        "{err}"
    );
    assert!(
        elsewhere.join("file.txt").exists(),
        "never through the link"
    );
}

// (3) Nested repositories (gitlinks).

/// The guard refuses `git init` inside the project, so the worker reaches past it to the real
/// git, as a worker that vendors a clone would.
const NESTED: &str = "G='env PATH=/usr/local/bin:/usr/bin:/bin git'; $G init -q sub && echo inner > sub/a.txt && $G -C sub add a.txt && $G -C sub -c user.name=w -c user.email=w@w commit -qm x && echo ok > fine.txt";

#[test]
fn apply_refuses_a_nested_repository_the_worker_created_and_names_it() {
    let (env, repo) = shell_worker(NESTED);
    isolated(&env, &repo);
    let err = refused_apply(&env, &repo);
    assert!(
        err.contains("sub") && err.contains("nested git repository"),
        "{err}"
    );
}

#[test]
fn revert_of_a_nested_repository_is_refused_until_the_user_removes_it() {
    let (env, repo) = shell_worker(NESTED);
    let before = exact(&repo);
    env.run_expecting(&repo, &["-w", "edit"], 0);
    let err = refused_revert(&env, &repo);
    assert!(
        err.contains("sub") && err.contains("nested git repository"),
        "{err}"
    );
    std::fs::remove_dir_all(repo.join("sub")).unwrap();
    env.run_expecting(&repo, &["revert"], 0);
    assert_eq!(exact(&repo), before, "then it reverts exactly");
}

// (4) Converting git attributes: a clean/smudge filter and eol conversion.

/// A repository whose `.gitattributes` converts: `*.txt` to CRLF, `*.dat` through rot13,
/// `*.md` by `text=auto`.
fn converting_repo(env: &TestEnv) -> PathBuf {
    let dir = env.dir("conv");
    env.git(&dir, &["init", "-q"]);
    env.git(
        &dir,
        &["config", "filter.rot13.clean", "tr A-Za-z N-ZA-Mn-za-m"],
    );
    env.git(
        &dir,
        &["config", "filter.rot13.smudge", "tr A-Za-z N-ZA-Mn-za-m"],
    );
    write(
        &dir,
        ".gitattributes",
        "*.txt text eol=crlf\n*.dat filter=rot13\n*.md text=auto\n",
    );
    std::fs::write(dir.join("a.txt"), "one\r\ntwo\r\n").unwrap();
    write(&dir, "secret.dat", "hello\n");
    write(&dir, "plain.md", "plain\n");
    env.git(&dir, &["add", "-A"]);
    env.git(&dir, &["commit", "-qm", "c"]);
    dir
}

#[test]
fn apply_refuses_files_whose_attributes_would_not_land_the_workers_bytes() {
    let (env, repo) = shell_worker_in("printf 'lf\\nonly\\n' > new.txt && printf 'crlf\\r\\n' > win.txt && printf 'Hello filter\\n' > new.dat && echo md > plain.md", converting_repo);
    isolated(&env, &repo);
    let err = refused_apply(&env, &repo);
    // LF under `eol=crlf` would land as CRLF; the copy has no rot13 filter, so its blob is the
    // plain text, which the user's smudge would scramble.
    assert!(err.contains("new.txt") && err.contains("eol=crlf"), "{err}");
    assert!(
        err.contains("new.dat") && err.contains("filter=rot13"),
        "{err}"
    );
    assert!(err.contains("gitattributes"), "says why: {err}");
    assert!(
        !err.contains("win.txt") && !err.contains("plain.md"),
        "files that convert back exactly are not named: {err}"
    );
}

#[test]
fn apply_under_converting_attributes_lands_bytes_that_convert_back_exactly() {
    let (env, repo) = shell_worker_in("printf 'crlf\\r\\nonly\\r\\n' > win.txt && printf 'one\\r\\ntwo\\r\\nthree\\r\\n' > a.txt && echo md > plain.md", converting_repo);
    let copy = isolated(&env, &repo);
    let names = ["win.txt", "a.txt", "plain.md"];
    let worker: Vec<Vec<u8>> = names
        .iter()
        .map(|n| std::fs::read(copy.join(n)).unwrap())
        .collect();
    env.run_expecting(&repo, &["apply"], 0);
    for (name, bytes) in names.iter().zip(&worker) {
        assert_eq!(
            &std::fs::read(repo.join(name)).unwrap(),
            bytes,
            "{name}: the worker's bytes exactly"
        );
    }
}

#[test]
fn revert_refuses_a_file_whose_bytes_before_the_run_git_would_not_write_back() {
    let (env, repo) = shell_worker_in(
        "printf 'worker\\r\\n' > a.txt && echo new > b.txt && echo worker > plain.md",
        converting_repo,
    );
    // The user's files hold LF although `*.txt` says CRLF, and CRLF that `text=auto` stores as
    // LF: git would not write these bytes back.
    std::fs::write(repo.join("a.txt"), "user\nlf\n").unwrap();
    std::fs::write(repo.join("plain.md"), "user\r\ncrlf\r\n").unwrap();
    env.run_expecting(&repo, &["-w", "edit"], 0);
    let changed = record(&env, &repo)["changes"].to_string();
    let err = refused_revert(&env, &repo);
    assert!(
        err.contains("a.txt") && err.contains("plain.md") && err.contains("gitattributes"),
        "{err}\nchanges: {changed}"
    );
    assert!(!err.contains("b.txt"), "{err}");
}

#[test]
fn revert_under_converting_attributes_restores_canonical_files_exactly() {
    let (env, repo) = shell_worker_in("printf 'worker\\n' > a.txt && printf 'Worker\\n' > secret.dat && echo new > b.txt && rm plain.md", converting_repo);
    assert_reverts_exactly(&env, &repo);
}

// (5) A file over 100 MB.

const BIG: &str =
    "head -c 104857700 /dev/zero > big.bin && printf 'tail\\377' >> big.bin && echo ok > fine.txt";

#[test]
fn apply_lands_a_file_over_100_mb_exactly() {
    let (env, repo) = shell_worker(BIG);
    // Its NUL bytes make it binary: content no preview shows needs --allow-binary.
    assert_applies_exactly_with(&env, &repo, &["--allow-binary"]);
    assert_eq!(
        std::fs::metadata(repo.join("big.bin")).unwrap().len(),
        104_857_705
    );
}

#[test]
fn revert_removes_a_file_over_100_mb_exactly() {
    let (env, repo) = shell_worker(BIG);
    assert_reverts_exactly(&env, &repo);
}

// (6) Names git must quote: newlines, tabs, quotes, backslashes, non-UTF-8 bytes.

const ODD_NAMES: &str = r#"printf 1 > "$(printf 'new\nline.txt')" && printf 2 > "$(printf 'tab\there.txt')" && printf 3 > 'quo"te.txt' && printf 4 > 'back\slash.txt' && printf 5 > "$(printf 'bad\377\376.bin')" && mkdir -p "$(printf 'dir\nx')" && printf 6 > "$(printf 'dir\nx/in side')" && ln -s "$(printf 'new\nline.txt')" "$(printf 'ln\tk')""#;

#[test]
fn apply_lands_names_with_newlines_tabs_quotes_and_non_utf8_bytes_exactly() {
    let (env, repo) = shell_worker(ODD_NAMES);
    assert_applies_exactly(&env, &repo);
    assert!(repo.join("new\nline.txt").exists());
    assert!(repo
        .join(std::ffi::OsStr::from_bytes(b"bad\xff\xfe.bin"))
        .exists());
}

#[test]
fn revert_restores_names_with_newlines_tabs_quotes_and_non_utf8_bytes_exactly() {
    let (env, repo) = shell_worker(&format!(
        "{ODD_NAMES} && rm \"$(printf 'old\\tname')\" && printf changed > \"$(printf 'odd\\377')\""
    ));
    std::fs::write(repo.join("old\tname"), "user file\n").unwrap();
    std::fs::write(
        repo.join(std::ffi::OsStr::from_bytes(b"odd\xff")),
        "user bytes\n",
    )
    .unwrap();
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-qm", "odd names"]);
    assert_reverts_exactly(&env, &repo);
}

#[test]
fn a_deletion_refusal_quotes_a_name_with_a_newline_and_allow_delete_lands_it_exactly() {
    let (env, repo) = shell_worker("rm \"$(printf 'odd\\nname')\" && echo ok > fine.txt");
    std::fs::write(repo.join("odd\nname"), "user file\n").unwrap();
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-qm", "odd name"]);
    let copy = isolated(&env, &repo);
    let expected = exact(&copy);
    let out = env.run_expecting(&repo, &["apply"], 3);
    assert_stderr_has(&out, "\"odd\\nname\"");
    env.run_expecting(&repo, &["apply", "--allow-delete"], 0);
    assert_eq!(exact(&repo), expected);
}
