//! Unit tests of the run's stages that need no worker: the stream's reading of events, the
//! judge and the fallback decision, paths, the worker's environment, sandbox notes, verify.

use std::fs::File;
use std::path::Path;
use std::time::Duration;

use pitroom_proc::{GitDirState, LandlockState, SandboxReport};
use pitroom_workers::{
    adapter_for, Adapter, FailureKind, Invocation, Mode, PromptInput, SettingsFile, StateDirs,
    ToolOutcome, WorkerEvent,
};

use super::changes::unreported;
use super::fallback::{fallback_chain, fallback_failure};
use super::judge::{judge, Evidence, Judgement};
use super::launch::{place_prompt, sandbox_notes, worker_env, write_settings};
use super::paths::{project_relative, rewrite_paths};
use super::stream::{own_usage_of_follow_up, Ending, FileTail, Stream};
use super::verify::verify_failure;
use crate::record::{ChainTarget, ChangedFile, RunRecord, RunSpec, RunState};

#[test]
fn a_step_in_a_read_copy_names_the_project_path() {
    let roots = vec![
        "/s/snapshots/d4ae/".to_string(),
        "/home/u/proj/".to_string(),
    ];
    assert_eq!(
        project_relative("read /s/snapshots/d4ae/src/calc.py", &roots),
        "read src/calc.py"
    );
    assert_eq!(
        project_relative("grep x /home/u/proj/src", &roots),
        "grep x src"
    );
    assert_eq!(project_relative("list /home/u/proj", &roots), "list .");
    assert_eq!(
        project_relative("read /etc/hosts", &roots),
        "read /etc/hosts"
    );
}

fn text(m: &str, t: &str) -> WorkerEvent {
    WorkerEvent::Text {
        message: Some(m.into()),
        text: t.into(),
    }
}

fn blank_record() -> RunRecord {
    let spec = RunSpec {
        timeout: Duration::from_secs(1),
        watchdog: Duration::from_secs(1),
        verify_timeout: Duration::from_secs(60),
        ..RunSpec::new("t", Mode::Read, "opencode", "/")
    };
    RunRecord::new(
        "x".into(),
        spec,
        "2026-01-01T00:00:00Z".parse().expect("a stamp"),
    )
}

#[test]
fn a_follow_up_of_a_cli_reporting_session_totals_counts_only_its_own_usage() {
    let mut parent = blank_record();
    parent.tally.usage.input = 2500;
    let mut second = blank_record();
    let mut stream = Stream::default();
    stream.tally.usage.input = 5000;
    stream.tally.usage.output = 30;
    own_usage_of_follow_up(&mut second, &mut stream, Some(&parent));
    assert_eq!(stream.tally.usage.input, 2500);
    assert_eq!(stream.tally.usage.output, 30);
    assert_eq!(second.session_usage.map(|u| u.input), Some(5000));
    // The next follow-up subtracts the session's total so far, not the parent's share.
    let mut third = blank_record();
    let mut stream = Stream::default();
    stream.tally.usage.input = 7000;
    own_usage_of_follow_up(&mut third, &mut stream, Some(&second));
    assert_eq!(stream.tally.usage.input, 2000);
}

#[test]
fn the_answer_is_the_last_message_that_said_anything() {
    let mut s = Stream::default();
    let mut r = blank_record();
    s.absorb(vec![text("m1", "Let me look.")], &mut r);
    s.absorb(
        vec![text("m2", "SUMMARY: a"), text("m2", "DETAILS: b")],
        &mut r,
    );
    s.absorb(vec![text("m3", "  ")], &mut r);
    assert_eq!(s.answer().as_deref(), Some("SUMMARY: a\nDETAILS: b"));
}

