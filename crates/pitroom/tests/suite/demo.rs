//! `pitroom demo`: the whole pipeline with the built-in scripted worker, on a machine with
//! nothing but git — and the scripted worker's stream, as Pitroom's OpenCode parser reads it.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use pitroom_workers::{opencode::OpenCode, Adapter, ToolOutcome, WorkerEvent};

use super::common::{code, text, PITROOM};

/// The real git, found on this test's own PATH.
fn real_git() -> PathBuf {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join("git"))
        .find(|g| g.is_file())
        .expect("git on PATH")
}

/// `pitroom demo ARGS` with an empty HOME and a PATH holding nothing but a link to git.
fn run_demo(args: &[&str]) -> (Output, tempfile::TempDir) {
    let world = tempfile::Builder::new()
        .prefix("pitroom-demo-test-")
        .tempdir()
        .expect("temp dir");
    let home = world.path().join("home");
    let bin = world.path().join("bin");
    std::fs::create_dir_all(&home).expect("home");
    std::fs::create_dir_all(&bin).expect("bin");
    std::os::unix::fs::symlink(real_git(), bin.join("git")).expect("git link");
    let out = Command::new(PITROOM)
        .arg("demo")
        .args(args)
        .env_clear()
        .env("HOME", &home)
        .env("PATH", &bin)
        .current_dir(world.path())
        .stdin(Stdio::null())
        .output()
        .expect("pitroom demo runs");
    (out, world)
}

/// The state dir the demo printed (`PITROOM_HOME=<dir>`).
fn state_dir(stdout: &str) -> PathBuf {
    let at = stdout
        .find("PITROOM_HOME=")
        .expect("the state dir is printed")
        + "PITROOM_HOME=".len();
    let path: String = stdout[at..]
        .chars()
        .take_while(|c| !c.is_whitespace())
        .collect();
    PathBuf::from(path)
}

