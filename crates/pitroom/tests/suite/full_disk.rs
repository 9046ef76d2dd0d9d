//! A full disk under the state dir mid-run: the run ends with one line that names the path and
//! the free space, the worker is stopped, and the user's tree is untouched.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::json;

use super::common::{code, eventually, fake_env, processes_with_env, stderr, stdout, text};

/// A small tmpfs mounted over a directory for the life of the value (needs root, as in CI).
struct SmallDisk(PathBuf);

impl SmallDisk {
    fn mount_over(dir: &Path, size: &str) -> Option<SmallDisk> {
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .status()
            .is_ok_and(|s| s.success());
        mounted.then(|| SmallDisk(dir.to_path_buf()))
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

fn tree_bytes(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(dir)
        .expect("project dir")
        .flatten()
        .map(|e| (e.path(), std::fs::read(e.path()).unwrap_or_default()))
        .collect();
    files.sort();
    files
}

#[test]
fn a_state_dir_that_fills_up_mid_run_fails_the_run_in_one_line_and_stops_the_worker() {
    // Ten 200 kB answers into a 1 MiB state dir: the event log fills it mid-run; then the
    // worker would sleep for a minute if Pitroom did not stop it.
    let chunk = "x".repeat(200_000);
    let mut script: Vec<serde_json::Value> =
        (0..10).map(|_| json!({"text": chunk.clone()})).collect();
    script.push(json!({"sleep_ms": 60000}));
    let mut env = fake_env(json!([]));
    let script_file = env.dir("script").join("flood.json");
    std::fs::write(&script_file, json!(script).to_string()).expect("script");
    env.set(
        "PITROOM_FAKE_SCRIPT",
        format!("@{}", script_file.display()).as_str(),
    );
    let Some(_disk) = SmallDisk::mount_over(&env.state, "1m") else {
        eprintln!("skipped: cannot mount a tmpfs here (needs root); CI runs it");
        return;
    };
    let dir = env.dir("plain");
    std::fs::write(dir.join("notes.txt"), "the user's work\n").expect("seed");
    let before = tree_bytes(&dir);

    let out = env.run(&dir, &["summarise the notes", "-t", "120s"]);
    let stderr = stderr(&out);
    assert_eq!(code(&out), 1, "the run failed: {}", text(&out));
    let line = stderr
        .lines()
        .find(|l| l.contains("could not write"))
        .unwrap_or_else(|| panic!("one line names the failed write: {}", text(&out)));
    let state = env.state.display().to_string();
    assert!(line.contains(&state), "it names the path: {line}");
    assert!(line.contains("No space left on device"), "{line}");
    assert!(
        line.contains("free there"),
        "it says the free space: {line}"
    );
    assert!(line.contains("PITROOM_HOME"), "it says what to do: {line}");
    let stdout = stdout(&out);
    assert!(
        stdout.contains("error: could not write") && stdout.contains("events.jsonl"),
        "the report names the first write that failed, the event log: {}",
        &stdout[..stdout.len().min(600)]
    );
    assert!(
        eventually(Duration::from_secs(5), || processes_with_env(&state)
            .is_empty()),
        "the worker was stopped, not left to sleep: {:?}",
        processes_with_env(&state)
    );
    assert_eq!(tree_bytes(&dir), before, "the user's tree is untouched");
}