#[test]
fn empty_steps_in_a_row_trip_the_watchdog_only_after_the_limit() {
    let mut s = Stream::default();
    let mut r = blank_record();
    let empty = WorkerEvent::StepFinished {
        reason: Some("unknown".into()),
        usage: None,
        cost: Some(0.0),
    };
    s.absorb(vec![text("m", "partial")], &mut r);
    for _ in 0..5 {
        s.absorb(vec![WorkerEvent::StepStarted, empty.clone()], &mut r);
    }
    assert!(s.stalled(Duration::ZERO));
    assert!(!s.stalled(Duration::from_secs(3600)));
    s.absorb(vec![text("m", "partial again")], &mut r);
    assert!(s.stalled(Duration::ZERO), "repeated text is no progress");
    let done = WorkerEvent::StepFinished {
        reason: Some("stop".into()),
        usage: None,
        cost: None,
    };
    s.absorb(vec![done], &mut r);
    assert!(!s.stalled(Duration::ZERO));
}

#[test]
fn tally_counts_steps_tools_denials_and_cost() {
    let mut s = Stream::default();
    let mut r = blank_record();
    s.absorb(
        vec![
            WorkerEvent::Session { id: "ses_1".into() },
            WorkerEvent::ToolCall {
                name: "edit".into(),
                summary: "a".into(),
                outcome: ToolOutcome::Denied,
                error: None,
                edited: None,
            },
            WorkerEvent::ToolCall {
                name: "read".into(),
                summary: "b".into(),
                outcome: ToolOutcome::Ok,
                error: None,
                edited: None,
            },
            WorkerEvent::StepFinished {
                reason: Some("stop".into()),
                usage: Some(pitroom_workers::Usage {
                    input: 10,
                    output: 2,
                    ..Default::default()
                }),
                cost: Some(0.5),
            },
        ],
        &mut r,
    );
    assert_eq!(r.session.as_deref(), Some("ses_1"));
    assert_eq!(
        (s.tally.steps, s.tally.tool_calls, s.tally.denied_calls),
        (1, 2, 1)
    );
    assert_eq!(s.tally.cost, Some(0.5));
    assert_eq!(r.last_step.as_deref(), Some("read b"));
}

#[test]
fn file_tail_hands_over_complete_lines_as_they_are_appended() {
    use std::io::Write as _;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stderr.log");
    let mut tail = FileTail::new(path.clone());
    let mut seen = Vec::new();
    tail.poll(|l| seen.push(l.to_string()));
    assert!(seen.is_empty(), "no file yet");
    let mut f = File::create(&path).unwrap();
    write!(f, "one\ntw").unwrap();
    tail.poll(|l| seen.push(l.to_string()));
    write!(f, "o\nthree\n").unwrap();
    tail.poll(|l| seen.push(l.to_string()));
    assert_eq!(seen, vec!["one", "two", "three"]);
}

#[test]
fn copy_paths_in_answers_become_project_paths() {
    let out = rewrite_paths(
        "see /h/snap/abc/src/a.rs:3",
        Path::new("/h/snap/abc"),
        Path::new("/p"),
    );
    assert_eq!(out, "see /p/src/a.rs:3");
}

#[test]
fn worker_env_applies_removals_settings_and_floor() {
    let base = vec![
        ("OPENCODE_CONFIG".to_string(), "x".to_string()),
        ("PATH".to_string(), "/bin".to_string()),
        ("PAGER".to_string(), "less".to_string()),
    ];
    let inv = pitroom_workers::Invocation {
        program: "opencode".into(),
        args: vec![],
        prompt: PromptInput::Stdin,
        files: vec![],
        env: vec![("A".into(), "1".into())],
        env_remove: vec!["OPENCODE_CONFIG".into()],
        notes: vec![],
        links: vec![],
    };
    let env = worker_env(&base, &inv);
    let get = |k: &str| {
        env.iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.to_string_lossy().into_owned())
    };
    assert_eq!(get("OPENCODE_CONFIG"), None);
    assert_eq!(get("PATH").as_deref(), Some("/bin"));
    assert_eq!(get("A").as_deref(), Some("1"));
    assert_eq!(get("PAGER").as_deref(), Some("cat"));
    assert_eq!(get("PITROOM_ACTIVE").as_deref(), Some("1"));
}

