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
fn a_commit_range_and_a_branch_since_its_base_are_reviewed_from_their_merge_base() {
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
    // `--base REF`: the branch checked out, from its merge base with REF.
    let branch = env.run_json(
        &repo,
        &[
            "review",
            "--base",
            "main",
            "-W",
            "opencode:fake/review",
            "--json",
        ],
    );
    assert_eq!(branch["spec"]["review_of"], "main..HEAD");
    assert_eq!(branch["verdict"]["spec_pass"], true);
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

/// The panel's scripts: one reviewer approves, one asks for fixes.
fn panel_scripts() -> Value {
    let step = json!({"step": {"input": 500, "output": 40, "cost": 0.001}});
    json!({"by_model": {
        "fake/review": [step, {"text": "SUMMARY: no test covers the zero check\nDETAILS: important: calc.py:6\nSPEC: PASS · QUALITY: NEEDS_FIXES · ISSUES: critical=0 important=1 minor=0"}],
        "fake/lenient": [step, {"text": "SUMMARY: fine\nDETAILS: minor: README.md:3 wording\nSPEC: PASS · QUALITY: APPROVED · ISSUES: critical=0 important=0 minor=1"}],
        "fake/noverdict": [step, {"text": "SUMMARY: looks good to me"}],
        "*": [step, {"text": "SUMMARY: nothing to see"}],
    }})
}

#[test]
fn the_uncommitted_work_is_reviewed_with_new_files_and_the_focus_but_no_secret() {
    let mut env = fake_env(scripts());
    let repo = dirty_repo(&env, "repo");
    std::fs::write(repo.join(".env"), "API_KEY=sk-live-0123456789abcdef\n").expect("secret");
    record_invocations(&mut env, "opencode");
    let review = env.run_json(
        &repo,
        &[
            "review",
            "--uncommitted",
            "--focus",
            "the README wording",
            "-W",
            "opencode:fake/review",
            "--json",
        ],
    );
    assert_eq!(review["spec"]["review_of"], "uncommitted");
    assert_eq!(review["verdict"]["important"], 1);
    let prompt = recorded_prompt(&env);
    assert!(
        prompt.contains("Review the uncommitted work in this tree"),
        "{prompt}"
    );
    assert!(
        prompt.contains("Focus above all on: the README wording"),
        "{prompt}"
    );
    // A staged change, an unstaged one and an untracked file, against HEAD.
    assert!(prompt.contains("+    41 + 1"), "staged: {prompt}");
    assert!(
        prompt.contains("+user edit in progress"),
        "unstaged: {prompt}"
    );
    assert!(
        prompt.contains("+untracked user notes"),
        "untracked: {prompt}"
    );
    assert!(!prompt.contains("sk-live-0123456789abcdef"), "{prompt}");
    assert!(
        prompt.contains("Secret-looking files are left out of the package: .env"),
        "{prompt}"
    );
    // The secret never reached the object store, and the user's index is untouched.
    let objects = pitroom_testkit::repo::git_ok(&repo, &["count-objects", "-v"]);
    let listed = pitroom_testkit::repo::git_ok(&repo, &["status", "--porcelain"]);
    assert!(listed.contains("?? .env"), "{listed}");
    assert!(
        listed.contains("M  src/lib.rs"),
        "the index as the user left it: {listed}"
    );
    let all = pitroom_testkit::repo::git_ok(
        &repo,
        &[
            "cat-file",
            "--batch-all-objects",
            "--batch-check=%(objectname)",
        ],
    );
    for object in all.lines() {
        let body = pitroom_testkit::repo::git_ok(&repo, &["cat-file", "-p", object]);
        assert!(
            !body.contains("sk-live-0123456789abcdef"),
            "{object}: {objects}"
        );
    }

    // A clean tree has nothing to review.
    env.git(&repo, &["add", "-A", "."]);
    env.git(&repo, &["reset", "-q", "--", ".env"]);
    env.git(&repo, &["commit", "-qm", "everything"]);
    std::fs::remove_file(repo.join(".env")).expect("rm");
    let out = env.run_expecting(
        &repo,
        &["review", "--uncommitted", "-W", "opencode:fake/review"],
        3,
    );
    assert_stderr_has(&out, "no uncommitted changes");
}

#[test]
fn a_panel_runs_its_reviewers_as_one_group_and_the_strictest_verdict_wins() {
    let env = fake_env(panel_scripts());
    let repo = dirty_repo(&env, "repo");
    let out = env.run_expecting(
        &repo,
        &[
            "review",
            "--uncommitted",
            "--panel",
            "opencode:fake/review,opencode:fake/lenient",
        ],
        0,
    );
    assert_stdout_has(
        &out,
        "── panel: SPEC PASS · QUALITY NEEDS_FIXES · critical 0, important 1, minor 1 · 1 of 2 reviewer(s) agree",
    );
    assert_stdout_has(&out, "opencode:fake/lenient (");
    let panel = env.run_json(
        &repo,
        &[
            "review",
            "--uncommitted",
            "--panel",
            "opencode:fake/lenient,opencode:fake/noverdict",
            "--json",
        ],
    );
    assert_eq!(panel["review_of"], "uncommitted");
    assert_eq!(panel["voted"], 1);
    assert_eq!(panel["agree"], 1);
    assert_eq!(panel["verdict"]["approved"], true);
    let seats = panel["seats"].as_array().expect("seats");
    assert_eq!(seats.len(), 2);
    assert_eq!(seats[1]["state"], "failed", "{panel:#}");
    assert!(seats[1]["verdict"].is_null());
    // The seats are one group, as crews are.
    let group = panel["group"].as_str().expect("group");
    // (Exit 1: one of the reviews failed.)
    let status = json_stdout(&env.run_expecting(&repo, &["status", "-g", group, "--json"], 1));
    assert_eq!(status.as_array().map(Vec::len), Some(2), "{status:#}");

    let alone = env.run_expecting(
        &repo,
        &["review", "--uncommitted", "--panel", "opencode:fake/review"],
        2,
    );
    assert_stderr_has(&alone, "--panel takes 2 to 5 different reviewers");
}
