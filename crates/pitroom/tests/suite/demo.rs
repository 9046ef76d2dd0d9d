//! `pitroom demo`: the whole pipeline with the built-in scripted worker, on a machine with
//! nothing but git — and the scripted worker's stream, as Pitroom's OpenCode parser reads it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Instant;

use pitroom_testkit::real_cli::{self, NpmCli};
use pitroom_workers::{opencode::OpenCode, ToolOutcome, WorkerEvent};

use super::common::output_with_stdin;
use super::common::{assert_exit, assert_stdout_has, code, text, PITROOM};

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
    assert_exit(&out, 0);
    let stdout = String::from_utf8_lossy(&out.stdout);

    let headers: Vec<&str> = stdout.lines().filter(|l| l.starts_with('▶')).collect();
    assert_eq!(headers.len(), 8, "{stdout}");
    for (header, stage) in headers.iter().zip([
        "read",
        "isolate",
        "review + apply",
        "write + revert",
        "crew + watch",
        "repair round",
        "race",
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
        " --attempts 2 ",
        "$ pitroom run --race opencode:pitroom/quick,opencode:pitroom/careful ",
        "$ pitroom savings",
    ] {
        assert_stdout_has(&out, command);
    }
    // The repair round: the check failed after round 1 and passed after round 2.
    assert_stdout_has(
        &out,
        "1. opencode:pitroom/scripted: verify failed (exit 1) → round 2",
    );
    assert_stdout_has(&out, "── verify: ✔ passed");
    assert_stdout_has(&out, "on round 2 of 2: while IFS= read -r line;");
    // The race: the careful contender wins, and `apply` lands it.
    assert_stdout_has(&out, "1. opencode:pitroom/careful (");
    assert_stdout_has(
        &out,
        "the only contender that finished with changes and a passing check (opencode:pitroom/quick did not)",
    );
    assert_stdout_has(&out, "refs: 1/2 verified");
    assert_stdout_has(&out, "calc.py:42 — file has 13 lines");
    assert_stdout_has(&out, "model pitroom/scripted");
    // The scripted reviewer's verdict is parsed into the report, and its path:line checked.
    assert_stdout_has(
        &out,
        "── review: SPEC PASS · QUALITY APPROVED · critical 0, important 0, minor 1",
    );
    assert_stdout_has(&out, "- minor: test_calc.py:");
    assert_stdout_has(&out, "refs: 2/2 verified");
    assert_stdout_has(&out, "applied run");
    assert_stdout_has(&out, "reverted run");
    assert_stdout_has(&out, "\"event\":\"all-done\"");
    assert_stdout_has(&out, "npm i -g opencode-ai");
    // The patch holds the worker's edit only, not the user's uncommitted README edit.
    assert_stdout_has(&out, "+    if b == 0:");
    assert!(!stdout.contains("diff --git a/README.md"), "{stdout}");

    // It cleans up after itself and never writes into HOME.
    let state = state_dir(&stdout);
    assert!(!state.exists(), "{} should be removed", state.display());
    let home_entries = std::fs::read_dir(world.path().join("home"))
        .expect("home")
        .count();
    assert_eq!(home_entries, 0, "the demo wrote into HOME");
    eprintln!("the demo took {took:?}");
}

#[test]
fn demo_keep_leaves_its_state_dir_with_the_runs() {
    let (out, _world) = run_demo(&["--keep"]);
    assert_exit(&out, 0);
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
    assert_stdout_has(&out, "Kept (--keep)");
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
    let out = output_with_stdin(
        Command::new(&worker)
            .args(["run", "--format", "json", "--dir"])
            .arg(&work)
            .env_clear()
            .env("PITROOM_DEMO_SCRIPT", &script),
        b"please fix a.py",
    );
    assert_exit(&out, 0);
    assert_eq!(
        std::fs::read_to_string(work.join("a.py")).ok().as_deref(),
        Some("x = 1\n")
    );
    let events: Vec<WorkerEvent> =
        pitroom_workers::parse_stream(&OpenCode, &String::from_utf8_lossy(&out.stdout));
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

/// The pinned real CLI in the test kit's cache (`.ci/run` installs it), if it is installed.
fn pinned(cli: &NpmCli) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(cli.override_var) {
        return Some(PathBuf::from(p));
    }
    let bin = real_cli::prefix(cli)
        .join("node_modules/.bin")
        .join(cli.bin);
    bin.is_file().then_some(bin)
}

