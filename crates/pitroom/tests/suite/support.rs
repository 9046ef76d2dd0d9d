//! Helpers shared by suite files beyond `common.rs`: reading a JSON field's text, walking a
//! folder, feeding a command its stdin.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

/// Asserts that the string at `pointer` in `v` (a JSON pointer: `/error`,
/// `/safety/landlock/reason`) contains `needle`; a failure shows the whole of `v`.
#[track_caller]
pub fn assert_str_has(v: &Value, pointer: &str, needle: &str) {
    assert!(
        v.pointer(pointer)
            .and_then(Value::as_str)
            .is_some_and(|s| s.contains(needle)),
        "{pointer} does not contain {needle:?}: {v:#}"
    );
}

/// Every file and folder under `root`, depth first, without following links.
pub fn entries_under(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                dirs.push(path.clone());
            }
            found.push(path);
        }
    }
    found
}

/// Runs `cmd` with `input` on its stdin and both its output streams captured.
pub fn output_with_stdin(cmd: &mut Command, input: &[u8]) -> Output {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{cmd:?} starts: {e}"));
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input)
        .expect("input written");
    child.wait_with_output().expect("the command ends")
}
