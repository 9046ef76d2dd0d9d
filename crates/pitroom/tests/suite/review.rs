//! `pitroom review` on the fake worker: the package reaches the reviewer (not the primary),
//! the verdict is parsed into the record and the report, and a reviewer without a verdict
//! fails the review.

use std::path::Path;

use pitroom_testkit::repo::dirty_repo;
use pitroom_testkit::TestEnv;
use serde_json::{json, Value};

use super::common::{
    assert_stderr_has, assert_stdout_has, fake_env, json_stdout, record, record_invocations,
    recorded_prompt,
};

const FIXED: &str = "def add(a, b):\n    return a + b\n\n\ndef divide(a, b):\n    if b == 0:\n        raise ZeroDivisionError(\"b is 0\")\n    return a / b\n";

fn scripts() -> Value {
    let step = json!({"step": {"input": 900, "output": 60, "cost": 0.001}});
    json!({"by_model": {
        "fake/edit": [{"write": {"path": "calc.py", "content": FIXED}}, step,
            {"text": "SUMMARY: added a zero check\nDETAILS: calc.py:6-7\nFILES CHANGED: calc.py"}],
        "fake/review": [step, {"text": "SUMMARY: the check works; no test covers it\nDETAILS: important: calc.py:6 has no test\nSPEC: PASS · QUALITY: NEEDS_FIXES · ISSUES: critical=0 important=1 minor=0"}],
        "fake/noverdict": [step, {"text": "SUMMARY: looks good to me"}],
        "*": [step, {"text": "SUMMARY: nothing to see"}],
    }})
}

/// `fake/edit` adds the zero check in `mode` (`-i` or `-w`): its record.
fn implement(env: &TestEnv, repo: &Path, mode: &str) -> Value {
    let out = env.run_expecting(
        repo,
        &[
            "run",
            mode,
            "-W",
            "opencode:fake/edit",
            "Add a zero check",
            "--json",
        ],
        0,
    );
    json_stdout(&out)
}

#[test]
fn a_review_gets_the_package_and_its_verdict_lands_in_the_record_and_report() {
    let mut env = fake_env(scripts());
    let repo = dirty_repo(&env, "repo");
    let implemented = implement(&env, &repo, "-i");
    let id = implemented["id"].as_str().expect("id").to_string();

    record_invocations(&mut env, "opencode");
    let out = env.run_expecting(&repo, &["review", &id, "-W", "opencode:fake/review"], 0);
    assert_stdout_has(
        &out,
        "── review: SPEC PASS · QUALITY NEEDS_FIXES · critical 0, important 1, minor 0",
    );

    // The reviewer's prompt carries the package: the brief, the report and the wide diff.
    let prompt = recorded_prompt(&env);
    assert!(prompt.contains("ATTACHED FILES"), "{prompt}");
    assert!(
        prompt.contains("## The brief (what the implementer was asked)\n\nAdd a zero check"),
        "{prompt}"
    );
    assert!(
        prompt.contains("+        raise ZeroDivisionError"),
        "{prompt}"
    );
    assert!(
        prompt.contains(" def add(a, b):"),
        "±10 lines of context reach the top of the file: {prompt}"
    );
    assert!(prompt.contains("SPEC: PASS|FAIL"), "{prompt}");

    let review = record(&env, &repo);
    assert_eq!(review["spec"]["review_of"], id.as_str());
    assert_eq!(review["spec"]["mode"], "read");
    assert_eq!(review["verdict"]["important"], 1);
    assert_eq!(review["verdict"]["approved"], false);
    let package = review["spec"]["attachments"][0]
        .as_str()
        .expect("package path");
    assert!(
        package.starts_with(&env.state.display().to_string()),
        "outside the repository: {package}"
    );
}

#[test]
fn a_reviewer_that_gives_no_verdict_fails_the_review() {
    let env = fake_env(scripts());
    let repo = dirty_repo(&env, "repo");
    implement(&env, &repo, "-w");
    let out = env.run_expecting(
        &repo,
        &["review", "-W", "opencode:fake/noverdict", "--json"],
        1,
    );
    let review = json_stdout(&out);
    assert_eq!(review["state"], "failed");
    assert!(
        review["error"]
            .as_str()
            .expect("error")
            .contains("without a verdict line"),
        "{review:#}"
    );
    assert!(review["verdict"].is_null());
}

#[test]
fn a_run_that_changed_nothing_has_nothing_to_review() {
    let env = fake_env(scripts());
    let repo = dirty_repo(&env, "repo");
    env.run_expecting(&repo, &["run", "Where is divide?"], 0);
    let out = env.run_expecting(&repo, &["review", "-W", "opencode:fake/review"], 3);
    assert_stderr_has(&out, "changed nothing");
}

#[test]
fn a_commit_range_is_reviewed_from_its_merge_base() {
    let env = fake_env(scripts());
    let repo = dirty_repo(&env, "repo");
    env.git(&repo, &["stash", "-u", "-q"]);
    env.git(&repo, &["checkout", "-q", "-b", "feature"]);
    std::fs::write(repo.join("calc.py"), FIXED).expect("edit");
    env.git(&repo, &["commit", "-qam", "zero check"]);
    let review = env.run_json(
        &repo,
        &[
            "review",
            "--range",
            "main..feature",
            "-W",
            "opencode:fake/review",
            "--json",
        ],
    );
    assert_eq!(review["spec"]["review_of"], "main..feature");
    assert_eq!(review["verdict"]["spec_pass"], true);
    env.run_expecting(
        &repo,
        &["review", "--range", "main", "-W", "opencode:fake/review"],
        2,
    );
}

#[test]
fn after_a_review_apply_without_a_run_lands_the_reviewed_change_not_the_review() {
    let env = fake_env(scripts());
    let repo = dirty_repo(&env, "repo");
    implement(&env, &repo, "-i");
    env.run_expecting(&repo, &["review", "-W", "opencode:fake/review"], 0);
    // The latest run is the review (a read run); `apply` means the latest isolated run.
    env.run_expecting(&repo, &["apply"], 0);
    assert!(std::fs::read_to_string(repo.join("calc.py"))
        .expect("calc")
        .contains("ZeroDivisionError"));
    // And `revert` without a run means the latest write run: there is none here.
    env.run_expecting(&repo, &["revert"], 3);
}
