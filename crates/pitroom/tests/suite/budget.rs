//! Budgets on the fake worker (docs/budgets.md): a run stopped at its `--max-tokens` or
//! `--max-usd` cap ends `over_budget` with its work kept; a dollar cap on a target without a
//! price is refused before any worker starts; a crew's cap and the day's cap count the other
//! runs' spend.

use std::path::Path;

use pitroom_testkit::repo::dirty_repo;
use pitroom_testkit::TestEnv;
use serde_json::{json, Value};

use super::common::{
    assert_stderr_has, assert_stdout_has, changed, code, fake_env, invocation_file, record,
    record_invocations, show, stdout, str_has, text,
};

/// A worker that writes `partial.txt`, spends `steps` (each `[input, output]` tokens, with no
/// cost of its own), then works on for a minute and would write `late.txt` and answer: a run
/// that reaches its cap is stopped in that minute.
fn spends(steps: &[[u64; 2]]) -> Value {
    let mut script = vec![json!({"write": {"path": "partial.txt", "content": "half done\n"}})];
    for [input, output] in steps {
        script.push(json!({"step": {"input": input, "output": output, "reason": "tool-calls"}}));
    }
    script.extend([
        json!({"sleep_ms": 60000}),
        json!({"write": {"path": "late.txt", "content": "never\n"}}),
        json!({"text": "SUMMARY: all done"}),
    ]);
    Value::Array(script)
}

/// The config file a [`TestEnv`] reads.
fn configure(env: &TestEnv, toml: &str) {
    std::fs::write(env.root.join("pitroom.toml"), toml).expect("config written");
}

/// `acme/cheap` at $1 per million input tokens and $4 per million output tokens.
const PRICED: &str = "[worker_prices]\n\"opencode:acme/cheap\" = { input = 1.0, output = 4.0 }\n";

#[test]
fn a_run_at_its_token_cap_is_stopped_over_budget_and_its_partial_diff_can_be_applied() {
    let env = fake_env(spends(&[[600, 100], [600, 100]]));
    let repo = dirty_repo(&env, "repo");
    let out = env.run_expecting(&repo, &["-i", "--max-tokens", "1000", "build it"], 1);
    assert_stdout_has(&out, "over_budget");
    assert_stdout_has(&out, "budget: 1400 of 1000 tokens (--max-tokens)");
    assert_stdout_has(
        &out,
        "error: over budget: used 1400 tokens of its 1000 cap; the worker was stopped and what it did is kept",
    );

    let r = record(&env, &repo);
    assert_eq!(r["state"], "over_budget", "{r:#}");
    assert_eq!(r["spend"]["tokens"], 1400);
    assert_eq!(r["spec"]["budget"]["max_tokens"], 1000);
    assert_eq!(r["interrupted_in"], "worker");
    // The worker was stopped in its minute of work: what it wrote before the cap is the patch,
    // what it would have written after is not.
    assert_eq!(changed(&r), ["partial.txt"], "{r:#}");
    let id = r["id"].as_str().expect("id");
    let applied = env.run(&repo, &["apply", id]);
    assert_eq!(code(&applied), 0, "{}", text(&applied));
    assert_eq!(
        std::fs::read_to_string(repo.join("partial.txt")).expect("applied"),
        "half done\n"
    );
    assert!(!repo.join("late.txt").exists());
}

#[test]
fn a_run_at_its_dollar_cap_with_a_priced_model_is_stopped_and_its_edits_stay_revertible() {
    // 5000 input and 500 output tokens at $1 and $4 a million: $0.007 a step.
    let env = fake_env(spends(&[[5000, 500], [5000, 500]]));
    configure(&env, PRICED);
    let repo = dirty_repo(&env, "repo");
    let out = env.run_expecting(
        &repo,
        &["-w", "-m", "acme/cheap", "--max-usd", "0.01", "build it"],
        1,
    );
    assert_stdout_has(&out, "budget: $0.0140 of $0.0100 (--max-usd)");
    assert_stdout_has(&out, "over budget: spent $0.0140 of its $0.0100 cap");

    let r = record(&env, &repo);
    assert_eq!(r["state"], "over_budget", "{r:#}");
    assert!((r["spend"]["usd"].as_f64().expect("usd") - 0.014).abs() < 1e-9);
    assert_eq!(r["spend"]["tokens"], 11000);
    assert_eq!(changed(&r), ["partial.txt"], "{r:#}");
    assert!(
        repo.join("partial.txt").exists(),
        "a write run's edits stay"
    );
    assert!(!repo.join("late.txt").exists());
    // The recorded patch is exactly the worker's work: revert takes it back out.
    let id = r["id"].as_str().expect("id");
    let reverted = env.run(&repo, &["revert", id]);
    assert_eq!(code(&reverted), 0, "{}", text(&reverted));
    assert!(!repo.join("partial.txt").exists());
}

