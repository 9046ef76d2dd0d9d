//! `pitroom review` on the fake worker: the package reaches the reviewer (not the primary),
//! the verdict is parsed into the record and the report, and a reviewer without a verdict
//! fails the review.

use pitroom_testkit::repo::dirty_repo;
use serde_json::{json, Value};

use super::common::{code, fake_env, invocation_file, text};

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

#[test]
fn a_review_gets_the_package_and_its_verdict_lands_in_the_record_and_report() {
    let mut env = fake_env(scripts());
    let repo = dirty_repo(&env, "repo");
    let out = env.run(
        &repo,
        &[
            "run",
            "-i",
            "-W",
            "opencode:fake/edit",
            "Add a zero check",
            "--json",
        ],
    );
    assert_eq!(code(&out), 0, "{}", text(&out));
    let implemented: Value = serde_json::from_slice(&out.stdout).expect("record");
    let id = implemented["id"].as_str().expect("id").to_string();

    env.set(
        "PITROOM_FAKE_RECORD",
        invocation_file(&env, "opencode").display().to_string(),
    );
    let out = env.run(&repo, &["review", &id, "-W", "opencode:fake/review"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        report.contains(
            "── review: SPEC PASS · QUALITY NEEDS_FIXES · critical 0, important 1, minor 0"
        ),
        "{report}"
    );

    // The reviewer's prompt carries the package: the brief, the report and the wide diff.
    let invocation: Value = serde_json::from_str(
        &std::fs::read_to_string(invocation_file(&env, "opencode")).expect("recorded"),
    )
    .expect("json");
    let prompt = invocation["prompt"].as_str().expect("prompt");
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

    let out = env.run(&repo, &["show", "--json"]);
    let review: Value = serde_json::from_slice(&out.stdout).expect("record");
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
    let out = env.run(
        &repo,
        &["run", "-w", "-W", "opencode:fake/edit", "Add a zero check"],
    );
    assert_eq!(code(&out), 0, "{}", text(&out));
    let out = env.run(
        &repo,
        &["review", "-W", "opencode:fake/noverdict", "--json"],
    );
    assert_eq!(code(&out), 1, "{}", text(&out));
    let review: Value = serde_json::from_slice(&out.stdout).expect("record");
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
    let out = env.run(&repo, &["run", "Where is divide?"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let out = env.run(&repo, &["review", "-W", "opencode:fake/review"]);
    assert_eq!(code(&out), 3, "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("changed nothing"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_commit_range_is_reviewed_from_its_merge_base() {
    let env = fake_env(scripts());
    let repo = dirty_repo(&env, "repo");
    env.git(&repo, &["stash", "-u", "-q"]);
    env.git(&repo, &["checkout", "-q", "-b", "feature"]);
    std::fs::write(repo.join("calc.py"), FIXED).expect("edit");
    env.git(&repo, &["commit", "-qam", "zero check"]);
    let out = env.run(
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
    assert_eq!(code(&out), 0, "{}", text(&out));
    let review: Value = serde_json::from_slice(&out.stdout).expect("record");
    assert_eq!(review["spec"]["review_of"], "main..feature");
    assert_eq!(review["verdict"]["spec_pass"], true);
    let out = env.run(
        &repo,
        &["review", "--range", "main", "-W", "opencode:fake/review"],
    );
    assert_eq!(code(&out), 2, "{}", text(&out));
}

#[test]
fn after_a_review_apply_without_a_run_lands_the_reviewed_change_not_the_review() {
    let env = fake_env(scripts());
    let repo = dirty_repo(&env, "repo");
    let out = env.run(
        &repo,
        &["run", "-i", "-W", "opencode:fake/edit", "Add a zero check"],
    );
    assert_eq!(code(&out), 0, "{}", text(&out));
    let out = env.run(&repo, &["review", "-W", "opencode:fake/review"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    // The latest run is the review (a read run); `apply` means the latest isolated run.
    let out = env.run(&repo, &["apply"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert!(std::fs::read_to_string(repo.join("calc.py"))
        .expect("calc")
        .contains("ZeroDivisionError"));
    // And `revert` without a run means the latest write run: there is none here.
    let out = env.run(&repo, &["revert"]);
    assert_eq!(code(&out), 3, "{}", text(&out));
}