#[test]
fn settings_files_are_written_private_whole_and_in_their_own_folders() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("a/b/settings.json");
    std::fs::create_dir_all(path.parent().expect("parent")).expect("dirs");
    std::fs::write(&path, "an older, longer settings file").expect("old file");
    let files = [SettingsFile {
        path: path.clone(),
        content: "{\"k\": \"it's $HOME `x`\"}".into(),
    }];
    let dirs = StateDirs {
        shared: dir.path().join("a"),
        scratch: dir.path().join("run/scratch"),
    };
    write_settings(&dirs, &files).expect("written");
    assert_eq!(
        std::fs::read_to_string(&path).expect("read"),
        "{\"k\": \"it's $HOME `x`\"}"
    );
    let mode = std::fs::metadata(&path).expect("stat").permissions().mode();
    assert_eq!(mode & 0o077, 0, "settings may hold keys: {mode:o}");
    let leftovers: Vec<_> = std::fs::read_dir(path.parent().expect("parent"))
        .expect("list")
        .collect();
    assert_eq!(leftovers.len(), 1, "no temp file left: {leftovers:?}");
}

#[test]
fn a_link_a_worker_left_in_its_state_dir_never_steers_the_next_runs_writes() {
    let dir = tempfile::tempdir().expect("temp dir");
    let victim = dir.path().join("repo/.git/hooks");
    std::fs::create_dir_all(&victim).expect("hooks");
    let dirs = StateDirs {
        shared: dir.path().join("workers/cli"),
        scratch: dir.path().join("runs/1/scratch"),
    };
    std::fs::create_dir_all(&dirs.shared).expect("shared");
    // The previous run replaced its config dir by a link into the repository.
    std::os::unix::fs::symlink(&victim, dirs.shared.join("config")).expect("plant");
    super::tree::prepare_dirs(
        &dirs,
        &[(
            dirs.shared.join("config/cli/auth.json"),
            dir.path().join("auth.json"),
        )],
    );
    let files = [SettingsFile {
        path: dirs.shared.join("config/cli/post-checkout"),
        content: "#!/bin/sh\necho owned\n".into(),
    }];
    write_settings(&dirs, &files).expect("written");
    assert!(std::fs::symlink_metadata(dirs.shared.join("config"))
        .expect("config")
        .is_dir());
    assert_eq!(
        std::fs::read_dir(&victim).expect("hooks").count(),
        0,
        "nothing landed in the link's target"
    );
    let outside = [SettingsFile {
        path: dir.path().join("repo/.git/config"),
        content: String::new(),
    }];
    assert!(write_settings(&dirs, &outside).is_err());
}

#[test]
fn a_settings_file_that_cannot_be_written_stops_the_launch_and_names_the_file() {
    let files = [SettingsFile {
        path: "/proc/nope/settings.json".into(),
        content: "{}".into(),
    }];
    let dirs = StateDirs {
        shared: "/proc/nope".into(),
        scratch: "/proc/nope/scratch".into(),
    };
    let e = write_settings(&dirs, &files).expect_err("refused");
    assert!(e.to_string().contains("/proc/nope/settings.json"), "{e}");
}

#[test]
fn the_prompt_goes_on_stdin_or_whole_into_the_argument_the_adapter_names() {
    let mut inv = Invocation {
        program: "cli".into(),
        args: vec!["--flag".into(), "-p".into()],
        prompt: PromptInput::Stdin,
        files: vec![],
        env: vec![],
        env_remove: vec![],
        notes: vec![],
        links: vec![],
    };
    let file = Path::new("/run/prompt.md");
    let prompt = "-p --force\nsecond line";
    assert_eq!(
        place_prompt(&inv, prompt, file),
        (inv.args.clone(), Some(file.to_path_buf()))
    );
    inv.prompt = PromptInput::Argument { index: 2 };
    let (args, stdin) = place_prompt(&inv, prompt, file);
    assert_eq!(args, ["--flag", "-p", prompt]);
    assert_eq!(stdin, None, "stdin closed: the CLI reads the argument");
}