#[test]
fn demo_runs_every_stage_on_a_fresh_home_with_only_git_on_path() {
    let started = Instant::now();
    let (out, world) = run_demo(&[]);
    let took = started.elapsed();
    assert_eq!(code(&out), 0, "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);

    let headers: Vec<&str> = stdout.lines().filter(|l| l.starts_with('▶')).collect();
    assert_eq!(headers.len(), 6, "{stdout}");
    for (header, stage) in headers.iter().zip([
        "read",
        "isolate",
        "review + apply",
        "write + revert",
        "crew + watch",
        "savings",
    ]) {
        assert!(header.contains(stage), "{header} should name {stage}");
        assert!(header.contains("scripted"), "{header} should say scripted");
    }
    assert!(
        headers[2].contains("reviewer: scripted, not a model"),
        "{}",
        headers[2]
    );
    for command in [
        "$ pitroom -W opencode -m pitroom/scripted -d ",
        "$ pitroom run --continue last ",
        "$ pitroom -i -W opencode",
        "$ pitroom show --patch",
        "$ pitroom review ",
        " -W opencode:pitroom/scripted",
        "$ pitroom apply ",
        "$ pitroom -w -W opencode",
        "$ pitroom revert",
        "$ pitroom crew -g demo ",
        "$ pitroom watch -g demo --json --timeout 60",
        "$ pitroom savings",
    ] {
        assert!(stdout.contains(command), "{command} missing:\n{stdout}");
    }
    assert!(stdout.contains("refs: 1/2 verified"), "{stdout}");
    assert!(
        stdout.contains("calc.py:42 — file has 13 lines"),
        "{stdout}"
    );
    assert!(stdout.contains("model pitroom/scripted"), "{stdout}");
    // The scripted reviewer's verdict is parsed into the report, and its path:line checked.
    assert!(
        stdout
            .contains("── review: SPEC PASS · QUALITY APPROVED · critical 0, important 0, minor 1"),
        "{stdout}"
    );
    assert!(stdout.contains("- minor: test_calc.py:"), "{stdout}");
    assert!(stdout.contains("refs: 2/2 verified"), "{stdout}");
    assert!(stdout.contains("applied run"), "{stdout}");
    assert!(stdout.contains("reverted run"), "{stdout}");
    assert!(stdout.contains("\"event\":\"all-done\""), "{stdout}");
    assert!(stdout.contains("npm i -g opencode-ai"), "{stdout}");
    // The patch holds the worker's edit only, not the user's uncommitted README edit.
    assert!(stdout.contains("+    if b == 0:"), "{stdout}");
    assert!(!stdout.contains("diff --git a/README.md"), "{stdout}");

    // It cleans up after itself and never writes into HOME.
    let state = state_dir(&stdout);
    assert!(!state.exists(), "{} should be removed", state.display());
    let home_entries = std::fs::read_dir(world.path().join("home"))
        .expect("home")
        .count();
    assert_eq!(home_entries, 0, "the demo wrote into HOME");
    assert!(took < Duration::from_secs(30), "took {took:?}");
}

#[test]
fn demo_keep_leaves_its_state_dir_with_the_runs() {
    let (out, _world) = run_demo(&["--keep"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let state = state_dir(&stdout);
    let root = state.parent().expect("the demo's directory").to_path_buf();
    let runs: Vec<PathBuf> = std::fs::read_dir(state.join("runs"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    let with_records = runs
        .iter()
        .filter(|r| r.join("record.json").is_file())
        .count();
    let project_kept = root.join("calc").join("calc.py").is_file();
    let name = root
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_string();
    if name.starts_with("pitroom-demo-") {
        let _ = std::fs::remove_dir_all(&root);
    }
    // read, follow-up, isolate, review, write, three crew runs.
    assert!(runs.len() >= 8, "{} runs: {runs:?}\n{stdout}", runs.len());
    assert_eq!(with_records, runs.len(), "{runs:?}");
    assert!(project_kept, "{stdout}");
    assert!(stdout.contains("Kept (--keep)"), "{stdout}");
}

#[test]
fn scripted_worker_speaks_opencode_json_through_its_link_name() {
    let dir = tempfile::tempdir().expect("temp dir");
    let worker = dir.path().join("pitroom-scripted-worker");
    std::os::unix::fs::symlink(PITROOM, &worker).expect("link");
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).expect("work dir");
    let script = dir.path().join("script.json");
    std::fs::write(
        &script,
        serde_json::json!({"by_prompt": [
            {"contains": "map", "actions": [{"text": "not this one"}]},
            {"contains": "fix", "actions": [
                {"tool": {"name": "read", "input": {"filePath": "a.py"}}},
                {"step": {"input": 100, "output": 7}},
                {"write": {"path": "a.py", "content": "x = 1\n"}},
                {"tool": {"name": "edit", "input": {"filePath": "a.py"}}},
                {"text": "SUMMARY: fixed"}
            ]}
        ]})
        .to_string(),
    )
    .expect("script");
    let mut child = Command::new(&worker)
        .args(["run", "--format", "json", "--dir"])
        .arg(&work)
        .env_clear()
        .env("PITROOM_DEMO_SCRIPT", &script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the worker starts");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(b"please fix a.py")
        .expect("prompt");
    let out = child.wait_with_output().expect("the worker ends");
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert_eq!(
        std::fs::read_to_string(work.join("a.py")).ok().as_deref(),
        Some("x = 1\n")
    );
    let events: Vec<WorkerEvent> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .flat_map(|l| OpenCode.parse_line(l))
        .collect();
    assert!(matches!(&events[0], WorkerEvent::Session { id } if id.starts_with("ses_scripted")));
    let rest: Vec<&WorkerEvent> = events
        .iter()
        .filter(|e| !matches!(e, WorkerEvent::Session { .. }))
        .collect();
    assert_eq!(rest.len(), 5, "{rest:?}");
    assert!(
        matches!(rest[0], WorkerEvent::ToolCall { name, outcome: ToolOutcome::Ok, edited: None, .. } if name == "read")
    );
    assert_eq!(rest[1], &WorkerEvent::StepStarted);
    assert!(
        matches!(rest[2], WorkerEvent::StepFinished { usage: Some(u), .. } if u.input == 100 && u.output == 7)
    );
    assert!(matches!(rest[3], WorkerEvent::ToolCall { edited: Some(f), .. } if f == "a.py"));
    assert!(matches!(rest[4], WorkerEvent::Text { text, .. } if text == "SUMMARY: fixed"));

    // Without a script it says what is missing, and fails.
    let out = Command::new(&worker)
        .env_clear()
        .stdin(Stdio::null())
        .output()
        .expect("the worker starts");
    assert_eq!(code(&out), 2);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("PITROOM_DEMO_SCRIPT is not set"),
        "{}",
        text(&out)
    );
}
