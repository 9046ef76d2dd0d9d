//! The behaviours every real CLI proves, each written once over a [`RealCli`] entry; the CLI's
//! file stamps out one test per behaviour with `real_cli_tests!`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use pitroom_testkit::repo::fingerprint;
use serde_json::Value;

use super::super::common::entries_under;
use super::super::common::{
    assert_exit, assert_stdout_has, bg_id, code, eventually, processes_with_env, text,
};
use super::super::failfast;
use super::{changed, ModelError, RealCli, World, TABLE};

/// Every shared behaviour: each CLI proves it (its `PROVEN`) or says why not (`unproven`).
const BEHAVIOURS: &[&str] = &[
    "a_read_run_comes_back_verified_with_citations",
    "a_write_run_records_the_workers_edits_and_reverts_byte_exact",
    "a_write_attempt_in_read_mode_is_refused_and_the_tree_is_unchanged",
    "a_git_commit_in_a_write_run_leaves_history_untouched",
    "secret_files_stay_unreadable_in_a_write_run",
    "rate_limits_are_classified_within_the_retry_cap",
    "unknown_model_bad_key_and_server_errors_are_classified",
    "every_failure_shape_fails_classified_within_the_retry_cap",
    "a_timeout_stops_the_worker_and_every_process_it_started",
    "an_interrupted_run_can_be_continued_in_its_session",
    "a_follow_up_resumes_the_same_session",
    "an_isolated_edit_stays_in_its_copy_until_applied",
    "models_are_listed_through_the_real_cli",
    "effort_reaches_the_model_request",
];

/// The value of the `.env` the secret-file runs plant.
const SECRET: &str = "API_TOKEN=tok-3f9c2a71d0e8b6";
/// The files a write run of `scenario:edit` changes, in the record's order.
const EDITED: [&str; 3] = ["README.md", "calc.py", "new file é.txt"];

#[test]
fn every_cli_proves_each_shared_behaviour_or_says_why_not() {
    for (cli, proven) in TABLE {
        let mut covered: Vec<&str> = proven.to_vec();
        covered.extend(cli.unproven.iter().map(|u| u.behaviour));
        for u in cli.unproven {
            assert!(
                !u.why.is_empty(),
                "{}: {} has no reason",
                cli.worker,
                u.behaviour
            );
            assert!(
                !proven.contains(&u.behaviour),
                "{}: {} is both proven and unproven",
                cli.worker,
                u.behaviour
            );
        }
        covered.sort_unstable();
        let mut all = BEHAVIOURS.to_vec();
        all.sort_unstable();
        assert_eq!(covered, all, "{}", cli.worker);
    }
}

/// A read question is answered in the CLI's view with verified citations in project paths,
/// its usage, cost, session and model recorded, the read profile offered, and neither the
/// tree nor the user's home touched.
pub fn a_read_run_comes_back_verified_with_citations(cli: &'static RealCli) {
    let w = World::new(cli);
    let before = fingerprint(&w.repo);
    let out = w.task(&["Where can divide fail?", "-t", cli.timing.timeout]);
    assert_exit(&out, 0);
    assert_stdout_has(&out, "pitroom ✔ done · read");
    assert_stdout_has(&out, "calc.py:7");
    assert_stdout_has(&out, "── refs: 2/2 verified");
    let r = w.record();
    let facts = &cli.read;
    assert_eq!(r["view"], facts.view, "{r:#}");
    let answer = r["answer"].as_str().expect("answer");
    assert!(
        answer.starts_with("SUMMARY: divide()"),
        "one answer, joined from its chunks: {answer}"
    );
    assert!(
        answer.contains(&format!("{}/calc.py:5-7", w.project())),
        "copy path rewritten: {answer}"
    );
    assert!(!answer.contains("snapshots"), "{answer}");
    assert_eq!(r["refs"]["total"], 2, "{r:#}");
    assert_eq!(r["refs"]["verified"], 2, "{r:#}");
    assert_eq!(r["tally"]["tool_calls"], 1, "{r:#}");
    let usage = &r["tally"]["usage"];
    assert_eq!(usage["input"], facts.usage.input, "{r:#}");
    assert_eq!(usage["cache_read"], facts.usage.cache_read, "{r:#}");
    if let Some(output) = facts.usage.output {
        assert_eq!(usage["output"], output, "{r:#}");
    }
    if let Some(reasoning) = facts.usage.reasoning {
        assert_eq!(usage["reasoning"], reasoning, "{r:#}");
    }
    let cost = &r["receipt"]["cost"];
    if facts.priced {
        assert!(cost.as_f64().is_some_and(|c| c > 0.0), "priced: {r:#}");
    } else {
        assert!(cost.is_null(), "{} reports no cost: {r:#}", cli.worker);
    }
    assert!(r["session"].as_str().is_some_and(facts.session), "{r:#}");
    assert_eq!(fingerprint(&w.repo), before, "the user's tree is untouched");
    // The record names the model the CLI said it ran: the one its requests asked for.
    let requests = w.server.model_requests();
    let asked = w
        .server
        .asked_model(&requests[0])
        .expect("the request names a model");
    if let Some(pinned) = facts.asked_model {
        assert_eq!(asked, pinned, "the user's configured model");
    }
    assert_eq!(
        r["reported_model"],
        facts.reported_model.unwrap_or(asked.as_str()),
        "{r:#}"
    );
    let tools = w.server.tools(&requests[0]);
    for tool in facts.offered {
        assert!(tools.iter().any(|t| t == tool), "{tool} not in {tools:?}");
    }
    for tool in facts.withheld {
        assert!(!tools.iter().any(|t| t == tool), "{tool} in {tools:?}");
    }
    assert_eq!(
        relative_entries_under(&w.env.home),
        config_entries_under_home(cli),
        "nothing written to the user's home but their own config"
    );
    (cli.checks.read)(&w, &r, &out);
}

