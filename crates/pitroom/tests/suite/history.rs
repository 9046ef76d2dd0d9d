//! The ledger and its commands on the fake worker: history, history stats/import, savings (and
//! its card), clean, worker_prices, and a damaged database that must never fail a run.

use std::path::Path;
use std::time::Duration;

use pitroom_testkit::repo::dirty_repo;
use pitroom_testkit::TestEnv;
use serde_json::{json, Value};

use super::common::{
    assert_some_line, assert_stderr_has, assert_stdout_has, bg_id, code, eventually, fake_env,
    json_stdout, last_id, record, stdout, text, use_script,
};

fn script(answer: &str, tool_pattern: &str) -> Value {
    json!([
        {"tool": "grep", "input": {"pattern": tool_pattern}},
        {"step": {"input": 20000, "output": 1000, "cost": 0.002}},
        {"text": answer},
        {"step": {"input": 1000, "output": 100, "reason": "stop", "cost": 0.001}}
    ])
}

fn json_of(env: &TestEnv, dir: &Path, args: &[&str]) -> Value {
    let out = env.run(dir, args);
    assert_eq!(code(&out), 0, "{args:?}: {}", text(&out));
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{args:?} --json: {e}: {}", text(&out)))
}

fn ids(v: &Value) -> Vec<String> {
    v["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect()
}

/// Makes a run look as if it ended long ago.
fn age(env: &TestEnv, id: &str) {
    let path = env.state.join("runs").join(id).join("record.json");
    let mut r: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    for k in ["created_at", "started_at", "ended_at"] {
        r[k] = json!("2020-01-01T00:00:00Z");
    }
    std::fs::write(&path, serde_json::to_vec_pretty(&r).unwrap()).unwrap();
}

#[test]
fn finished_runs_are_in_the_ledger_and_searchable_by_task_answer_and_steps() {
    let mut env = fake_env(script(
        "SUMMARY: the cookie parser is in a.rs",
        "frobnicate",
    ));
    let repo = dirty_repo(&env, "repo");
    env.run_expecting(&repo, &["Where is the cookie parsed?"], 0);
    assert!(
        env.state.join("history.sqlite").is_file(),
        "written when the run ended, not lazily"
    );
    let first = last_id(&env, &repo);
    use_script(
        &mut env,
        script("SUMMARY: the router lives in b.rs", "quuxify"),
    );
    env.run_expecting(&repo, &["Explain the request router"], 0);
    let second = last_id(&env, &repo);

    assert_eq!(
        ids(&json_of(&env, &repo, &["history", "--json"])),
        vec![second.clone(), first.clone()]
    );
    assert_eq!(
        ids(&json_of(&env, &repo, &["history", "cookie", "--json"])),
        vec![first.clone()],
        "task"
    );
    assert_eq!(
        ids(&json_of(
            &env,
            &repo,
            &["history", "router", "b.rs", "--json"]
        )),
        vec![second.clone()],
        "answer"
    );
    assert_eq!(
        ids(&json_of(&env, &repo, &["history", "quux", "--json"])),
        vec![second.clone()],
        "steps, by prefix"
    );
    assert!(ids(&json_of(
        &env,
        &repo,
        &["history", "--state", "failed", "--json"]
    ))
    .is_empty());
    assert_eq!(
        ids(&json_of(
            &env,
            &repo,
            &["history", "--since", "1d", "-n", "1", "--json"]
        ))
        .len(),
        1
    );
    let shown = stdout(&env.run(&repo, &["history", "cookie"]));
    assert!(
        shown.contains(&first) && shown.contains("[cookie]"),
        "{shown}"
    );

    let stats = json_of(&env, &repo, &["history", "stats", "--json"]);
    let w = &stats["workers"][0];
    assert_eq!(w["worker"], "opencode");
    assert_eq!(w["runs"], 2);
    assert_eq!(w["success_rate"], 1.0);
    assert_eq!(w["tokens"], 2 * 22100);
    assert!((w["cost"].as_f64().unwrap() - 0.006).abs() < 1e-9, "{w}");
}

#[test]
fn a_damaged_history_database_never_fails_a_run_and_is_rebuilt_on_read() {
    let env = fake_env(script("SUMMARY: ok", "x"));
    let repo = dirty_repo(&env, "repo");
    std::fs::write(env.state.join("history.sqlite"), vec![b'z'; 4096]).unwrap();
    let out = env.run_expecting(&repo, &["Survive a broken ledger"], 0);
    // A warning says how to fix it.
    assert_stderr_has(&out, "history import");
    let id = last_id(&env, &repo);

    let out = env.run_expecting(&repo, &["history", "broken", "--json"], 0);
    assert_stderr_has(&out, "damaged-");
    let found = json_stdout(&out);
    assert_eq!(ids(&found), vec![id]);
}

#[test]
fn a_background_runs_ledger_problem_is_told_in_its_own_run_log() {
    let mut env = fake_env(script("SUMMARY: ok", "x"));
    env.set(pitroom_core::log::LOG_ENV, "debug");
    let repo = dirty_repo(&env, "repo");
    // A directory where the database goes: no ledger row can be written.
    std::fs::create_dir_all(env.state.join("history.sqlite").join("in-the-way")).unwrap();
    let id = bg_id(&env.run_expecting(&repo, &["--bg", "Survive an unwritable ledger"], 0));
    let done = env.run(&repo, &["wait", &id, "--timeout", "120"]);
    assert_eq!(code(&done), 0, "the run itself is fine: {}", text(&done));
    // The detached supervisor writes the line after it closed the record, which `wait` saw.
    let log = env
        .state
        .join("runs")
        .join(&id)
        .join(pitroom_core::log::RUN_LOG);
    let told = eventually(Duration::from_secs(60), || {
        std::fs::read_to_string(&log).is_ok_and(|l| l.contains("history import"))
    });
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(told, "the run log says how to rebuild the history: {text}");
    assert!(text.contains("WARN"), "{text}");
}

#[test]
fn a_deleted_database_is_rebuilt_lazily_and_by_history_import() {
    let env = fake_env(script("SUMMARY: ok", "x"));
    let repo = dirty_repo(&env, "repo");
    for task in ["first task", "second task"] {
        env.run_expecting(&repo, &[task], 0);
    }
    let db = env.state.join("history.sqlite");
    std::fs::remove_file(&db).unwrap();
    // A reading command notices the missing database and imports lazily.
    assert_eq!(ids(&json_of(&env, &repo, &["history", "--json"])).len(), 2);
    std::fs::remove_file(&db).unwrap();
    let report = json_of(&env, &repo, &["history", "import", "--json"]);
    assert_eq!(report["import"]["imported"], 2, "{report}");
    assert_eq!(
        ids(&json_of(&env, &repo, &["history", "second", "--json"])).len(),
        1
    );
}

#[test]
fn worker_prices_price_a_cli_that_reports_no_cost_and_say_it_is_an_estimate() {
    let env = fake_env(json!([
        {"step": {"input": 1000000, "output": 100000, "cost": null}},
        {"text": "SUMMARY: priced"},
    ]));
    std::fs::write(
        env.root.join("pitroom.toml"),
        "[worker_prices]\n\"opencode\" = { input = 0.5, output = 1.5 }\n",
    )
    .unwrap();
    let repo = dirty_repo(&env, "repo");
    let out = env.run_expecting(&repo, &["price me"], 0);
    assert_stdout_has(
        &out,
        "worker cost ~$0.650 (estimated from your worker_prices)",
    );
    let r = record(&env, &repo);
    assert!(
        (r["receipt"]["cost"].as_f64().unwrap() - 0.65).abs() < 1e-9,
        "{r}"
    );
    assert!(
        r["tally"]["cost"].is_null(),
        "the CLI's own figure stays unknown"
    );
    let s = json_of(&env, &repo, &["savings", "--since", "all", "--json"]);
    assert_eq!(s["periods"][0]["cost_estimated_runs"], 1, "{s}");
    assert!((s["periods"][0]["worker_cost"].as_f64().unwrap() - 0.65).abs() < 1e-9);
}

#[test]
fn a_background_run_is_priced_with_the_worker_prices_it_started_with() {
    let go = tempfile::tempdir().expect("scratch").keep().join("go");
    let env = fake_env(json!([
        {"wait_file": go.display().to_string()},
        {"step": {"input": 1000000, "output": 100000, "cost": null}},
        {"text": "SUMMARY: priced"},
    ]));
    let config = env.root.join("pitroom.toml");
    std::fs::write(
        &config,
        "[worker_prices]\n\"opencode\" = { input = 0.5, output = 1.5 }\n",
    )
    .unwrap();
    let repo = dirty_repo(&env, "repo");
    let id = bg_id(&env.run_expecting(&repo, &["--bg", "price me later"], 0));
    // The config changes while the run goes on; the run keeps the prices it started with.
    std::fs::write(
        &config,
        "[worker_prices]\n\"opencode\" = { input = 50, output = 150 }\n",
    )
    .unwrap();
    std::fs::write(&go, "").expect("go");
    env.run_expecting(&repo, &["wait", &id, "--timeout", "120"], 0);
    let r = record(&env, &repo);
    assert!(
        (r["receipt"]["cost"].as_f64().unwrap() - 0.65).abs() < 1e-9,
        "{r}"
    );
    assert_eq!(r["spec"]["worker_prices"]["opencode"]["input"], 0.5, "{r}");
}

#[test]
fn savings_add_up_per_period_and_model_and_write_an_svg_card() {
    let env = fake_env(script("SUMMARY: ok", "x"));
    let repo = dirty_repo(&env, "repo");
    for task in ["one", "two", "three"] {
        env.run_expecting(&repo, &[task], 0);
    }
    // The sum of what each run's own receipt estimated.
    let saved: f64 = std::fs::read_dir(env.state.join("runs"))
        .unwrap()
        .flatten()
        .map(|e| {
            let r: Value =
                serde_json::from_slice(&std::fs::read(e.path().join("record.json")).unwrap())
                    .unwrap();
            r["receipt"]["saved"].as_f64().unwrap()
        })
        .sum();
    let card = env.root.join("card.svg");
    let card_arg = card.display().to_string();
    let s = json_of(
        &env,
        &repo,
        &["savings", "--models", "--card", &card_arg, "--json"],
    );
    let periods = s["periods"].as_array().unwrap();
    assert_eq!(periods.len(), 3, "7d, 30d and all time");
    for p in periods {
        assert_eq!(p["runs"], 3);
        assert!((p["saved"].as_f64().unwrap() - saved).abs() < 1e-9, "{p}");
    }
    assert_eq!(periods[2]["per_model"][0]["worker"], "opencode");
    let svg = std::fs::read_to_string(&card).unwrap();
    assert!(
        svg.starts_with("<svg") && svg.contains("Delegated tasks"),
        "{svg}"
    );
    assert!(svg.contains(">3<"), "three delegated tasks on the card");

    let shown = stdout(&env.run(&repo, &["savings"]));
    assert!(
        shown.contains("7d") && shown.contains("30d") && shown.contains("all"),
        "{shown}"
    );
    assert!(shown.contains("estimates against Claude Sonnet"), "{shown}");
}

#[test]
fn clean_is_a_dry_run_by_default_and_never_removes_an_unapplied_isolated_patch() {
    let mut env = fake_env(script("SUMMARY: ok", "x"));
    let repo = dirty_repo(&env, "repo");
    env.run_expecting(&repo, &["old read"], 0);
    let old_read = last_id(&env, &repo);
    use_script(
        &mut env,
        json!([{"write": {"path": "new.txt", "content": "x\n"}}, {"text": "SUMMARY: edited"}]),
    );
    env.run_expecting(&repo, &["-i", "old isolated edit"], 0);
    let isolated = last_id(&env, &repo);
    use_script(&mut env, script("SUMMARY: ok", "x"));
    env.run_expecting(&repo, &["recent read"], 0);
    let recent = last_id(&env, &repo);
    age(&env, &old_read);
    age(&env, &isolated);

    let dry = json_of(&env, &repo, &["clean", "--days", "7", "--json"]);
    assert_eq!(dry["dry_run"], true);
    assert_eq!(dry["would_remove"], json!([old_read]));
    assert_eq!(dry["kept_unapplied_patches"], json!([isolated]));
    assert!(
        env.state.join("runs").join(&old_read).is_dir(),
        "a dry run removes nothing"
    );

    let done = json_of(&env, &repo, &["clean", "--days", "7", "--yes", "--json"]);
    assert_eq!(done["removed"], json!([old_read]));
    assert!(!env.state.join("runs").join(&old_read).exists());
    assert!(env.state.join("runs").join(&isolated).is_dir());
    assert!(env.state.join("runs").join(&recent).is_dir());

    // The ledger keeps the cleaned run, marked, so savings still count it.
    let all = json_of(&env, &repo, &["history", "--json"]);
    let cleaned: Vec<&Value> = all["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["pruned"] == true)
        .collect();
    assert_eq!(cleaned.len(), 1, "{all}");
    assert_eq!(cleaned[0]["id"], json!(old_read));
}

#[test]
fn models_show_each_models_runs_success_tokens_and_cost_from_the_ledger() {
    let mut env = fake_env(script("SUMMARY: ok", "x"));
    let repo = dirty_repo(&env, "repo");
    for _ in 0..2 {
        env.run_expecting(&repo, &["-m", "fake/used", "count things"], 0);
    }
    // The fake worker answers `opencode models` with the raw lines of its script.
    use_script(&mut env, json!([{"raw": "fake/used\nfake/unused\n"}]));
    let listed = json_of(&env, &repo, &["models", "opencode", "--json"]);
    let models = listed["models"].as_array().expect("models");
    assert_eq!(models.len(), 2, "{listed}");
    let used = &models[0]["usage"];
    assert_eq!(models[0]["id"], "fake/used");
    assert_eq!(used["runs"], 2, "{listed}");
    assert_eq!(used["success_rate"], 1.0);
    assert_eq!(used["tokens"], 2 * 22100);
    assert!(
        (used["cost"].as_f64().unwrap() - 0.006).abs() < 1e-9,
        "{used}"
    );
    assert!(models[1]["usage"].is_null(), "no runs, no usage: {listed}");
    let shown = stdout(&env.run(&repo, &["models"]));
    assert_some_line(&shown, |l| {
        l.contains("fake/used") && l.contains("100%") && l.contains("$0.006")
    });
}