#[test]
fn a_run_under_its_caps_ends_done_and_shows_its_spend_against_them() {
    let env = fake_env(json!([
        {"step": {"input": 5000, "output": 500, "reason": "stop"}},
        {"text": "SUMMARY: cheap"}
    ]));
    configure(&env, PRICED);
    let repo = dirty_repo(&env, "repo");
    let args = [
        "-m",
        "acme/cheap",
        "--max-usd",
        "0.5",
        "--max-tokens",
        "20000",
        "look",
    ];
    let out = env.run_expecting(&repo, &args, 0);
    assert_stdout_has(
        &out,
        "budget: $0.0070 of $0.5000 (--max-usd) · 5500 of 20k tokens (--max-tokens)",
    );
    let status = env.run(&repo, &["status"]);
    assert_stdout_has(&status, "budget: $0.0070 of $0.5000 (--max-usd)");
}

#[test]
fn a_dollar_cap_on_a_model_without_a_price_is_refused_before_any_worker_starts() {
    let mut env = fake_env(spends(&[[10, 10]]));
    let calls = record_invocations(&mut env, "opencode");
    configure(&env, PRICED);
    let repo = dirty_repo(&env, "repo");
    let out = env.run_expecting(
        &repo,
        &["-i", "-m", "acme/unpriced", "--max-usd", "1", "build it"],
        3,
    );
    assert_stderr_has(&out, "unknown cost is never $0");
    assert_stderr_has(
        &out,
        "worker_prices.\"opencode:acme/unpriced\" = { input = IN, output = OUT }",
    );
    assert!(!calls.exists(), "no worker was started");
    let listed = env.run(&repo, &["ls", "--json"]);
    assert_eq!(stdout(&listed).trim(), "[]", "no run was created");
    // A token cap needs no price.
    super::common::use_script(&mut env, json!([{"text": "SUMMARY: ok"}]));
    env.run_expecting(
        &repo,
        &["-m", "acme/unpriced", "--max-tokens", "100", "look"],
        0,
    );
    assert!(calls.exists());
}

#[test]
fn caps_that_are_not_above_zero_are_refused() {
    let env = fake_env(spends(&[[10, 10]]));
    let repo = dirty_repo(&env, "repo");
    for (args, says) in [
        (
            ["--max-usd", "0", "x"],
            "--max-usd 0: give a cap in USD above zero",
        ),
        (
            ["--max-usd", "NaN", "x"],
            "--max-usd NaN: give a cap in USD above zero",
        ),
        (
            ["--max-tokens", "0", "x"],
            "--max-tokens 0: give a cap above zero",
        ),
    ] {
        let out = env.run_expecting(&repo, &args, 2);
        assert_stderr_has(&out, says);
    }
    // A daily cap that is not one refuses every run, saying what to write.
    configure(&env, "budget.daily_usd = \"lots\"\n");
    let out = env.run_expecting(&repo, &["x"], 3);
    assert_stderr_has(
        &out,
        "budget.daily_usd = \"lots\" in the config is not a cap in USD above zero; write e.g. budget.daily_usd = 5.0",
    );
}

/// The crew's runs, as their records.
fn crew_records(env: &TestEnv, dir: &Path, ids: &[String]) -> Vec<Value> {
    ids.iter().map(|id| show(env, dir, id)).collect()
}

/// Starts the isolated crew `capped` of two runs on `acme/cheap` under `crew --max-usd 0.01`,
/// waits for it to end not ok (exit 1) and returns its run ids.
fn capped_crew(env: &TestEnv, repo: &std::path::Path) -> Vec<String> {
    let out = env.run_expecting(
        repo,
        &[
            "crew",
            "-i",
            "-g",
            "capped",
            "-m",
            "acme/cheap",
            "--max-usd",
            "0.01",
            "one",
            "two",
        ],
        0,
    );
    let ids: Vec<String> = stdout(&out).lines().map(str::to_string).collect();
    assert_eq!(ids.len(), 2, "{}", text(&out));
    let waited = env.run(repo, &["wait", "-g", "capped", "--timeout", "120"]);
    assert_eq!(code(&waited), 1, "{}", text(&waited));
    ids
}