/// A write run in a dirty tree records exactly the worker's edits (not the user's own, nor
/// their untracked files), and `revert` brings back every byte and the index, once.
pub fn a_write_run_records_the_workers_edits_and_reverts_byte_exact(cli: &'static RealCli) {
    let w = World::new(cli);
    let before = fingerprint(&w.repo);
    let index_before = std::fs::read(w.repo.join(".git/index")).expect("index");
    let out = w.task(&["-w", "fix divide scenario:edit", "-t", cli.timing.timeout]);
    assert_exit(&out, 0);
    let r = w.record();
    assert_eq!(changed(&r), EDITED, "{r:#}");
    assert_eq!(r["unreported"].as_array().map(Vec::len), Some(0), "{r:#}");
    let patch = w.run_file(&r, "changes.patch");
    assert!(patch.contains("+worker line"), "{patch}");
    assert!(
        patch.contains("+        raise ZeroDivisionError"),
        "{patch}"
    );
    assert!(
        !patch.contains("+user edit in progress"),
        "the user's own edit is not the worker's: {patch}"
    );
    assert!(
        !patch.contains("todo list"),
        "untracked user files stay out: {patch}"
    );
    assert_ne!(fingerprint(&w.repo), before);
    (cli.checks.write)(&w, &r);

    let out = w.run(&["revert"]);
    assert_exit(&out, 0);
    assert_eq!(
        fingerprint(&w.repo),
        before,
        "every file byte-identical after revert"
    );
    assert_eq!(
        std::fs::read(w.repo.join(".git/index")).expect("index"),
        index_before,
        "the index is untouched"
    );
    let out = w.run(&["revert"]);
    assert_eq!(code(&out), 3, "a second revert is refused: {}", text(&out));
}

/// Each of the CLI's ways to write (its edit tools, its shell) is refused in read mode: the
/// run ends normally with the refusal counted, no change and no violation.
pub fn a_write_attempt_in_read_mode_is_refused_and_the_tree_is_unchanged(cli: &'static RealCli) {
    let w = World::new(cli);
    let before = fingerprint(&w.repo);
    for task in cli.read_mode_writes {
        let out = w.task(&[task, "-t", cli.timing.timeout]);
        assert_eq!(code(&out), 0, "{task}: {}", text(&out));
        let r = w.record();
        let stderr = w.run_file(&r, "stderr.log");
        assert!(
            denied(&r) >= 1 || cli.refusal_on_stderr.iter().any(|l| stderr.contains(l)),
            "{task}: {r:#}\n{stderr}"
        );
        assert_eq!(r["read_only_violation"], false, "{r:#}");
        assert!(
            r["changes"].as_array().is_some_and(|c| c.is_empty()),
            "{r:#}"
        );
        let copy = PathBuf::from(r["copy"].as_str().unwrap_or(""));
        assert!(
            !copy.join("sneaky.txt").exists(),
            "a read copy stays unchanged too"
        );
    }
    assert_eq!(fingerprint(&w.repo), before);
}

