//! Shared helpers for the integration tests.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use pitroom_testkit::TestEnv;
use serde_json::Value;

/// The least time `eventually` waits for a condition.
const PATIENCE: Duration = Duration::from_secs(60);

pub const PITROOM: &str = env!("CARGO_BIN_EXE_pitroom");

/// The fake worker binary (`testing/fake_worker.rs`, built by cargo for this package's tests).
pub fn fake_worker() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_pitroom-fake-worker"))
}

/// A test environment whose OpenCode is the fake worker running `script`.
pub fn fake_env(script: Value) -> TestEnv {
    let mut env = TestEnv::new(Path::new(PITROOM));
    env.set("PITROOM_OPENCODE_BIN", fake_worker().display().to_string());
    env.set("PITROOM_FAKE_SCRIPT", script.to_string());
    // Where the fake worker records its invocations: a dir of the test's, opened to workers.
    let records = env.dir(FAKE_RECORDS);
    env.set("PITROOM_SANDBOX_WRITABLE", records.display().to_string());
    env
}

/// The dir, in a [`fake_env`], the fake worker may record its invocations in.
const FAKE_RECORDS: &str = "fake-records";

/// A fake worker's script: each of `commands` as a shell call, then the answer `answer`.
pub fn shell_script<'a>(commands: impl IntoIterator<Item = &'a str>, answer: &str) -> Value {
    let mut script: Vec<Value> = commands
        .into_iter()
        .map(|c| serde_json::json!({"sh": c}))
        .collect();
    script.push(serde_json::json!({"text": answer}));
    Value::Array(script)
}

/// A test environment whose fake worker starts `MARKER; true` as a background job, makes a
/// step and then hangs for a minute: a run with a process of its own to outlive it.
pub fn background_job_env(marker: &str) -> TestEnv {
    fake_env(serde_json::json!([
        {"spawn_bg": format!("{marker}; true")},
        {"step": {"input": 5, "output": 1}},
        {"sleep_ms": 60000}
    ]))
}

/// Where the fake worker records its invocation (`PITROOM_FAKE_RECORD`): in the dir a
/// [`fake_env`] opens to workers (`sandbox_writable`), one file per backend.
pub fn invocation_file(env: &TestEnv, backend: &str) -> PathBuf {
    env.root
        .join(FAKE_RECORDS)
        .join(format!("{backend}-invocation.json"))
}

/// A [`fake_env`] whose fake worker records each OpenCode invocation (read it with
/// [`recorded_invocation`]).
pub fn recording_env(script: Value) -> TestEnv {
    let mut env = fake_env(script);
    record_invocations(&mut env, "opencode");
    env
}

/// Has the fake worker record its invocations as `backend` (`PITROOM_FAKE_RECORD`); returns
/// the file it records to.
pub fn record_invocations(env: &mut TestEnv, backend: &str) -> PathBuf {
    let file = invocation_file(env, backend);
    env.set("PITROOM_FAKE_RECORD", file.display().to_string());
    file
}

/// The last invocation the fake worker recorded in `file`.
pub fn recorded(file: &Path) -> Value {
    let raw = std::fs::read_to_string(file).expect("the fake worker recorded its invocation");
    serde_json::from_str(&raw).expect("json")
}

/// The last OpenCode invocation the fake worker recorded.
pub fn recorded_invocation(env: &TestEnv) -> Value {
    recorded(&invocation_file(env, "opencode"))
}

/// The prompt of the last OpenCode invocation the fake worker recorded.
pub fn recorded_prompt(env: &TestEnv) -> String {
    recorded_invocation(env)["prompt"]
        .as_str()
        .expect("prompt")
        .to_string()
}

/// The arguments a recorded invocation ran the CLI with.
pub fn args_of(call: &Value) -> Vec<&str> {
    call["args"]
        .as_array()
        .expect("args")
        .iter()
        .filter_map(Value::as_str)
        .collect()
}

/// Gives the fake worker another script for the commands that follow.
pub fn use_script(env: &mut TestEnv, script: Value) {
    env.set("PITROOM_FAKE_SCRIPT", script.to_string());
}

/// The run id a `--bg` run printed.
pub fn bg_id(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Asserts some line of `shown` satisfies `pred`, showing the text when none does.
#[track_caller]
pub fn assert_some_line(shown: &str, pred: impl Fn(&str) -> bool) {
    assert!(shown.lines().any(pred), "{shown}");
}

/// The run record printed by `--json`, or the latest one on disk.
pub fn record(env: &TestEnv, dir: &Path) -> Value {
    let out = env.run(dir, &["show", "--json"]);
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("show --json: {e}: {}", String::from_utf8_lossy(&out.stdout)))
}

/// The record of run `id` (`show ID --json`).
pub fn show(env: &TestEnv, dir: &Path, id: &str) -> Value {
    let out = env.run(dir, &["show", id, "--json"]);
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)))
}

/// Whether `value` is a string that contains `needle`.
pub fn str_has(value: &Value, needle: &str) -> bool {
    value.as_str().is_some_and(|s| s.contains(needle))
}

/// The id of the latest run in `dir`.
pub fn last_id(env: &TestEnv, dir: &Path) -> String {
    record(env, dir)["id"].as_str().expect("id").to_string()
}

/// The paths a record's `changes` name, in order.
pub fn changed(record: &Value) -> Vec<&str> {
    record["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .filter_map(|c| c["path"].as_str())
        .collect()
}

pub use pitroom_testkit::env::{
    assert_exit, assert_stderr_has, assert_stdout_has, exit_code as code, json_stdout, stderr,
    stdout, transcript as text,
};

/// Polls `check` until it holds or the patience runs out. The limit is patience, not a budget:
/// it is never less than a minute, because a loaded machine is slow and a test must not fail
/// for that; how long things take is the benchmarks' business. Returns whether it held.
pub fn eventually(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit.max(PATIENCE);
    while Instant::now() < deadline {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    check()
}

/// Pids of live processes whose `/proc/<pid>/<file>` (`cmdline`, `environ`) contains `needle`,
/// this test process excepted.
fn processes_where(file: &str, needle: &str) -> Vec<i32> {
    let me = std::process::id() as i32;
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()))
        .filter(|pid| *pid != me)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/{file}")).is_ok_and(|raw| {
                String::from_utf8_lossy(&raw)
                    .replace('\0', " ")
                    .contains(needle)
            })
        })
        .filter(|pid| pitroom_proc::is_running(*pid))
        .collect()
}

/// Pids of processes whose command line contains `needle`.
pub fn processes_with_cmdline(needle: &str) -> Vec<i32> {
    processes_where("cmdline", needle)
}

/// Pids of processes whose environment mentions `needle` (the test's own state dir).
pub fn processes_with_env(needle: &str) -> Vec<i32> {
    processes_where("environ", needle)
}

/// The fake worker's shell calls in the latest run in `repo`, as its event stream has them:
/// (command, exit code, output).
pub fn shell_calls(env: &TestEnv, repo: &Path) -> Vec<(String, i64, String)> {
    let events = env.run(repo, &["show", "--events"]);
    String::from_utf8_lossy(&events.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "tool_use")
        .map(|v| {
            let state = &v["part"]["state"];
            (
                state["input"]["command"].as_str().unwrap_or("").to_string(),
                state["metadata"]["exit"].as_i64().unwrap_or(-1),
                state["output"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

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