fn opencode() -> Box<dyn Adapter> {
    adapter_for("opencode").expect("opencode is built in")
}

/// What a finished attempt left, as the judge sees it: nothing changed, no stderr.
fn evidence<'a>(
    spec: &'a RunSpec,
    ending: Ending,
    stream: &'a Stream,
    answer: Option<&'a str>,
) -> Evidence<'a> {
    Evidence {
        spec,
        ending,
        stream,
        answer,
        stderr_tail: "",
        read_only_violation: false,
        changed_files: 0,
    }
}

/// The judgement of opencode's adapter on `evidence(spec, ending, stream, answer)`.
fn judged(spec: &RunSpec, ending: Ending, stream: &Stream, answer: Option<&str>) -> Judgement {
    judge(&evidence(spec, ending, stream, answer), opencode().as_ref())
}

fn rate_limited() -> Stream {
    let mut s = Stream::default();
    s.absorb(
        vec![WorkerEvent::Error {
            message: "Rate limit reached for requests".into(),
            status: Some(429),
            retry_after: Some(7),
        }],
        &mut blank_record(),
    );
    s
}

#[test]
fn judge_calls_an_answer_done_and_warns_when_the_worker_exited_badly() {
    let r = blank_record();
    let s = Stream::default();
    let j = judged(&r.spec, Ending::Exited(0), &s, Some("SUMMARY: ok"));
    assert_eq!(
        j,
        Judgement {
            state: RunState::Done,
            error: None,
            failure: None,
            worker_exit: Some(0),
            verdict: None,
            warning: None,
        }
    );
    let s = rate_limited();
    let j = judged(&r.spec, Ending::Exited(2), &s, Some("SUMMARY: ok"));
    assert_eq!(j.state, RunState::Done);
    assert_eq!(
        j.warning.as_deref(),
        Some("the worker exited with code 2 after an error (Rate limit reached for requests) but gave an answer")
    );
}

#[test]
fn judge_says_why_a_run_without_an_answer_failed() {
    let r = blank_record();
    let s = rate_limited();
    let j = judged(&r.spec, Ending::Exited(1), &s, None);
    assert_eq!(
        (j.state, j.error.as_deref(), j.failure, j.worker_exit),
        (
            RunState::Failed,
            Some("Rate limit reached for requests"),
            Some(FailureKind::RateLimited),
            Some(1)
        )
    );
    let s = Stream::default();
    let e = Evidence {
        stderr_tail: "starting\nfatal: no config\n\n",
        ..evidence(&r.spec, Ending::Exited(3), &s, None)
    };
    let j = judge(&e, opencode().as_ref());
    assert_eq!(
        j.error.as_deref(),
        Some("the worker exited with code 3: fatal: no config")
    );
    assert!(j.failure.is_some(), "a failed exit is classified");
    let j = judged(&r.spec, Ending::Exited(0), &s, None);
    assert_eq!(
        (j.error.as_deref(), j.failure),
        (Some("the worker printed no events and no answer"), None)
    );
    let mut s = Stream {
        lines: 4,
        ..Stream::default()
    };
    s.tally.denied_calls = 1;
    let j = judged(&r.spec, Ending::Exited(0), &s, None);
    assert_eq!(
        j.error.as_deref(),
        Some("the worker ended without an answer after a permission was denied")
    );
    s.tally.denied_calls = 0;
    let j = judged(&r.spec, Ending::Exited(0), &s, None);
    assert_eq!(
        j.error.as_deref(),
        Some("the worker ended without an answer")
    );
}

