//! The adapter contract, in one test binary: [`every_adapter`] holds every adapter to the same
//! safety floor and plumbing; each CLI's module checks its adapter on streams recorded from the
//! real CLI (`fixtures/<cli>/`, written by the ignored `record_*_fixtures` tests of the `pitroom`
//! crate); the checks several CLIs share run here, once, over a table of their recordings; and
//! every recording of every CLI is also read torn (its last line cut in half, as when a stream is
//! read live) and with noise mixed in.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test: a failed expectation is the test failing, with its message"
)]

mod recorded;

mod antigravity;
mod claude;
mod codex;
mod cursor;
mod every_adapter;
mod gemini;
mod kilo;
mod opencode;
mod qwen;

use pitroom_workers::WorkerEvent;
use recorded::Recorded;

/// Every CLI with recorded streams: its fixtures and the noise its stdout may carry (mixed in by
/// the last test here). Each CLI's module names its own as `CLI`.
pub const ANTIGRAVITY: Recorded = Recorded {
    dir: "antigravity",
    banner: "Loading…",
    inert_event: r#"{"event":"future_event"}"#,
};
pub const CLAUDE: Recorded = Recorded {
    dir: "claude",
    banner: "Warning: no stdin data received in 3s",
    inert_event: r#"{"type":"system","subtype":"ui_invalidate"}"#,
};
pub const CODEX: Recorded = Recorded {
    dir: "codex",
    banner: "Reading additional input from stdin...",
    inert_event: r#"{"type":"item.updated","item":{}}"#,
};
pub const CURSOR: Recorded = Recorded {
    dir: "cursor",
    banner: "T: banner",
    inert_event: r#"{"type":"future_event"}"#,
};
pub const GEMINI: Recorded = Recorded {
    dir: "gemini",
    banner: "Warning: Basic terminal detected",
    inert_event: r#"{"type":"future_event"}"#,
};
pub const KILO: Recorded = Recorded {
    dir: "kilo",
    banner: "Warning: noise",
    inert_event: r#"{"type":"done"}"#,
};
pub const OPENCODE: Recorded = Recorded {
    dir: "opencode",
    banner: "Warning: something on stdout",
    inert_event: r#"{"type":"done","reason":"idle"}"#,
};
pub const QWEN: Recorded = Recorded {
    dir: "qwen",
    banner: "Warning: Basic terminal detected",
    inert_event: r#"{"type":"stream_event","event":{}}"#,
};

const RECORDED: &[&Recorded] = &[
    &ANTIGRAVITY,
    &CLAUDE,
    &CODEX,
    &CURSOR,
    &GEMINI,
    &KILO,
    &OPENCODE,
    &QWEN,
];

/// Each CLI's run in write mode (`write-patch` for Codex, `write-edit` for the others) and the
/// files its edits must name.
#[test]
fn write_runs_report_each_edit_with_its_file() {
    let cases: [(&Recorded, &str, &[&str]); 5] = [
        (&CLAUDE, "write-edit", &["/calc.py", "/new file é.txt"]),
        (&CODEX, "write-patch", &["/calc.py", "/new file é.txt"]),
        (
            &GEMINI,
            "write-edit",
            &["/calc.py", "/README.md", "/new file é.txt"],
        ),
        (&OPENCODE, "write-edit", &["/calc.py", "/new file é.txt"]),
        (
            &QWEN,
            "write-edit",
            &["/calc.py", "/README.md", "/new file é.txt"],
        ),
    ];
    for (cli, name, files) in cases {
        let what = format!("{}/{name}", cli.dir);
        cli.summary(name).assert_edited(&what, 3, files);
    }
}

#[test]
fn edits_in_read_mode_are_denied_under_the_tool_they_asked_for() {
    let cases: [(&Recorded, &[&str]); 3] = [
        (&GEMINI, &["replace", "write_file"]),
        (&QWEN, &["edit", "write_file"]),
        (&OPENCODE, &["edit", "write"]),
    ];
    for (cli, tools) in cases {
        let what = format!("{}/read-edit-denied", cli.dir);
        let s = cli.summary("read-edit-denied");
        s.assert_denied(&what, tools);
        assert!(s.edited.is_empty(), "{what}: {:?}", s.edited);
    }
}

#[test]
fn a_malformed_model_stream_gives_no_answer() {
    for cli in [&GEMINI, &QWEN] {
        cli.assert_no_cited_answer("malformed-sse");
    }
}

