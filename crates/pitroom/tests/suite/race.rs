//! Races (`run --race`) on the fake worker: contenders in their own copies as one group, the
//! winner picked by the rule of docs/race.md, and only the winner landed by `apply`.

use pitroom_testkit::repo::dirty_repo;
use serde_json::{json, Value};

use super::common::{assert_stdout_has, fake_env, json_stdout, show};

fn contenders() -> Value {
    let step = json!({"step": {"input": 700, "output": 50, "cost": 0.001}});
    json!({"by_model": {
        "fake/sloppy": [{"write": {"path": "calc.py", "content": "def divide(a, b):\n    return a / b  # still no check\n"}}, step,
            {"text": "SUMMARY: done\nFILES CHANGED: calc.py"}],
        "fake/careful": [{"write": {"path": "calc.py", "content": "def divide(a, b):\n    return a / b if b else 0  # checked\n"}}, step,
            {"text": "SUMMARY: added the zero check\nFILES CHANGED: calc.py"}],
        "fake/verbose": [{"write": {"path": "calc.py", "content": "def divide(a, b):\n    # checked\n    if b == 0:\n        return 0\n    return a / b\n"}}, step,
            {"text": "SUMMARY: added the zero check, at length\nFILES CHANGED: calc.py"}],
        "*": [step, {"text": "SUMMARY: the change looks right\nSPEC: PASS · QUALITY: APPROVED · ISSUES: critical=0 important=0 minor=0"}],
    }})
}

#[test]
fn a_race_keeps_the_only_contender_whose_check_passes_and_apply_lands_it() {
    let env = fake_env(contenders());
    let repo = dirty_repo(&env, "repo");
    let race_args = [
        "run",
        "--race",
        "opencode:fake/sloppy,opencode:fake/careful",
        "--verify",
        "grep -q checked calc.py",
        "add a zero check to divide",
    ];
    let out = env.run_expecting(&repo, &race_args, 0);
    assert_stdout_has(&out, "verify ✘");
    assert_stdout_has(
        &out,
        "the only contender that finished with changes and a passing check (opencode:fake/sloppy did not)",
    );
    let race = json_stdout(&env.run_expecting(&repo, &[&race_args[..], &["--json"]].concat(), 0));
    let winner = race["winner"].as_str().expect("a winner").to_string();
    let contenders = race["contenders"].as_array().expect("contenders");
    assert_eq!(contenders.len(), 2);
    assert_eq!(
        contenders[0]["run"],
        winner.as_str(),
        "the winner ranks first"
    );
    assert_eq!(contenders[0]["worker"], "opencode:fake/careful");
    assert_eq!(contenders[0]["verify"], true);
    assert_eq!(contenders[1]["verify"], false);
    let record = show(&env, &repo, &winner);
    assert_eq!(record["spec"]["mode"], "isolate");
    assert_eq!(record["spec"]["race"], true);

    // `apply` without a run lands the latest race's winner, whichever contender started last.
    env.run_expecting(&repo, &["apply"], 0);
    let landed = std::fs::read_to_string(repo.join("calc.py")).expect("calc.py");
    assert!(landed.contains("# checked"), "{landed}");
}

#[test]
fn with_reviews_and_equal_checks_the_smaller_diff_wins_and_apply_g_lands_only_it() {
    let env = fake_env(contenders());
    let repo = dirty_repo(&env, "repo");
    let race = json_stdout(&env.run_expecting(
        &repo,
        &[
            "run",
            "--race",
            "opencode:fake/verbose,opencode:fake/careful",
            "--review",
            "add a zero check to divide",
            "--json",
        ],
        0,
    ));
    let contenders = race["contenders"].as_array().expect("contenders");
    assert!(
        contenders.iter().all(|c| c["verdict"]["approved"] == true),
        "each contender was reviewed: {race:#}"
    );
    assert_eq!(contenders[0]["worker"], "opencode:fake/careful", "{race:#}");
    assert!(
        race["why"]
            .as_str()
            .is_some_and(|w| w.starts_with("the smaller diff")),
        "{race:#}"
    );
    let group = race["group"].as_str().expect("group");
    let applied = json_stdout(&env.run_expecting(&repo, &["apply", "-g", group, "--json"], 0));
    assert_eq!(applied["applied"], json!([race["winner"]]), "{applied:#}");
    let landed = std::fs::read_to_string(repo.join("calc.py")).expect("calc.py");
    assert!(landed.contains("if b else 0"), "{landed}");
}

#[test]
fn a_race_needs_two_to_five_targets_and_isolated_copies() {
    let env = fake_env(contenders());
    let repo = dirty_repo(&env, "repo");
    let one = env.run_expecting(&repo, &["run", "--race", "opencode:fake/careful", "x"], 2);
    assert!(String::from_utf8_lossy(&one.stderr).contains("2 to 5 different targets"));
    let write = env.run_expecting(
        &repo,
        &[
            "run",
            "-w",
            "--race",
            "opencode:fake/a,opencode:fake/b",
            "x",
        ],
        2,
    );
    assert!(String::from_utf8_lossy(&write.stderr).contains("its own isolated copy"));
    let chain = env.run_expecting(&repo, &["run", "--race", "3", "x"], 2);
    assert!(
        String::from_utf8_lossy(&chain.stderr).contains("the configured chain has 1 target"),
        "{}",
        String::from_utf8_lossy(&chain.stderr)
    );
}
