//! `docs/configuration.md` and the sources held to this module.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::*;

const DOC: &str = include_str!("../../../docs/configuration.md");
const INTERNAL_HEADING: &str = "## Internal variables";

/// The `PITROOM_*` names in `text`: `PITROOM_` and at least one more letter, digit or `_`, not
/// ending in `_` (so `PITROOM_*` and `PITROOM_<BACKEND>_BIN` are no names).
fn names_in(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (at, _) in text.match_indices("PITROOM_") {
        let tail = &text[at..];
        let len = tail
            .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
            .unwrap_or(tail.len());
        let name = tail[..len].trim_end_matches('_');
        if name.len() > "PITROOM_".len() - 1 && name != "PITROOM" {
            names.insert(name.to_string());
        }
    }
    names
}

/// A `PITROOM_<BACKEND>_BIN` name, which [`worker_bin`] makes.
fn is_worker_bin(name: &str) -> bool {
    name.strip_prefix("PITROOM_")
        .and_then(|rest| rest.strip_suffix("_BIN"))
        .is_some_and(|backend| !backend.is_empty() && worker_bin(backend) == name)
}

fn known(name: &str) -> bool {
    SETTINGS.contains(&name) || INTERNAL.contains(&name) || is_worker_bin(name)
}

fn doc_parts() -> (&'static str, &'static str) {
    let at = DOC
        .find(INTERNAL_HEADING)
        .unwrap_or_else(|| panic!("docs/configuration.md has no `{INTERNAL_HEADING}` section"));
    DOC.split_at(at)
}

#[test]
fn every_setting_is_documented_in_the_main_part_of_the_configuration_page() {
    let (main, _) = doc_parts();
    let found = names_in(main);
    let missing: Vec<_> = SETTINGS.iter().filter(|n| !found.contains(**n)).collect();
    assert!(
        missing.is_empty(),
        "not in docs/configuration.md: {missing:?}"
    );
    let unknown: Vec<_> = found.iter().filter(|n| !known(n)).collect();
    assert!(
        unknown.is_empty(),
        "documented but no constant in pitroom-env: {unknown:?}"
    );
    let internal: Vec<_> = found
        .iter()
        .filter(|n| INTERNAL.contains(&n.as_str()))
        .collect();
    assert!(
        internal.is_empty(),
        "internal variables belong in `{INTERNAL_HEADING}`: {internal:?}"
    );
}

#[test]
fn every_internal_variable_is_documented_in_its_own_section() {
    let (_, internal) = doc_parts();
    let found = names_in(internal);
    let missing: Vec<_> = INTERNAL.iter().filter(|n| !found.contains(**n)).collect();
    assert!(
        missing.is_empty(),
        "not in `{INTERNAL_HEADING}`: {missing:?}"
    );
    let unknown: Vec<_> = found.iter().filter(|n| !known(n)).collect();
    assert!(
        unknown.is_empty(),
        "documented but no constant in pitroom-env: {unknown:?}"
    );
}

/// Each `pub const` here is named as its value and listed exactly once, so the lists (which the
/// documentation test reads) are every variable.
#[test]
fn every_constant_is_its_own_name_and_in_one_list() {
    let source = include_str!("lib.rs");
    let mut consts = 0;
    for line in source.lines() {
        let Some(decl) = line.strip_prefix("pub const PITROOM_") else {
            continue;
        };
        consts += 1;
        let (name, value) = decl
            .split_once(": &str = \"")
            .unwrap_or_else(|| panic!("not a name constant: {line}"));
        let name = format!("PITROOM_{name}");
        assert_eq!(value, format!("{name}\";"), "{line}");
        let lists = usize::from(SETTINGS.contains(&name.as_str()))
            + usize::from(INTERNAL.contains(&name.as_str()));
        assert_eq!(lists, 1, "{name} is in {lists} lists");
    }
    assert_eq!(consts, SETTINGS.len() + INTERNAL.len());
}

#[test]
fn worker_bin_names_the_backend_in_capitals() {
    assert_eq!(worker_bin("opencode"), "PITROOM_OPENCODE_BIN");
    assert_eq!(worker_bin("acme"), "PITROOM_ACME_BIN");
    assert!(is_worker_bin("PITROOM_CURSOR_BIN"));
    assert!(!is_worker_bin("PITROOM_BIN") && !is_worker_bin("PITROOM_HOME"));
}

#[test]
fn names_are_read_whole() {
    let found = names_in("`PITROOM_*`, $PITROOM_HOME/bin, PITROOM_<BACKEND>_BIN, PITROOM_X_");
    assert_eq!(
        found,
        BTreeSet::from(["PITROOM_HOME".into(), "PITROOM_X".into()])
    );
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every `"PITROOM_…"` string the crates' own code names is a constant here. The test kit
/// (which depends on no Pitroom crate, on purpose) and the integration tests (`tests/`) name
/// the test harness's own variables (docs/testing.md) and are left out.
#[test]
fn every_variable_the_crates_name_is_a_constant_here() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    let Ok(entries) = std::fs::read_dir(&crates) else {
        panic!("cannot list {}", crates.display());
    };
    for entry in entries.flatten() {
        // This crate's tests name made-up variables to test the reader.
        if entry.file_name() != "pitroom-testkit" && entry.file_name() != "pitroom-env" {
            rust_files(&entry.path().join("src"), &mut files);
            files.push(entry.path().join("build.rs"));
        }
    }
    assert!(
        files.len() > 100,
        "only {} files under {}",
        files.len(),
        crates.display()
    );
    let mut unknown = Vec::new();
    for file in files {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        for (at, _) in text.match_indices("\"PITROOM_") {
            let tail = &text[at + 1..];
            let len = tail
                .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
                .unwrap_or(tail.len());
            let closed = tail[len..].starts_with('"') || tail[len..].starts_with("\\\"");
            let name = &tail[..len];
            if closed && name != "PITROOM_" && !known(name) {
                unknown.push(format!("{}: {name}", file.display()));
            }
        }
    }
    assert!(
        unknown.is_empty(),
        "not in pitroom-env:\n{}",
        unknown.join("\n")
    );
}