/// Each recorded API failure of the CLIs that report one as an event: one error (one per failed
/// turn, not two) with its HTTP status when the CLI keeps it, no answer, and the kind its real
/// texts classify as.
#[test]
fn failures_keep_their_status_and_classify_from_the_real_texts() {
    use pitroom_workers::FailureKind::{Auth, ModelUnavailable, Other, RateLimited};
    let cases = [
        (&CLAUDE, "err429", Some(429), RateLimited),
        (&CLAUDE, "usage-limit", Some(429), RateLimited),
        (&CLAUDE, "credit", Some(400), RateLimited),
        (&CLAUDE, "err529", Some(529), RateLimited),
        (&CLAUDE, "err404", Some(404), ModelUnavailable),
        (&CLAUDE, "err401", Some(401), Auth),
        (&CLAUDE, "err500", Some(500), Other),
        (&CODEX, "err429", Some(429), RateLimited),
        (&CODEX, "usage-limit", None, RateLimited),
        (&CODEX, "quota", None, RateLimited),
        (&CODEX, "err404", None, ModelUnavailable),
        (&CODEX, "err401", Some(401), Auth),
        (&CODEX, "err500", None, Other),
        (&CODEX, "dropped-stream", None, Other),
        (&OPENCODE, "err404", Some(404), ModelUnavailable),
        (&OPENCODE, "err429", Some(429), RateLimited),
        (&OPENCODE, "err500", Some(500), Other),
    ];
    for (cli, name, status, kind) in cases {
        let what = format!("{}/{name}", cli.dir);
        let s = cli.summary(name);
        assert_eq!(
            s.errors.len(),
            1,
            "{what}: one error per failed turn, not two: {:?}",
            s.errors
        );
        assert_eq!(s.errors[0].1, status, "{what}");
        assert!(s.texts.is_empty(), "{what}: an API error is not an answer");
        assert_eq!(cli.classify(name), kind, "{what}");
    }
}

/// The failures of the hand-written streams: never an answer, the error events each carries
/// (Antigravity's error results; Cursor reports these on stderr only), and their kind.
#[test]
fn failures_are_never_answers_and_classify() {
    use pitroom_workers::FailureKind::{Auth, ModelUnavailable, RateLimited};
    let cases = [
        (&ANTIGRAVITY, "quota", 1, RateLimited),
        (&ANTIGRAVITY, "not-signed-in", 1, Auth),
        (&ANTIGRAVITY, "unknown-model", 1, ModelUnavailable),
        (&CURSOR, "unknown-model", 0, ModelUnavailable),
        (&CURSOR, "usage-limit", 0, RateLimited),
        (&CURSOR, "not-logged-in", 0, Auth),
    ];
    for (cli, name, errors, kind) in cases {
        let s = cli.assert_failed_without_answer(name, kind);
        assert_eq!(s.errors.len(), errors, "{}/{name}: {s:?}", cli.dir);
    }
}

#[test]
fn every_cli_of_the_table_has_recordings_here() {
    let recorded: Vec<&str> = RECORDED.iter().map(|cli| cli.dir).collect();
    for cli in pitroom_workers::CLIS {
        assert!(
            recorded.contains(&cli.backend),
            "{}: no recordings in RECORDED",
            cli.backend
        );
    }
    for cli in RECORDED {
        assert_eq!(cli.adapter().id(), cli.dir);
        assert!(!cli.names().is_empty(), "{}: no fixtures", cli.dir);
    }
}

#[test]
fn every_recording_is_read_torn_at_its_last_line_losing_only_that_line() {
    for cli in RECORDED {
        for name in cli.names() {
            let events = cli.events(&name);
            let lines: Vec<&str> = events.lines().collect();
            let Some((last, before)) = lines.split_last() else {
                continue;
            };
            let cut = last
                .char_indices()
                .nth(last.chars().count() / 2)
                .map_or(0, |(i, _)| i);
            let torn = format!("{}\n{}", before.join("\n"), &last[..cut]);
            let expected: Vec<WorkerEvent> = cli.parse(&before.join("\n"));
            assert_eq!(cli.parse(&torn), expected, "{}/{name}", cli.dir);
        }
    }
}

#[test]
fn banners_and_unknown_events_between_the_recorded_events_change_nothing() {
    for cli in RECORDED {
        for name in cli.names() {
            let events = cli.events(&name);
            let noisy: String = events
                .lines()
                .map(|l| format!("{}\n{l}\n\n{}\n", cli.banner, cli.inert_event))
                .collect();
            assert_eq!(cli.parse(&noisy), cli.parse(&events), "{}/{name}", cli.dir);
        }
    }
}