#[test]
fn a_crew_cap_stops_its_running_runs_once_their_spend_together_reaches_it() {
    // Each run alone spends $0.007 and is under the crew's $0.01; together they are over it.
    let mut env = fake_env(spends(&[[5000, 500]]));
    env.set("PITROOM_MAX_PARALLEL", "2");
    configure(&env, PRICED);
    let repo = dirty_repo(&env, "repo");
    let ids = capped_crew(&env, &repo);
    for r in crew_records(&env, &repo, &ids) {
        assert_eq!(r["state"], "over_budget", "{r:#}");
        assert!(
            str_has(
                &r["error"],
                "its crew spent $0.0140 of the crew's $0.0100 cap"
            ),
            "{r:#}"
        );
        assert_eq!(changed(&r), ["partial.txt"], "its work is kept: {r:#}");
    }
}

#[test]
fn each_run_of_a_crew_is_held_to_its_own_cap_and_the_crew_cap_holds_as_well() {
    // Each run spends 1400 tokens: over its own cap of 1000, well under the crew's 100000.
    let mut env = fake_env(spends(&[[600, 100], [600, 100]]));
    env.set("PITROOM_MAX_PARALLEL", "2");
    let repo = dirty_repo(&env, "repo");
    let args = [
        "crew",
        "-i",
        "-g",
        "each",
        "--each-max-tokens",
        "1000",
        "--max-tokens",
        "100000",
        "one",
        "two",
    ];
    let out = env.run_expecting(&repo, &args, 0);
    let ids: Vec<String> = stdout(&out).lines().map(str::to_string).collect();
    assert_eq!(ids.len(), 2, "{}", text(&out));
    let waited = env.run(&repo, &["wait", "-g", "each", "--timeout", "120"]);
    assert_eq!(code(&waited), 1, "{}", text(&waited));
    for r in crew_records(&env, &repo, &ids) {
        assert_eq!(r["state"], "over_budget", "{r:#}");
        assert_eq!(r["spec"]["budget"]["max_tokens"], 1000, "{r:#}");
        assert_eq!(r["spec"]["budget"]["group_max_tokens"], 100000, "{r:#}");
        assert!(
            str_has(&r["error"], "used 1400 tokens of its 1000 cap"),
            "stopped by its own cap, not the crew's: {r:#}"
        );
        assert_eq!(changed(&r), ["partial.txt"], "its work is kept: {r:#}");
    }
}

#[test]
fn a_crew_cap_already_reached_keeps_its_queued_runs_from_starting() {
    // One slot: the first run spends the whole cap alone; the second gets the slot after it.
    let mut env = fake_env(spends(&[[5000, 500], [5000, 500]]));
    env.set("PITROOM_MAX_PARALLEL", "1");
    configure(&env, PRICED);
    let repo = dirty_repo(&env, "repo");
    let ids = capped_crew(&env, &repo);
    let records = crew_records(&env, &repo, &ids);
    assert!(
        records.iter().all(|r| r["state"] == "over_budget"),
        "{records:#?}"
    );
    let (ran, never): (Vec<&Value>, Vec<&Value>) = records
        .iter()
        .partition(|r| r["interrupted_in"] == "worker");
    assert_eq!((ran.len(), never.len()), (1, 1), "{records:#?}");
    assert!(str_has(
        &ran[0]["error"],
        "spent $0.0140 of the crew's $0.0100 cap"
    ));
    assert_eq!(changed(ran[0]), ["partial.txt"]);
    assert!(
        str_has(&never[0]["error"], "the worker never started"),
        "{:#}",
        never[0]
    );
    assert_eq!(never[0]["started_at"], Value::Null);
}

#[test]
fn the_daily_cap_stops_the_run_that_reaches_it_and_refuses_the_next() {
    let mut env = fake_env(json!([
        {"step": {"input": 5000, "output": 500, "reason": "stop"}},
        {"text": "SUMMARY: cheap"}
    ]));
    let calls = record_invocations(&mut env, "opencode");
    configure(&env, &format!("{PRICED}\n[budget]\ndaily_usd = 0.01\n"));
    let repo = dirty_repo(&env, "repo");
    let args = ["-i", "-m", "acme/cheap", "build it"];
    // $0.007 of today's $0.01.
    let first = env.run_expecting(&repo, &args, 0);
    assert_stdout_has(
        &first,
        "budget: $0.0070 on top of $0.0000 spent today, of $0.0100 a day (budget.daily_usd)",
    );
    // Today's $0.007 and this run's $0.007 reach it: the run is stopped.
    super::common::use_script(&mut env, spends(&[[5000, 500]]));
    let second = env.run_expecting(&repo, &args, 1);
    assert_stdout_has(
        &second,
        "over budget: today's spend reached $0.0140 of the daily $0.0100 cap",
    );
    assert_eq!(changed(&record(&env, &repo)), ["partial.txt"]);
    // And now the day is spent: the next run is refused, no worker started.
    std::fs::remove_file(&calls).expect("the second run's worker recorded its call");
    let third = env.run_expecting(&repo, &args, 3);
    assert_stderr_has(&third, "has reached budget.daily_usd ($0.0100)");
    assert!(
        !invocation_file(&env, "opencode").exists(),
        "no worker was started"
    );
    // `savings` shows the day's spend against its cap.
    let savings = env.run_expecting(&repo, &["savings"], 0);
    assert_stdout_has(
        &savings,
        "budget: $0.0140 spent today (UTC) of $0.0100 a day (budget.daily_usd)",
    );
    let json = env.run_json(&repo, &["savings", "--json"]);
    assert_eq!(json["budget"]["daily_usd"], 0.01, "{json}");
    assert!((json["budget"]["spent_today_usd"].as_f64().expect("spent") - 0.014).abs() < 1e-9);
}

