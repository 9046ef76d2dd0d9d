//! Plans: `run --plan PLAN --step N` ties runs to a step, and `plan status` rebuilds each step
//! from the records (runs, state, STATUS line, review verdict, rounds, applied, notes).

use pitroom_testkit::repo::dirty_repo;
use serde_json::{json, Value};

use super::common::{code, fake_env, invocation_file, text};

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

#[test]
fn plan_status_rebuilds_each_step_from_its_runs_reviews_and_notes() {
    let mut env = fake_env(scripts());
    env.set(
        "PITROOM_FAKE_RECORD",
        invocation_file(&env, "opencode").display().to_string(),
    );
    let repo = dirty_repo(&env, "repo");
    let plan = env.root.join("plan.md");
    std::fs::write(&plan, PLAN).expect("plan");
    let plan_arg = plan.display().to_string();

    // Step 1 with no task of its own: the step's text is the task; the plan's tier is unknown.
    let out = env.run(&repo, &["run", "--plan", &plan_arg, "--step", "1"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no such tier"),
        "{}",
        text(&out)
    );
    let invocation: Value = serde_json::from_str(
        &std::fs::read_to_string(invocation_file(&env, "opencode")).expect("recorded"),
    )
    .expect("json");
    let prompt = invocation["prompt"].as_str().expect("prompt");
    assert!(prompt.contains("Task 1 of the plan"), "{prompt}");
    assert!(prompt.contains("List each place that divides."), "{prompt}");
    assert!(
        prompt.contains("STATUS: DONE, DONE_WITH_CONCERNS, BLOCKED or NEEDS_CONTEXT"),
        "{prompt}"
    );

    // Step 2 in an isolated copy, reviewed, applied.
    let out = env.run(
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
    );
    assert_eq!(code(&out), 0, "{}", text(&out));
    let out = env.run(&repo, &["review", "-W", "opencode:fake/review"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let runs = env.run(&repo, &["ls", "--json"]);
    let listed: Vec<Value> = serde_json::from_slice(&runs.stdout).expect("ls");
    let implementer = listed
        .iter()
        .find(|r| r["spec"]["plan"]["step"] == 2)
        .and_then(|r| r["id"].as_str())
        .expect("step 2's run")
        .to_string();
    let out = env.run(&repo, &["apply", &implementer]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let out = env.run(
        &repo,
        &[
            "plan",
            "note",
            &plan_arg,
            "--step",
            "2",
            "reviewed and landed",
        ],
    );
    assert_eq!(code(&out), 0, "{}", text(&out));

    let out = env.run(&repo, &["plan", "status", &plan_arg, "--json"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let status: Value = serde_json::from_slice(&out.stdout).expect("status");
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
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.contains("Task 2: Add a zero check  [standard]"),
        "{shown}"
    );
    assert!(shown.contains("review: SPEC PASS"), "{shown}");
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
    let env = fake_env(scripts());
    let repo = dirty_repo(&env, "repo");
    let plan = env.root.join("plan.md");
    std::fs::write(&plan, PLAN).expect("plan");
    let out = env.run(
        &repo,
        &["run", "--plan", &plan.display().to_string(), "--step", "3"],
    );
    assert_eq!(code(&out), 2, "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("has no task 3 (its tasks: 1, 2)"),
        "{}",
        text(&out)
    );
    let out = env.run(&repo, &["run", "--step", "1", "x"]);
    assert_eq!(code(&out), 2, "--step needs --plan: {}", text(&out));
}