/// A worker that runs `git commit` in a write run leaves every ref and HEAD as they were.
pub fn a_git_commit_in_a_write_run_leaves_history_untouched(cli: &'static RealCli) {
    let commit = cli.git_commit.as_ref().expect("the entry's git_commit");
    let w = World::new(cli);
    let refs = || {
        w.env.git(
            &w.repo,
            &["for-each-ref", "--format=%(refname) %(objectname)"],
        )
    };
    let (refs_before, head_before) = (refs(), w.env.git(&w.repo, &["rev-parse", "HEAD"]));
    let out = w.task(&["-w", commit.task, "-t", cli.timing.timeout]);
    assert_exit(&out, 0);
    assert_eq!(refs(), refs_before, "no commit, no new ref");
    assert_eq!(w.env.git(&w.repo, &["rev-parse", "HEAD"]), head_before);
    if commit.denied_by_profile {
        let r = w.record();
        assert!(denied(&r) >= 1, "{r:#}");
    }
}

/// Even a write run cannot read a secret file, and its content never reaches the model; a
/// template of it stays readable.
pub fn secret_files_stay_unreadable_in_a_write_run(cli: &'static RealCli) {
    let read = cli.secret_read.as_ref().expect("the entry's secret_read");
    let w = World::new(cli);
    std::fs::write(w.repo.join(".env"), format!("{SECRET}\n")).expect(".env");
    std::fs::create_dir_all(w.repo.join("config")).expect("config dir");
    std::fs::write(
        w.repo.join("config/.env.example"),
        "API_TOKEN=put-yours-here\n",
    )
    .expect(".env.example");
    let r = w.run_json(&[
        "run",
        "-W",
        cli.worker,
        "-w",
        read.task,
        "-t",
        cli.timing.timeout,
        "--json",
    ]);
    let sent: String = w
        .server
        .model_requests()
        .iter()
        .map(|q| q["body"].to_string())
        .collect();
    assert!(!sent.contains(SECRET), "the secret reached the model");
    let refused = denied(&r) + r["tally"]["failed_calls"].as_u64().unwrap_or(0);
    if read.template {
        assert_eq!(r["tally"]["tool_calls"], 2, "{r:#}");
        assert_eq!(refused, 1, "the secret refused, the template read: {r:#}");
        assert!(sent.contains("put-yours-here"), "the template was readable");
    } else if read.denied {
        assert!(denied(&r) >= 1, "{r:#}");
    } else {
        assert!(refused >= 1, "{r:#}");
    }
}

/// Rate and usage limits end the run classified as `rate_limited`, within the retry cap.
pub fn rate_limits_are_classified_within_the_retry_cap(cli: &'static RealCli) {
    classify_each(cli, cli.rate_limits);
}

/// An unknown model, a bad key and a server error end the run classified, within the cap.
pub fn unknown_model_bad_key_and_server_errors_are_classified(cli: &'static RealCli) {
    classify_each(cli, cli.other_errors);
}

fn classify_each(cli: &'static RealCli, errors: &[ModelError]) {
    assert!(!errors.is_empty(), "{}: no errors in the table", cli.worker);
    let w = World::new(cli);
    for error in errors {
        let scenario = error.scenario;
        let before = w.server.model_requests().len();
        // Each scenario runs at once: a rate limit noted by the one before must not hold it.
        let out = w.task(&[
            &format!("anything scenario:{scenario}"),
            "-t",
            "600s",
            "--no-hold",
        ]);
        assert_eq!(code(&out), 1, "{scenario}: {}", text(&out));
        let calls = w.server.model_requests().len() - before;
        let cap = if error.capped {
            cli.retry_cap
        } else {
            usize::MAX
        };
        assert!(
            (1..=cap).contains(&calls),
            "{scenario}: {calls} model calls, the cap allows {}",
            cli.retry_cap
        );
        let r = w.record();
        assert_eq!(r["state"], "failed", "{scenario}: {r:#}");
        assert_eq!(r["failure"], error.failure, "{scenario}: {r:#}");
        if let Some(says) = error.says {
            assert!(
                r["error"]
                    .as_str()
                    .is_some_and(|e| e.to_lowercase().contains(says)),
                "{scenario}: {r:#}"
            );
        }
        if error.failure == "model_unavailable" {
            assert!(
                String::from_utf8_lossy(&out.stdout).contains("hint: model unavailable"),
                "{scenario}: {}",
                text(&out)
            );
        }
    }
}