#[test]
fn judge_ends_stops_budget_stops_timeouts_and_stalls_whatever_the_worker_said() {
    let r = blank_record();
    let s = Stream::default();
    let answer = Some("SUMMARY: ok");
    let j = judged(&r.spec, Ending::Stopped, &s, answer);
    assert_eq!(
        (j.state, j.error.as_deref(), j.worker_exit),
        (
            RunState::Stopped,
            Some("stopped before the worker finished; what it did is kept"),
            None
        )
    );
    let over = Stream {
        over_budget: Some("used 1400 tokens of its 1000 cap".into()),
        ..Stream::default()
    };
    let j = judged(&r.spec, Ending::OverBudget, &over, answer);
    assert_eq!(
        (j.state, j.error.as_deref(), j.worker_exit),
        (
            RunState::OverBudget,
            Some("over budget: used 1400 tokens of its 1000 cap; the worker was stopped and what it did is kept"),
            None
        )
    );
    let j = judged(&r.spec, Ending::TimedOut, &s, answer);
    assert_eq!(j.state, RunState::Timeout);
    assert!(j.error.unwrap().starts_with("timed out after "));
    let j = judged(&r.spec, Ending::Stalled, &s, answer);
    assert_eq!(
        (j.state, j.failure),
        (RunState::Failed, Some(FailureKind::Other))
    );
    let s = Stream {
        retry_errors: 3,
        last_retry_error: Some("Rate limit reached for requests".into()),
        ..Stream::default()
    };
    let j = judged(&r.spec, Ending::RetriesExhausted, &s, None);
    assert_eq!(
        (j.state, j.failure, j.error.as_deref()),
        (
            RunState::Failed,
            Some(FailureKind::RateLimited),
            Some("Rate limit reached for requests — the worker kept retrying (3 failed attempts); Pitroom stopped it so the failure surfaces now")
        )
    );
}

#[test]
fn judge_fails_a_read_only_violation_and_a_review_without_a_verdict() {
    let r = blank_record();
    let s = Stream::default();
    let e = Evidence {
        read_only_violation: true,
        changed_files: 2,
        ..evidence(&r.spec, Ending::Exited(0), &s, Some("SUMMARY: ok"))
    };
    let j = judge(&e, opencode().as_ref());
    assert_eq!(j.state, RunState::Failed);
    assert_eq!(
        j.error.as_deref(),
        Some("READ-ONLY VIOLATION: the worker changed 2 file(s) in its read-only copy; your tree is untouched")
    );
    let mut review = blank_record();
    review.spec.review_of = Some("abc".into());
    let j = judged(&review.spec, Ending::Exited(0), &s, Some("looks fine"));
    assert_eq!((j.state, j.verdict.is_none()), (RunState::Failed, true));
    assert!(j
        .error
        .unwrap()
        .starts_with("the reviewer answered without a verdict line"));
    let answer = "ok\nSPEC: PASS · QUALITY: APPROVED · ISSUES: critical=0 important=1 minor=2";
    let j = judged(&review.spec, Ending::Exited(0), &s, Some(answer));
    assert_eq!(j.state, RunState::Done);
    assert_eq!(
        j.verdict.map(|v| (v.spec_pass, v.important)),
        Some((true, 1))
    );
}

#[test]
fn a_judgement_sets_only_what_it_decides() {
    let mut r = blank_record();
    r.warnings.push("earlier".into());
    Judgement {
        state: RunState::Done,
        error: None,
        failure: None,
        worker_exit: Some(1),
        verdict: None,
        warning: Some("exited 1".into()),
    }
    .apply(&mut r);
    assert_eq!(
        (r.state, r.error, r.failure, r.worker_exit),
        (RunState::Done, None, None, Some(1))
    );
    assert_eq!(r.warnings, vec!["earlier", "exited 1"]);
}

#[test]
fn a_rate_limited_attempt_falls_back_with_the_providers_wait() {
    let r = blank_record();
    let s = rate_limited();
    let decision = fallback_failure(
        &evidence(&r.spec, Ending::Exited(1), &s, None),
        opencode().as_ref(),
    );
    assert_eq!(
        decision,
        Some((
            FailureKind::RateLimited,
            "Rate limit reached for requests".into(),
            Some(7)
        ))
    );
}