/// `pitroom demo --worker CLI --keep` with a HOME, XDG dirs and TMPDIR of the test's own (all
/// empty), the real CLI named by `PITROOM_<CLI>_BIN`, and `path_first` before the test's PATH.
fn run_real_demo(
    cli: &str,
    bin: &Path,
    path_first: Option<PathBuf>,
) -> (Output, tempfile::TempDir) {
    let world = tempfile::Builder::new()
        .prefix("pitroom-demo-test-")
        .tempdir()
        .expect("temp dir");
    for dir in [
        "home",
        "tmp",
        "xdg-config",
        "xdg-data",
        "xdg-state",
        "xdg-cache",
    ] {
        std::fs::create_dir_all(world.path().join(dir)).expect("dir");
    }
    let rest = std::env::var_os("PATH").unwrap_or_default();
    let path = std::env::join_paths(path_first.into_iter().chain(std::env::split_paths(&rest)))
        .expect("PATH");
    let var = format!("PITROOM_{}_BIN", cli.to_ascii_uppercase());
    let w = world.path();
    let out = Command::new(PITROOM)
        .args(["demo", "--keep", "--worker", cli])
        .env_clear()
        .env("PATH", path)
        .env("HOME", w.join("home"))
        .env("TMPDIR", w.join("tmp"))
        .env("XDG_CONFIG_HOME", w.join("xdg-config"))
        .env("XDG_DATA_HOME", w.join("xdg-data"))
        .env("XDG_STATE_HOME", w.join("xdg-state"))
        .env("XDG_CACHE_HOME", w.join("xdg-cache"))
        .env(var, bin)
        .current_dir(w)
        .stdin(Stdio::null())
        .output()
        .expect("pitroom demo runs");
    (out, world)
}

/// Every run record the demo left, by task.
fn records(state: &Path) -> Vec<(serde_json::Value, PathBuf)> {
    std::fs::read_dir(state.join("runs"))
        .expect("runs")
        .flatten()
        .map(|e| e.path())
        .filter_map(|dir| {
            let text = std::fs::read_to_string(dir.join("record.json")).ok()?;
            Some((serde_json::from_str(&text).expect("a record"), dir))
        })
        .collect()
}

/// What `pitroom demo --worker CLI` must show: every stage run by the real CLI against the
/// scripted model, the answers and edits through the CLI's own tools, nothing written outside
/// the demo's temporary directory.
fn check_real_demo(cli: &str, edit_tool: &str, out: &Output, world: &Path) {
    assert_exit(out, 0);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let headers: Vec<&str> = stdout.lines().filter(|l| l.starts_with('▶')).collect();
    assert_eq!(headers.len(), 6, "{stdout}");
    for header in &headers {
        assert!(
            header.contains(&format!(
                "{cli} (the real CLI) · model: scripted, not a model"
            )),
            "{header}"
        );
    }
    assert_stdout_has(out, "(scripted, not a model)");
    for command in [
        format!("$ pitroom -W {cli} -m "),
        "$ pitroom run --continue last ".into(),
        format!("$ pitroom -i -W {cli}"),
        format!("$ pitroom -w -W {cli}"),
        "$ pitroom savings".into(),
    ] {
        assert_stdout_has(out, &command);
    }
    assert_stdout_has(out, "refs: 1/2 verified");
    assert_stdout_has(out, "calc.py:42 — file has 13 lines");
    assert_stdout_has(
        out,
        "── review: SPEC PASS · QUALITY APPROVED · critical 0, important 0, minor 1",
    );
    assert_stdout_has(out, "applied run");
    assert_stdout_has(out, "reverted run");
    assert_stdout_has(
        out,
        "{\"event\":\"all-done\",\"runs\":3,\"ok\":3,\"failed\":0}",
    );
    assert_stdout_has(out, "+    if b == 0:");
    assert!(!stdout.contains("diff --git a/README.md"), "{stdout}");

    let state = state_dir(&stdout);
    let root = state.parent().expect("the demo's directory").to_path_buf();
    let runs = records(&state);
    let by_task = |task: &str| {
        runs.iter()
            .find(|(r, _)| r["spec"]["task"] == task)
            .unwrap_or_else(|| panic!("no run of {task:?}"))
    };
    // The read answer came from the real CLI: its own session id, its own tool calls, on the
    // ids the scripted model gave them.
    let (read, read_dir) = by_task("Where can divide fail?");
    assert_eq!(read["spec"]["backend"], cli, "{read:#}");
    let session = read["session"].as_str().expect("a session id");
    assert!(!session.starts_with("ses_scripted"), "{session}");
    assert!(read["tally"]["tool_calls"].as_u64() >= Some(1), "{read:#}");
    let events = std::fs::read_to_string(read_dir.join("events.jsonl")).expect("events");
    assert!(events.contains(session), "{events}");
    assert!(events.contains("chatcmpl-pitroom-demo-"), "{events}");
    // The isolated edit went through the CLI's edit tool, and only calc.py changed.
    let (isolated, isolated_dir) = by_task("Add a zero check to divide()");
    assert_eq!(isolated["changes"][0]["path"], "calc.py", "{isolated:#}");
    assert_eq!(isolated["changes"].as_array().map(Vec::len), Some(1));
    let events = std::fs::read_to_string(isolated_dir.join("events.jsonl")).expect("events");
    assert!(
        events.lines().any(|l| l.contains("chatcmpl-pitroom-demo-")
            && l.contains(&format!("\"{edit_tool}\""))
            && l.contains("raise ValueError")),
        "no {edit_tool} call of the scripted model's in:\n{events}"
    );
    // Applied, then the docstring written and reverted: the sample ends with the zero check.
    let calc = std::fs::read_to_string(root.join("calc/calc.py")).expect("calc.py");
    assert!(calc.contains("raise ValueError"), "{calc}");
    assert!(!calc.contains("\"\"\"Return a / b"), "{calc}");
    // The CLI's config and state went into the demo's own HOME.
    assert!(root.join("home/.config").is_dir(), "{}", root.display());

    // Nothing outside the demo's directory: HOME and the XDG dirs are empty, and TMPDIR holds
    // the demo's directory only.
    for dir in ["home", "xdg-config", "xdg-data", "xdg-state", "xdg-cache"] {
        let entries: Vec<_> = std::fs::read_dir(world.join(dir))
            .expect("dir")
            .flatten()
            .map(|e| e.path())
            .collect();
        assert!(entries.is_empty(), "the demo wrote into {dir}: {entries:?}");
    }
    let in_tmp: Vec<PathBuf> = std::fs::read_dir(world.join("tmp"))
        .expect("tmp")
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(
        in_tmp,
        vec![root.clone()],
        "TMPDIR holds more than the demo's directory"
    );
    std::fs::remove_dir_all(&root).expect("the kept demo directory is removed");
}

