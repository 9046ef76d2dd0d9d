//! `pitroom doctor --probe [worker…]`: a real read run through each worker, with the fake
//! worker standing in for OpenCode and picking its answer by `--model`.

use std::path::PathBuf;

use serde_json::{json, Value};

use super::common::{assert_some_line, code, fake_env, stdout, str_has, text};

const TASK: &str = "Reply with exactly the word PITROOM-PROBE-OK";

/// Scripts per model: `good/model` answers the word, `bad/model` fails as a provider error,
/// `chatty/model` reports its model in its events and answers something else.
fn workers() -> Value {
    json!({"by_model": {
        "good/model": [{"step": {"input": 120, "output": 4}}, {"text": "PITROOM-PROBE-OK"}],
        "bad/model": [
            {"error": {"name": "UnknownError", "data": {"message": "Model bad/model is not available for this key"}}},
            {"exit": 1}
        ],
        "chatty/model": [
            {"raw": "{\"type\":\"system\",\"subtype\":\"init\",\"model\":\"chatty-model-2026\"}\n"},
            {"text": "Hello! How can I help you today?"}
        ]
    }})
}

/// `doctor --probe ARGS --json`: the exit code and the probes, in order.
fn probe_json(env: &pitroom_testkit::TestEnv, args: &[&str]) -> (i32, Vec<Value>, String) {
    let dir = env.dir("anywhere");
    let mut argv = vec!["doctor", "--probe", "--json"];
    argv.extend(args);
    let out = env.run(&dir, &argv);
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("doctor --probe --json: {e}\n{}", text(&out)));
    let probes = v["probes"].as_array().cloned().unwrap_or_default();
    (code(&out), probes, text(&out))
}

fn record_of(env: &pitroom_testkit::TestEnv, probe: &Value) -> Value {
    let run = probe["run"].as_str().expect("the probe names its run");
    let path = env.state.join("runs").join(run).join("record.json");
    serde_json::from_slice(&std::fs::read(&path).expect("the probe's run is in the state dir"))
        .expect("record")
}

/// Checks that `doctor --probe` exited 3 having probed `workers` in that order, the first of
/// them failing (`default`: whether it is the default worker); returns that first probe.
fn failed_first<'a>(
    (exit, probes, all): &'a (i32, Vec<Value>, String),
    workers: [&str; 2],
    default: bool,
) -> &'a Value {
    assert_eq!(*exit, 3, "{all}");
    let probed: Vec<&str> = probes.iter().filter_map(|p| p["worker"].as_str()).collect();
    assert_eq!(probed, workers, "{all}");
    let first = &probes[0];
    assert_eq!(first["ok"], false, "{first:#}");
    assert_eq!(first["default"], default, "{first:#}");
    first
}

#[test]
fn probe_of_a_worker_that_answers_the_word_is_ok_with_its_model_and_a_real_run() {
    let mut env = fake_env(workers());
    env.set("PITROOM_WORKER", "opencode:good/model");
    let (exit, probes, all) = probe_json(&env, &[]);
    assert_eq!(exit, 0, "{all}");
    assert_eq!(probes.len(), 1, "{all}");
    let p = &probes[0];
    assert_eq!(p["worker"], "opencode:good/model", "{p:#}");
    assert_eq!(p["ok"], true, "{p:#}");
    assert_eq!(p["default"], true, "{p:#}");
    assert_eq!(p["error"], Value::Null, "{p:#}");
    assert_eq!(p["model"], "good/model", "{p:#}");
    assert_eq!(p["model_from"], "requested", "{p:#}");
    assert!(p["seconds"].as_f64().is_some(), "{p:#}");

    // A real read run in the user's state dir, in a temporary repository that is gone now.
    let record = record_of(&env, p);
    assert_eq!(record["state"], "done", "{record:#}");
    assert_eq!(record["spec"]["mode"], "read", "{record:#}");
    assert_eq!(record["spec"]["task"], TASK, "{record:#}");
    let repo = PathBuf::from(record["spec"]["dir"].as_str().expect("dir"));
    assert!(
        repo.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("pitroom-probe-")),
        "{}",
        repo.display()
    );
    assert!(!repo.exists(), "{} should be removed", repo.display());
}

#[test]
fn probe_of_a_failing_default_worker_reports_its_error_and_exits_3() {
    let mut env = fake_env(workers());
    env.set("PITROOM_WORKER", "opencode:bad/model");
    env.set("PITROOM_FALLBACK", "opencode:good/model");
    let probed = probe_json(&env, &[]);
    let (_, probes, all) = &probed;
    let bad = failed_first(&probed, ["opencode:bad/model", "opencode:good/model"], true);
    assert_eq!(bad["essential"], true, "{bad:#}");
    assert!(
        str_has(
            &bad["error"],
            "Model bad/model is not available for this key"
        ),
        "{bad:#}"
    );
    assert_eq!(probes[1]["ok"], true, "{all}");
    assert_eq!(probes[1]["default"], false, "{all}");

    // The same, as a person reads it.
    let stdout = stdout(&env.run_expecting(&env.dir("anywhere"), &["doctor", "--probe"], 3));
    assert_some_line(&stdout, |l| {
        l.starts_with("✘ opencode:bad/model failed")
            && l.contains("Model bad/model is not available for this key")
    });
    assert_some_line(&stdout, |l| {
        l.starts_with("✔ opencode:good/model ok") && l.contains("model good/model")
    });
}

#[test]
fn a_failing_fallback_target_is_reported_without_failing_doctor() {
    let mut env = fake_env(workers());
    env.set("PITROOM_WORKER", "opencode:good/model");
    env.set(
        "PITROOM_FALLBACK",
        "opencode:bad/model, opencode:good/model",
    );
    let (exit, probes, all) = probe_json(&env, &[]);
    assert_eq!(exit, 0, "{all}");
    // The default named again as a fallback is probed once.
    assert_eq!(probes.len(), 2, "{all}");
    assert_eq!(probes[1]["worker"], "opencode:bad/model", "{all}");
    assert_eq!(probes[1]["ok"], false, "{all}");
    assert_eq!(probes[1]["essential"], false, "{all}");
}

#[test]
fn probe_json_has_one_entry_per_named_worker_with_the_model_it_asked_for_when_none_was_reported() {
    let mut env = fake_env(workers());
    env.set("PITROOM_WORKER", "opencode:good/model");
    let probed = probe_json(
        &env,
        &[
            "opencode:chatty/model",
            "opencode:good/model",
            "opencode:chatty/model",
        ],
    );
    let (_, probes, all) = &probed;
    // A named worker that fails counts like the default.
    let chatty = failed_first(
        &probed,
        ["opencode:chatty/model", "opencode:good/model"],
        false,
    );
    assert_eq!(
        chatty["error"], "answered without PITROOM-PROBE-OK: Hello! How can I help you today?",
        "{chatty:#}"
    );
    // The chatty stand-in prints a Claude-style init line that OpenCode never writes: the
    // OpenCode adapter does not take it for the model (only what the adapter reads counts).
    assert_eq!(chatty["model"], "chatty/model", "{chatty:#}");
    assert_eq!(chatty["model_from"], "requested", "{chatty:#}");
    assert_eq!(probes[1]["ok"], true, "{all}");
    assert_eq!(probes[1]["default"], true, "{all}");
}

#[test]
fn workers_without_probe_are_a_usage_error() {
    let env = fake_env(workers());
    env.run_expecting(&env.dir("anywhere"), &["doctor", "opencode"], 2);
}
