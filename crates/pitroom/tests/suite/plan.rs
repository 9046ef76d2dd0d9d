//! Plans: `run --plan PLAN --step N` ties runs to a step, and `plan status` rebuilds each step
//! from the records (runs, state, STATUS line, review verdict, rounds, applied, notes).

use std::path::PathBuf;

use pitroom_testkit::repo::dirty_repo;
use pitroom_testkit::TestEnv;
use serde_json::{json, Value};

use super::common::{
    assert_stderr_has, assert_stdout_has, fake_env, recorded_prompt, recording_env,
};

const PLAN: &str = "# Plan: safer calc

### Task 1: Find every division
**Worker:** cheap

List each place that divides.

### Task 2: Add a zero check
**Worker:** standard

Make divide() raise on 0.

```markdown
### Task 3: not a step
```
";

const FIXED: &str = "def add(a, b):\n    return a + b\n\n\ndef divide(a, b):\n    if b == 0:\n        raise ZeroDivisionError(\"b is 0\")\n    return a / b\n";

fn scripts() -> Value {
    let step = json!({"step": {"input": 500, "output": 40}});
    json!({"by_model": {
        "fake/edit": [{"write": {"path": "calc.py", "content": FIXED}}, step,
            {"text": "SUMMARY: added the check\nFILES CHANGED: calc.py\nSTATUS: DONE"}],
        "fake/review": [step, {"text": "SUMMARY: ok\nSPEC: PASS · QUALITY: APPROVED · ISSUES: critical=0 important=0 minor=0"}],
        "*": [step, {"text": "SUMMARY: one division: calc.py:7\nSTATUS: DONE_WITH_CONCERNS — only one file looked at"}],
    }})
}

/// An environment made by `new_env` from [`scripts`], a dirty repository in it and [`PLAN`]
/// written beside that: the environment, the repository and the plan's path.
fn planned(new_env: fn(Value) -> TestEnv) -> (TestEnv, PathBuf, String) {
    let env = new_env(scripts());
    let repo = dirty_repo(&env, "repo");
    let plan = env.root.join("plan.md");
    std::fs::write(&plan, PLAN).expect("plan");
    let plan = plan.display().to_string();
    (env, repo, plan)
}

#[test]
fn plan_status_rebuilds_each_step_from_its_runs_reviews_and_notes() {
    let (env, repo, plan_arg) = planned(recording_env);

    // Step 1 with no task of its own: the step's text is the task; the plan's tier is unknown.
    let out = env.run_expecting(&repo, &["run", "--plan", &plan_arg, "--step", "1"], 0);
    assert_stderr_has(&out, "no such tier");
    let prompt = recorded_prompt(&env);
    assert!(prompt.contains("Task 1 of the plan"), "{prompt}");
    assert!(prompt.contains("List each place that divides."), "{prompt}");
    assert!(
        prompt.contains("STATUS: DONE, DONE_WITH_CONCERNS, BLOCKED or NEEDS_CONTEXT"),
        "{prompt}"
    );

    // Step 2 in an isolated copy, reviewed, applied.
    env.run_expecting(
        &repo,
        &[
            "run",
            "-i",
            "--plan",
            &plan_arg,
            "--step",
            "2",
            "-W",
            "opencode:fake/edit",
            "Add the zero check",
        ],
        0,
    );
    env.run_expecting(&repo, &["review", "-W", "opencode:fake/review"], 0);
    let runs = env.run(&repo, &["ls", "--json"]);
    let listed: Vec<Value> = serde_json::from_slice(&runs.stdout).expect("ls");
    let implementer = listed
        .iter()
        .find(|r| r["spec"]["plan"]["step"] == 2)
        .and_then(|r| r["id"].as_str())
        .expect("step 2's run")
        .to_string();
    env.run_expecting(&repo, &["apply", &implementer], 0);
    env.run_expecting(
        &repo,
        &[
            "plan",
            "note",
            &plan_arg,
            "--step",
            "2",
            "reviewed and landed",
        ],
        0,
    );

    let status = env.run_json(&repo, &["plan", "status", &plan_arg, "--json"]);
    let steps = status["steps"].as_array().expect("steps");
    assert_eq!(
        steps.len(),
        2,
        "the fenced heading is not a step: {status:#}"
    );
    assert_eq!(steps[0]["state"], "done");
    assert_eq!(
        steps[0]["status"],
        "DONE_WITH_CONCERNS — only one file looked at"
    );
    assert_eq!(steps[0]["applied"], false);
    assert_eq!(steps[1]["rounds"], 1);
    assert_eq!(steps[1]["status"], "DONE");
    assert_eq!(
        steps[1]["verdict"],
        "SPEC PASS · QUALITY APPROVED · critical 0, important 0, minor 0"
    );
    assert_eq!(steps[1]["applied"], true);
    assert_eq!(steps[1]["note"], "reviewed and landed");
    assert_eq!(steps[1]["worker"], "standard");

    let out = env.run(&repo, &["plan", "status", &plan_arg]);
    assert_stdout_has(&out, "Task 2: Add a zero check  [standard]");
    assert_stdout_has(&out, "review: SPEC PASS");
    // The notes live in the state directory, not next to the plan or in the repository.
    assert!(
        std::fs::read_dir(env.state.join("plans"))
            .expect("plans dir")
            .count()
            == 1
    );
}

#[test]
fn a_step_the_plan_lacks_is_a_usage_error_naming_its_steps() {
    let (env, repo, plan) = planned(fake_env);
    let out = env.run_expecting(&repo, &["run", "--plan", &plan, "--step", "3"], 2);
    assert_stderr_has(&out, "has no task 3 (its tasks: 1, 2)");
    // --step needs --plan.
    env.run_expecting(&repo, &["run", "--step", "1", "x"], 2);
}