#[test]
fn answers_stops_budget_stops_timeouts_stalls_and_unclassified_failures_never_fall_back() {
    let r = blank_record();
    let adapter = opencode();
    let limited = rate_limited();
    for ending in [
        Ending::Stopped,
        Ending::TimedOut,
        Ending::Stalled,
        Ending::OverBudget,
    ] {
        let e = evidence(&r.spec, ending, &limited, None);
        assert_eq!(fallback_failure(&e, adapter.as_ref()), None, "{ending:?}");
    }
    let e = evidence(
        &r.spec,
        Ending::Exited(1),
        &limited,
        Some("SUMMARY: done anyway"),
    );
    assert_eq!(fallback_failure(&e, adapter.as_ref()), None, "an answer");
    let mut other = Stream::default();
    other.absorb(
        vec![WorkerEvent::Error {
            message: "the tool crashed".into(),
            status: None,
            retry_after: None,
        }],
        &mut blank_record(),
    );
    let e = evidence(&r.spec, Ending::Exited(1), &other, None);
    assert_eq!(
        fallback_failure(&e, adapter.as_ref()),
        None,
        "not a target's fault"
    );
}

#[test]
fn the_fallback_chain_starts_with_the_chosen_target_and_never_repeats() {
    let mut spec = blank_record().spec;
    spec.model = Some("m1".into());
    spec.fallback = ["opencode:m1", "codex", "codex"]
        .map(ChainTarget::from_stored)
        .to_vec();
    let chain: Vec<String> = fallback_chain(&spec)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(chain, ["opencode:m1", "codex"]);
}

#[test]
fn edits_no_tool_call_reported_are_unreported() {
    let changed = |path: &str| ChangedFile {
        status: 'M',
        path: path.into(),
        old_path: None,
        added: Some(1),
        deleted: Some(0),
    };
    let changes = [changed("src/a.rs"), changed("src/b.rs"), changed("c.txt")];
    let edited = vec!["/w/src/a.rs".to_string(), "c.txt".to_string()];
    assert_eq!(
        unreported(&changes, &edited, Path::new("/w")),
        vec!["src/b.rs"]
    );
}

#[test]
fn sandbox_notes_name_each_layer_that_did_not_hold() {
    assert!(sandbox_notes(None, 0).is_empty());
    let mut report = SandboxReport::skipped("turned off with PITROOM_LANDLOCK=off");
    assert_eq!(
        sandbox_notes(Some(&report), 0),
        vec!["layer 3 (Landlock) not applied: turned off with PITROOM_LANDLOCK=off"]
    );
    report.landlock = LandlockState::Partial;
    report.reason = None;
    report.git_dir = GitDirState::Writable;
    assert_eq!(
        sandbox_notes(Some(&report), 2),
        vec![
            "layer 3 (Landlock) partial: no reason given; the worker could write outside its allowed directories".to_string(),
            "the repository's .git stayed writable to plain file operations (no mount namespace); only the git guard (layers 1-2) protected it".into(),
            "the sandbox refused writes in 2 tool result(s) (Permission denied / Read-only file system)".into(),
        ]
    );
    report.landlock = LandlockState::Enforced;
    report.git_dir = GitDirState::NotExposed;
    assert!(sandbox_notes(Some(&report), 0).is_empty());
}

#[test]
fn verify_failures_say_whether_it_timed_out_failed_or_could_not_run() {
    let limit = Duration::from_secs(60);
    assert_eq!(verify_failure("make test", limit, false, Some(0)), None);
    assert_eq!(
        verify_failure("make test", limit, false, Some(2)).as_deref(),
        Some("--verify failed (exit 2): make test")
    );
    assert_eq!(
        verify_failure("make test", limit, false, None).as_deref(),
        Some("--verify could not run: make test")
    );
    let timed_out = verify_failure("make test", limit, true, Some(0)).unwrap();
    assert!(
        timed_out.starts_with("--verify timed out after "),
        "{timed_out}"
    );
    assert!(timed_out.ends_with(": make test"), "{timed_out}");
}