/// Whether a real CLI's demo tour puts the pinned Node 22 first on its `PATH`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Node22 {
    /// The CLI brings its own runtime.
    Unused,
    /// Node 22 when it is installed.
    IfInstalled,
    /// The CLI needs Node 22: without it the tour is skipped.
    Required,
}

/// The demo's whole tour through the pinned `cli` (`name` in messages) as `--worker worker`,
/// checked with `edit_tool` as its edit tool; skipped, saying so, when the CLI (or the Node 22
/// it requires) is not installed.
fn tour_through_the_real_cli(
    worker: &str,
    name: &str,
    cli: &NpmCli,
    node: Node22,
    edit_tool: &str,
) {
    let Some(bin) = pinned(cli) else {
        eprintln!(
            "skipped: the pinned {name} is not installed in {} (.ci/run installs it)",
            real_cli::prefix(cli).display()
        );
        return;
    };
    let node_dir = match node {
        Node22::Unused => None,
        Node22::IfInstalled | Node22::Required => {
            pinned(&real_cli::NODE22).and_then(|n| n.parent().map(Path::to_path_buf))
        }
    };
    if node == Node22::Required && node_dir.is_none() {
        eprintln!(
            "skipped: the pinned Node 22 for {name} is not installed in {} (.ci/run installs it)",
            real_cli::prefix(&real_cli::NODE22).display()
        );
        return;
    }
    let (out, world) = run_real_demo(worker, &bin, node_dir);
    check_real_demo(worker, edit_tool, &out, world.path());
}

#[test]
fn demo_worker_opencode_runs_every_stage_through_the_real_cli() {
    tour_through_the_real_cli(
        "opencode",
        "OpenCode",
        &real_cli::OPENCODE,
        Node22::Unused,
        "edit",
    );
}

#[test]
fn demo_worker_qwen_runs_every_stage_through_the_real_cli() {
    tour_through_the_real_cli(
        "qwen",
        "Qwen Code",
        &real_cli::QWEN,
        Node22::Required,
        "edit",
    );
}

#[test]
fn demo_worker_names_the_backends_it_drives_and_a_missing_cli() {
    for (worker, expected) in [
        (
            "codex",
            "speaks only the OpenAI chat-completions and Anthropic Messages protocols so far",
        ),
        ("nosuch", "not a worker CLI the demo can drive"),
    ] {
        let (out, _world) = run_demo(&["--worker", worker]);
        assert_exit(&out, 2);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(expected), "{stderr}");
        assert!(stderr.contains("opencode, kilo, qwen, claude"), "{stderr}");
        assert!(out.stdout.is_empty(), "{}", text(&out));
    }
    // opencode is not on the PATH `run_demo` gives (git only).
    let (out, _world) = run_demo(&["--worker", "opencode"]);
    assert_exit(&out, 3);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("PITROOM_OPENCODE_BIN"), "{stderr}");
}

/// Kilo takes 12–15 s and ~830 MB per start: the slowest of the three, one tour only.
#[test]
fn demo_worker_kilo_runs_every_stage_through_the_real_cli() {
    tour_through_the_real_cli("kilo", "Kilo Code", &real_cli::KILO, Node22::Unused, "edit");
}

/// Claude Code speaks Anthropic Messages: the same tour through the server's other protocol.
#[test]
fn demo_worker_claude_runs_every_stage_through_the_real_cli() {
    tour_through_the_real_cli(
        "claude",
        "Claude Code",
        &real_cli::CLAUDE,
        Node22::IfInstalled,
        "Edit",
    );
}
