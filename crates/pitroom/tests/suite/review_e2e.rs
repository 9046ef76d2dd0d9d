//! `pitroom review` end to end with two different real worker CLIs: real OpenCode implements
//! in an isolated copy (fake chat-completions server), real Claude Code reviews (fake Anthropic
//! server); the verdict is parsed, and a reviewer that answers without one fails the review.

use pitroom_testkit::{real_cli, FakeAnthropic};
use serde_json::{json, Value};

use super::common::{assert_exit, json_stdout, str_has};
use super::real_cli::{opencode, World};

/// Real OpenCode as the implementer and real Claude Code, answering `reply`, as the reviewer.
fn world(reply: &str) -> (World, FakeAnthropic) {
    let mut world = World::new(&opencode::CLI);
    let claude = real_cli::claude().expect("the pinned Claude Code installs from npm");
    // The package quotes the implementer's task, `scenario:edit` included, so the reviewer's
    // fake model answers under that scenario's name too.
    let answer = json!([{"text": reply, "usage": {"input_tokens": 2000, "output_tokens": 80}}]);
    let reviewer = FakeAnthropic::start(json!({"scenarios": {"edit": answer, "default": answer}}))
        .expect("fake Anthropic starts");
    world
        .env
        .set("PITROOM_CLAUDE_BIN", claude.display().to_string());
    world.env.set("ANTHROPIC_API_KEY", "sk-ant-fake");
    world.env.set("HTTPS_PROXY", "http://127.0.0.1:9");
    world.env.set("NO_PROXY", "127.0.0.1,localhost");
    let dir = world.env.home.join(".claude");
    std::fs::create_dir_all(&dir).expect("claude dir");
    std::fs::write(
        dir.join("settings.json"),
        json!({"env": {"ANTHROPIC_BASE_URL": reviewer.base_url()}}).to_string(),
    )
    .expect("settings");
    (world, reviewer)
}

fn implement(world: &World) -> String {
    let record = world.run_json(&[
        "run",
        "-i",
        "Add a zero check to divide() scenario:edit",
        "-t",
        "90s",
        "--json",
    ]);
    assert_eq!(record["spec"]["backend"], "opencode");
    record["id"].as_str().expect("id").to_string()
}

/// `pitroom review` of run `implemented` by real Claude Code, which must exit `exit`: its record.
fn review(world: &World, implemented: &str, exit: i32) -> Value {
    let out = world.run(&["review", implemented, "-W", "claude", "-t", "90s", "--json"]);
    assert_exit(&out, exit);
    json_stdout(&out)
}

#[test]
fn claude_code_reviews_an_opencode_change_and_its_verdict_is_parsed() {
    let (world, reviewer) = world(
        "SUMMARY: the check is right; no test covers it\nDETAILS: important: calc.py:5 has no test\nSPEC: PASS · QUALITY: NEEDS_FIXES · ISSUES: critical=0 important=1 minor=0",
    );
    let implemented = implement(&world);
    let review = review(&world, &implemented, 0);
    assert_eq!(review["spec"]["backend"], "claude");
    assert_eq!(review["spec"]["review_of"], implemented.as_str());
    assert_eq!(review["verdict"]["spec_pass"], true);
    assert_eq!(review["verdict"]["approved"], false);
    assert_eq!(review["verdict"]["important"], 1);
    // The package reached the reviewer's model: the diff OpenCode made is in its request.
    let requests = reviewer.model_requests();
    assert!(
        requests
            .iter()
            .any(|r| r["body"].to_string().contains("raise ZeroDivisionError")),
        "the reviewer never saw the diff"
    );
}

#[test]
fn a_real_reviewer_that_answers_without_a_verdict_fails_the_review() {
    let (world, _reviewer) = world("SUMMARY: looks good to me");
    let implemented = implement(&world);
    let review = review(&world, &implemented, 1);
    assert_eq!(review["state"], "failed");
    assert_eq!(
        review["answer"], "SUMMARY: looks good to me",
        "the reviewer really answered"
    );
    assert!(
        str_has(&review["error"], "without a verdict line"),
        "{review:#}"
    );
}
