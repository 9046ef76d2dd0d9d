use super::*;

#[test]
fn quoted_names_with_newlines_tabs_quotes_and_octal_bytes_are_read_exactly() {
    assert_eq!(
        unquote(br#""a\nb\tc\"d\\e\377f""#).unwrap(),
        b"a\nb\tc\"d\\e\xfff".to_vec()
    );
    assert_eq!(unquote(b"plain name").unwrap(), b"plain name".to_vec());
    assert_eq!(
        header_name(b"a/with space\t", Some(b"a/")).unwrap(),
        b"with space".to_vec()
    );
    assert_eq!(git_line_name(b"a/x y b/x y").unwrap(), b"x y".to_vec());
    assert_eq!(
        git_line_name(br#""a/n\nl" "b/n\nl""#).unwrap(),
        b"n\nl".to_vec()
    );
}

#[test]
fn a_new_symlink_carries_its_mode_and_target() {
    let patch = b"diff --git a/l b/l\nnew file mode 120000\nindex 0000000000000000000000000000000000000000..1111111111111111111111111111111111111111\n--- /dev/null\n+++ b/l\n@@ -0,0 +1 @@\n+/etc/passwd\n\\ No newline at end of file\ndiff --git a/sub b/sub\nnew file mode 160000\nindex 0000000000000000000000000000000000000000..2222222222222222222222222222222222222222\n--- /dev/null\n+++ b/sub\n@@ -0,0 +1 @@\n+Subproject commit 2222222222222222222222222222222222222222\n";
    let entries = parse_patch(patch);
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[0].new_path.as_deref(), Some(&b"l"[..]));
    assert_eq!(entries[0].new_mode, Some(SYMLINK));
    assert_eq!(entries[0].new_text.as_deref(), Some(&b"/etc/passwd"[..]));
    assert_eq!(entries[0].old_path, None);
    assert_eq!(entries[1].new_mode, Some(GITLINK));
    assert_eq!(&patch[entries[1].range.clone()][..15], b"diff --git a/su");
}

#[test]
fn binary_and_mode_only_sections_take_their_name_from_the_git_line() {
    let patch = b"diff --git a/bad\xff.bin b/bad\xff.bin\nnew file mode 100644\nindex 0000000000000000000000000000000000000000..3333333333333333333333333333333333333333\nGIT binary patch\nliteral 1\nIcmZpc000310RR91\n\nliteral 0\nHcmV?d00001\n\ndiff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n";
    let entries = parse_patch(patch);
    assert_eq!(entries[0].new_path.as_deref(), Some(&b"bad\xff.bin"[..]));
    assert_eq!(entries[0].new_text, None, "binary content is not read");
    assert_eq!(entries[1].old_path.as_deref(), Some(&b"run.sh"[..]));
    assert_eq!(
        (entries[1].old_mode, entries[1].new_mode),
        (Some(0o100644), Some(0o100755))
    );
}

#[test]
fn symlink_targets_escape_when_absolute_or_climbing_past_the_top() {
    let link = |path: &[u8], target: &[u8]| PatchEntry {
        new_path: Some(path.to_vec()),
        new_mode: Some(SYMLINK),
        new_text: Some(target.to_vec()),
        ..PatchEntry::default()
    };
    let escapes = |e: PatchEntry| {
        let mut p = Vec::new();
        escaping_symlink(&e, &mut p);
        !p.is_empty()
    };
    assert!(escapes(link(b"a", b"/etc/passwd")));
    assert!(escapes(link(b"a", b"../x")));
    assert!(escapes(link(b"d/a", b"../../x")));
    assert!(escapes(link(b"d/a", b"x/../../../y")));
    assert!(!escapes(link(b"d/a", b"../README.md")));
    assert!(!escapes(link(b"a", b"./src/./lib.rs")));
}

/// Names git must quote, read back exactly from a real `diff_trees` patch.
#[test]
fn real_patches_with_quoted_names_parse_to_the_exact_bytes() {
    use std::os::unix::ffi::OsStrExt;
    let tmp = tempfile::tempdir().expect("tmp");
    let top = tmp.path();
    let git = |args: &[&str]| pitroom_testkit::repo::git_ok(top, args);
    git(&["init", "-q"]);
    std::fs::write(top.join("keep"), "k").expect("w");
    git(&["add", "-A"]);
    git(&["commit", "-qm", "c"]);
    let before = git(&["rev-parse", "HEAD^{tree}"]).trim().to_string();
    let names: [&[u8]; 6] = [
        b"new\nline.txt",
        b"tab\there",
        b"quo\"te",
        b"back\\slash",
        b"bad\xff\xfe.bin",
        b"with space",
    ];
    for name in names {
        std::fs::write(top.join(OsStr::from_bytes(name)), "x\n").expect("w");
    }
    std::fs::write(top.join("binary"), b"\0\x01").expect("w");
    std::os::unix::fs::symlink("keep", top.join("link")).expect("link");
    git(&["add", "-A"]);
    git(&["commit", "-qm", "d"]);
    let after = git(&["rev-parse", "HEAD^{tree}"]).trim().to_string();
    let changes = crate::diff_trees(&top.join(".git"), &before, &after, false).expect("diff");
    let entries = parse_patch(&changes.patch);
    let mut seen: Vec<Vec<u8>> = entries.iter().filter_map(|e| e.new_path.clone()).collect();
    seen.sort();
    let mut want: Vec<Vec<u8>> = names.iter().map(|n| n.to_vec()).collect();
    want.extend([b"binary".to_vec(), b"link".to_vec()]);
    want.sort();
    assert_eq!(seen, want);
    let link = entries
        .iter()
        .find(|e| e.new_path.as_deref() == Some(&b"link"[..]))
        .expect("link");
    assert_eq!(
        (link.new_mode, link.new_text.as_deref()),
        (Some(SYMLINK), Some(&b"keep"[..]))
    );
    assert!(entries
        .iter()
        .all(|e| e.old_path.is_none() && e.new_blob.is_some()));
}

#[test]
fn checkout_eol_follows_the_attributes() {
    let attrs = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let crlf = Eol::of(&attrs(&["text=set", "eol=crlf"]), "").unwrap();
    assert_eq!(crlf.checkout(b"a\nb\r\nc"), b"a\r\nb\r\nc".to_vec());
    let auto = Eol::of(&attrs(&["text=auto"]), "").unwrap();
    assert_eq!(auto, Eol::Lf, "native LF: written as staged");
    let auto_crlf = Eol::of(&attrs(&[]), "true").unwrap();
    assert_eq!(auto_crlf.checkout(b"bin\0\n"), b"bin\0\n".to_vec());
    assert_eq!(auto_crlf.checkout(b"x\n"), b"x\r\n".to_vec());
    assert_eq!(Eol::of(&attrs(&["filter=lfs", "text=set"]), ""), None);
}

#[test]
fn paths_are_shown_quoted_only_when_they_need_it() {
    assert_eq!(quote_path(b"src/a b.rs"), "src/a b.rs");
    assert_eq!(quote_path("déjà".as_bytes()), "déjà");
    assert_eq!(quote_path(b"new\nline"), "\"new\\nline\"");
    assert_eq!(quote_path(b"bad\xff"), "\"bad\\377\"");
}
