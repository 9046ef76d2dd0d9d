//! Repair rounds (`--attempts N`) on the fake worker: a failed `--verify` goes back to the same
//! worker session with the check's output, each round is an attempt on record, and the patch
//! holds the work of every round.

use pitroom_testkit::repo::dirty_repo;
use serde_json::{json, Value};

use super::common::{
    args_of, assert_stdout_has, fake_env, record, record_invocations, recorded, stderr, text,
};

/// A worker whose first round leaves `calc.py` broken and whose next round fixes it: the
/// `once` block runs only while its marker does not exist yet.
fn broken_then_fixed() -> Value {
    json!([
        {"once": {"marker": "first-round", "do": [
            {"write": {"path": "calc.py", "content": "def divide(a, b):\n    return a / b  # broken\n"}},
            {"text": "SUMMARY: divided\nFILES CHANGED: calc.py"},
            {"exit": 0}
        ]}},
        {"write": {"path": "calc.py", "content": "def divide(a, b):\n    return a / b if b else 0  # fixed\n"}},
        {"text": "SUMMARY: fixed the check\nFILES CHANGED: calc.py"}
    ])
}

const CHECK: &str = "echo checking calc; grep -q fixed calc.py";

#[test]
fn a_failed_check_goes_back_to_the_same_session_and_the_run_passes_on_round_two() {
    let mut env = fake_env(broken_then_fixed());
    let calls = record_invocations(&mut env, "opencode");
    let repo = dirty_repo(&env, "repo");
    let out = env.run_expecting(
        &repo,
        &[
            "-i",
            "--verify",
            CHECK,
            "--attempts",
            "3",
            "make divide safe",
        ],
        0,
    );
    assert_stdout_has(&out, "── verify: ✔ passed");
    assert_stdout_has(&out, "on round 2 of 3: echo checking calc");
    assert_stdout_has(&out, "verify failed (exit 1) → round 2");

    // The second round resumed the first round's session and was told what failed.
    let second = recorded(&calls);
    let args = args_of(&second);
    let at = args.iter().position(|a| *a == "--session");
    assert_eq!(
        at.and_then(|i| args.get(i + 1)).copied(),
        Some("ses_fake0001"),
        "{args:?}"
    );
    let prompt = second["prompt"].as_str().unwrap_or_default();
    assert!(
        prompt.contains(&format!(
            "REPAIR (round 2 of 3): the check `{CHECK}` failed with exit code 1"
        )),
        "{prompt}"
    );
    assert!(
        prompt.contains("checking calc"),
        "the check's output: {prompt}"
    );

    let r = record(&env, &repo);
    let attempts = r["attempts"].as_array().expect("attempts");
    assert_eq!(attempts.len(), 2, "{r:#}");
    assert_eq!(attempts[0]["repaired"], true);
    assert_eq!(attempts[0]["verify"]["passed"], false);
    assert_eq!(attempts[0]["verify"]["exit_code"], 1);
    assert_eq!(attempts[1]["round"], 2);
    assert_eq!(attempts[1]["verify"]["passed"], true);
    assert_eq!(attempts[1]["state"], "done");
    assert_eq!(r["state"], "done");

    // What apply lands is the work of both rounds: the fixed file.
    env.run_expecting(&repo, &["apply"], 0);
    let landed = std::fs::read_to_string(repo.join("calc.py")).unwrap();
    assert!(landed.contains("# fixed"), "{landed}");
}

#[test]
fn when_every_round_fails_the_run_fails_with_exit_6_and_revert_undoes_every_round() {
    let env = fake_env(json!([
        {"write": {"path": "calc.py", "content": "def divide(a, b):\n    return 'nope'\n"}},
        {"write": {"path": "notes.txt", "content": "a note\n"}},
        {"text": "SUMMARY: tried"}
    ]));
    let repo = dirty_repo(&env, "repo");
    let before = std::fs::read(repo.join("calc.py")).unwrap();
    let out = env.run_expecting(
        &repo,
        &[
            "-w",
            "--verify",
            "echo still failing; exit 3",
            "--attempts",
            "2",
            "fix",
        ],
        6,
    );
    assert_stdout_has(&out, "── verify: ✘ failed (exit 3)");
    assert_stdout_has(&out, "on round 2 of 2");
    assert_stdout_has(&out, "| still failing");
    let r = record(&env, &repo);
    let rounds: Vec<u64> = r["attempts"]
        .as_array()
        .expect("attempts")
        .iter()
        .map(|a| a["round"].as_u64().unwrap_or(1))
        .collect();
    assert_eq!(rounds, [1, 2], "{r:#}");
    assert_eq!(r["attempts"][1]["verify"]["passed"], false);
    assert_eq!(
        r["attempts"][1]["repaired"],
        Value::Null,
        "the last round is not sent back"
    );

    env.run_expecting(&repo, &["revert"], 0);
    assert_eq!(std::fs::read(repo.join("calc.py")).unwrap(), before);
    assert!(!repo.join("notes.txt").exists(), "{}", text(&out));
}

#[test]
fn attempts_is_refused_without_a_check_and_on_read_runs() {
    let env = fake_env(json!([{"text": "done"}]));
    let repo = dirty_repo(&env, "repo");
    let no_check = env.run_expecting(&repo, &["-w", "--attempts", "2", "fix"], 2);
    assert!(
        stderr(&no_check).contains("--verify"),
        "{}",
        text(&no_check)
    );
    let read = env.run_expecting(
        &repo,
        &["-r", "--verify", "true", "--attempts", "2", "look"],
        2,
    );
    assert!(
        stderr(&read).contains("a read run cannot change anything"),
        "{}",
        text(&read)
    );
    let too_many = env.run_expecting(
        &repo,
        &["-w", "--verify", "true", "--attempts", "11", "fix"],
        2,
    );
    assert!(
        stderr(&too_many).contains("between 1 and 10"),
        "{}",
        text(&too_many)
    );
}