/// A record held to `budget`, pinned to `opencode:acme/cheap`, with `acme/cheap` priced at $1
/// and $4 a million tokens and `codex` left unpriced.
fn budgeted(budget: crate::budget::Budget, fallback: &[&str]) -> RunRecord {
    let (prices, _) = crate::receipt::WorkerPrices::from_value(&serde_json::json!({
        "opencode:acme/cheap": {"input": 1.0, "output": 4.0},
    }));
    let mut r = blank_record();
    r.spec.model = Some("acme/cheap".into());
    r.spec.worker_prices = Some(prices);
    r.spec.fallback = fallback
        .iter()
        .map(|t| ChainTarget::from_stored(t))
        .collect();
    r.spec.budget = budget;
    r
}

#[test]
fn a_dollar_budget_is_refused_when_any_target_of_the_chain_has_no_price() {
    let usd = crate::budget::Budget {
        max_usd: Some(1.0),
        ..Default::default()
    };
    assert!(super::check_prices(&budgeted(usd.clone(), &[]).spec).is_ok());
    let refused = super::check_prices(&budgeted(usd, &["codex:gpt-x"]).spec)
        .expect_err("the fallback target has no price")
        .to_string();
    assert!(refused.contains("unknown cost is never $0"), "{refused}");
    assert!(
        refused.ends_with(
            "\n  worker_prices.\"codex:gpt-x\" = { input = IN, output = OUT }   # USD per million tokens"
        ),
        "{refused}"
    );
    // The day's cap counts dollars too; a token cap alone needs no price.
    let daily = crate::budget::Budget {
        daily_usd: Some(5.0),
        ..Default::default()
    };
    assert!(super::check_prices(&budgeted(daily, &["codex"]).spec).is_err());
    let tokens = crate::budget::Budget {
        max_tokens: Some(10),
        ..Default::default()
    };
    assert!(super::check_prices(&budgeted(tokens, &["codex"]).spec).is_ok());
}

#[test]
fn the_meter_settles_earlier_attempts_and_prices_this_one_at_its_own_target() {
    use crate::budget::Spend;
    let r = budgeted(Default::default(), &[]);
    // An earlier attempt spent $0.5 over 1000 tokens; this one's tally adds 1M input tokens.
    let mut before = crate::record::Tally::default();
    before.usage.input = 1000;
    let meter = super::spend::Meter::new(
        Spend {
            tokens: 1000,
            usd: Some(0.5),
        },
        before.clone(),
    );
    let mut now = before;
    now.usage.input += 1_000_000;
    assert_eq!(
        meter.own(&r, &now),
        Spend {
            tokens: 1_001_000,
            usd: Some(1.5)
        }
    );
}

#[test]
fn a_resumed_session_whose_cli_reports_its_total_is_not_charged_its_earlier_usage() {
    use crate::budget::Spend;
    let mut r = budgeted(Default::default(), &[]);
    r.spend = Some(Spend {
        tokens: 100,
        usd: Some(0.1),
    });
    // The run had used 100 tokens; the session it resumes had used 5000 before this attempt.
    let mut stream = Stream::default();
    stream.tally.usage.input = 100;
    stream.session_usage_before.input = 5000;
    let meter = super::spend::Meter::for_attempt(&r, &stream);
    // The CLI now reports the session's total, 6000: this attempt used 1000 of them.
    let mut now = stream.tally.clone();
    now.usage.input += 6000;
    assert_eq!(meter.own(&r, &now).tokens, 1100);
}

#[test]
fn another_runs_spend_is_the_greatest_figure_its_record_has() {
    use super::spend::spent_usd;
    let mut r = blank_record();
    assert_eq!(spent_usd(&r), 0.0, "a run that has spent nothing");
    r.tally.cost = Some(0.0);
    r.spend = Some(crate::budget::Spend {
        tokens: 10,
        usd: Some(0.25),
    });
    assert_eq!(
        spent_usd(&r),
        0.25,
        "a CLI's $0 is not believed over the budget's count"
    );
    r.receipt = Some(crate::record::Receipt {
        cost: Some(0.5),
        ..Default::default()
    });
    assert_eq!(spent_usd(&r), 0.5);
}