#[test]
fn savings_without_a_daily_cap_says_nothing_of_budgets() {
    let env = fake_env(json!([{"text": "SUMMARY: ok"}]));
    let repo = dirty_repo(&env, "repo");
    env.run_expecting(&repo, &["look"], 0);
    let savings = env.run_expecting(&repo, &["savings"], 0);
    assert!(!stdout(&savings).contains("budget"), "{}", text(&savings));
    assert_eq!(
        env.run_json(&repo, &["savings", "--json"])["budget"],
        Value::Null
    );
}

#[test]
fn a_race_holds_each_contender_to_the_cap_and_the_one_within_it_wins() {
    let env = fake_env(json!({"by_model": {
        "fake/costly": [
            {"write": {"path": "partial.txt", "content": "half done\n"}},
            {"step": {"input": 900, "output": 200, "reason": "tool-calls"}},
            {"sleep_ms": 60000},
            {"text": "SUMMARY: never reached"}
        ],
        "fake/lean": [
            {"write": {"path": "partial.txt", "content": "all done\n"}},
            {"step": {"input": 400, "output": 50, "reason": "stop"}},
            {"text": "SUMMARY: done within the cap\nFILES CHANGED: partial.txt"}
        ],
    }}));
    let repo = dirty_repo(&env, "repo");
    let race = env.run_json(
        &repo,
        &[
            "run",
            "--race",
            "opencode:fake/costly,opencode:fake/lean",
            "--max-tokens",
            "1000",
            "finish it",
            "--json",
        ],
    );
    let contenders = race["contenders"].as_array().expect("contenders");
    assert_eq!(contenders.len(), 2, "{race:#}");
    let winner = show(&env, &repo, race["winner"].as_str().expect("a winner"));
    assert_eq!(winner["spec"]["model"], "fake/lean", "{race:#}");
    assert_eq!(winner["spec"]["budget"]["max_tokens"], 1000);
    let loser = contenders
        .iter()
        .map(|c| show(&env, &repo, c["run"].as_str().expect("run")))
        .find(|r| r["spec"]["model"] == "fake/costly")
        .expect("the costly contender");
    assert_eq!(loser["state"], "over_budget", "{loser:#}");
    assert_eq!(changed(&loser), ["partial.txt"], "its work is kept");
}

#[test]
fn runs_going_on_at_once_under_the_daily_cap_count_each_other() {
    // Each run alone spends $0.007 of the day's $0.01; the two at once reach it.
    let mut env = fake_env(spends(&[[5000, 500]]));
    env.set("PITROOM_MAX_PARALLEL", "2");
    configure(&env, &format!("{PRICED}\n[budget]\ndaily_usd = 0.01\n"));
    let repo = dirty_repo(&env, "repo");
    let out = env.run_expecting(
        &repo,
        &["crew", "-i", "-g", "day", "-m", "acme/cheap", "one", "two"],
        0,
    );
    let ids: Vec<String> = stdout(&out).lines().map(str::to_string).collect();
    assert_eq!(ids.len(), 2, "{}", text(&out));
    let waited = env.run(&repo, &["wait", "-g", "day", "--timeout", "120"]);
    assert_eq!(code(&waited), 1, "{}", text(&waited));
    for r in crew_records(&env, &repo, &ids) {
        assert_eq!(r["state"], "over_budget", "{r:#}");
        assert!(
            str_has(
                &r["error"],
                "today's spend reached $0.0140 of the daily $0.0100 cap"
            ),
            "{r:#}"
        );
        assert_eq!(changed(&r), ["partial.txt"], "its work is kept: {r:#}");
    }
}