/// Issue 16, item 11: each provider failure shape ends the CLI's run classified, within the
/// retry cap Pitroom sets, so the fallback chain gets its turn (matrix in docs/workers/README.md).
pub fn every_failure_shape_fails_classified_within_the_retry_cap(cli: &'static RealCli) {
    let w = World::new(cli);
    failfast::walk(
        cli.worker,
        &cli.failure_shapes.shapes(),
        cli.retry_cap,
        // Each shape runs at once: a rate limit noted by the one before must not hold it.
        |args| w.task(&[args, &["--no-hold"]].concat()),
        || w.server.model_requests().len(),
        || w.record(),
    );
}

/// A run past its time limit exits 4, its record says `timeout` and how to continue, and
/// nothing the worker started is left running.
pub fn a_timeout_stops_the_worker_and_every_process_it_started(cli: &'static RealCli) {
    let w = World::new(cli);
    let out = w.task(&["wait forever scenario:hang", "-t", cli.timing.stall_limit]);
    assert_exit(&out, 4);
    let r = w.record();
    assert_eq!(r["state"], "timeout", "{r:#}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("--continue"));
    let state = w.env.state.display().to_string();
    assert!(
        eventually(Duration::from_secs(5), || processes_with_env(&state)
            .is_empty()),
        "left running: {:?}",
        processes_with_env(&state)
    );
}

/// A run stopped while its CLI waits on the model is continued in the same session. The stop
/// comes once the record names the CLI's session and the fake server holds the request it
/// never answers, not after a time limit: a loaded machine can take longer than any limit to
/// start the CLI, and a run ended before its CLI saved the session has nothing to continue
/// (Qwen reports its session id before it saves it). (The time limit itself:
/// `a_timeout_stops_the_worker_…`.)
pub fn an_interrupted_run_can_be_continued_in_its_session(cli: &'static RealCli) {
    let w = World::new(cli);
    let stall = &cli.timing.resumable_stall;
    let task = format!("first wait scenario:{}", stall.scenario);
    let id = bg_id(&w.task(&["--bg", &task, "-t", cli.timing.timeout]));
    let waiting = || {
        w.server
            .model_requests()
            .iter()
            .any(|r| r["scenario"] == stall.scenario && r["step"] == stall.waits_at)
    };
    assert!(
        eventually(Duration::from_secs(120), || waiting()
            && w.record()["session"].is_string()),
        "the CLI never waited on the model in a session: {:#}\n{:#?}",
        w.record(),
        w.server.model_requests()
    );
    w.env.run_expecting(&w.repo, &["stop", &id], 0);
    let first = w.record();
    assert_eq!(first["state"], "stopped", "{first:#}");
    let out = w.task(&[
        "--continue",
        "last",
        "Where can divide fail? scenario:default",
        "-t",
        cli.timing.timeout,
    ]);
    assert_exit(&out, 0);
    let second = w.record();
    assert_eq!(first["session"], second["session"], "{first:#}\n{second:#}");
}

/// `--continue last` resumes the CLI's session: a new run, the same session and view, and the
/// model sees the whole conversation again.
pub fn a_follow_up_resumes_the_same_session(cli: &'static RealCli) {
    let w = World::new(cli);
    let out = w.task(&["Where can divide fail?", "-t", cli.timing.timeout]);
    assert_exit(&out, 0);
    let first = w.record();
    let out = w.task(&["--continue", "last", "And add?", "-t", cli.timing.timeout]);
    assert_exit(&out, 0);
    let second = w.record();
    assert_ne!(first["id"], second["id"]);
    assert_eq!(first["session"], second["session"], "{second:#}");
    assert_eq!(
        (&first["view"], &second["view"]),
        (&cli.read.view.into(), &cli.read.view.into()),
        "a follow-up reads the way its first run did"
    );
    let last = w.server.model_requests().last().cloned().expect("requests");
    let turns = w.server.user_turns(&last);
    assert!(turns.len() >= 2, "{last:#}");
    for asked in ["divide fail", "And add?"] {
        assert!(
            turns.iter().any(|t| t.contains(asked)),
            "the model saw the whole conversation: {turns:#?}"
        );
    }
    if cli.read.priced {
        // Each run has its own cost, not the session's running total.
        assert!(
            first["receipt"]["cost"].as_f64().is_some()
                && second["receipt"]["cost"].as_f64().is_some(),
            "{first:#} {second:#}"
        );
    }
}

/// An isolated edit stays in the run's copy (in the state dir) until `apply` lands it.
pub fn an_isolated_edit_stays_in_its_copy_until_applied(cli: &'static RealCli) {
    let w = World::new(cli);
    let before = fingerprint(&w.repo);
    let out = w.task(&["-i", "fix divide scenario:edit", "-t", cli.timing.timeout]);
    assert_exit(&out, 0);
    assert_eq!(
        fingerprint(&w.repo),
        before,
        "nothing reaches the tree before apply"
    );
    let r = w.record();
    let copy = PathBuf::from(r["copy"].as_str().expect("copy"));
    assert!(
        copy.starts_with(&w.env.state),
        "the copy lives in the state dir"
    );
    // The CLI really worked in the copy: its events name the copy's files.
    assert_eq!(changed(&r), EDITED, "{r:#}");
    (cli.checks.write)(&w, &r);
    let expected = fingerprint(&copy);
    let out = w.run(&["apply"]);
    assert_exit(&out, 0);
    assert_eq!(fingerprint(&w.repo), expected);
    let readme = std::fs::read_to_string(w.repo.join("README.md")).expect("readme");
    assert!(
        readme.contains("user edit in progress\nworker line"),
        "{readme}"
    );
}

/// `pitroom models <cli>` lists the user's own models through the real CLI.
pub fn models_are_listed_through_the_real_cli(cli: &'static RealCli) {
    let listed = cli.listed_model.as_ref().expect("the entry's listed_model");
    let w = World::new(cli);
    let v = w.run_json(&["models", cli.worker, "--json"]);
    assert_eq!(v["worker"], cli.worker);
    let model = v["models"]
        .as_array()
        .expect("models")
        .iter()
        .find(|m| m["id"] == listed.id)
        .cloned()
        .unwrap_or_else(|| panic!("no {}: {v:#}", listed.id));
    if let Some(effort) = listed.effort {
        assert!(
            model["efforts"]
                .as_array()
                .is_some_and(|e| e.iter().any(|x| x == effort)),
            "{model:#}"
        );
    }
}

/// `--effort xhigh` reaches the first model request where the CLI's API carries it.
pub fn effort_reaches_the_model_request(cli: &'static RealCli) {
    let at = cli.effort_at.expect("the entry's effort_at");
    let w = World::new(cli);
    let out = w.task(&[
        "Where can divide fail?",
        "--effort",
        "xhigh",
        "-t",
        cli.timing.timeout,
    ]);
    assert_exit(&out, 0);
    let first = w.server.model_requests()[0].clone();
    assert_eq!(first.pointer(at), Some(&Value::from("xhigh")), "{first:#}");
}

fn denied(record: &Value) -> u64 {
    record["tally"]["denied_calls"].as_u64().unwrap_or(0)
}

/// Every file and folder under `dir`, relative and sorted.
fn relative_entries_under(dir: &Path) -> Vec<String> {
    let mut found: Vec<String> = entries_under(dir)
        .iter()
        .map(|path| {
            let rel = path.strip_prefix(dir).expect("under dir");
            rel.display().to_string()
        })
        .collect();
    found.sort();
    found
}

/// The entries the user's own config puts under their home (`.codex`, `.codex/config.toml`).
fn config_entries_under_home(cli: &RealCli) -> Vec<String> {
    let Some(rel) = cli
        .provider
        .config
        .as_ref()
        .and_then(|c| c.path.strip_prefix("home/"))
    else {
        return Vec::new();
    };
    let mut found: Vec<String> = Path::new(rel)
        .ancestors()
        .filter(|a| !a.as_os_str().is_empty())
        .map(|a| a.display().to_string())
        .collect();
    found.sort();
    found
}
