//! The adapter contract, in one test binary: [`every_adapter`] holds every adapter to the same
//! safety floor and plumbing; each CLI's module checks its adapter on streams recorded from the
//! real CLI (`fixtures/<cli>/`, written by the ignored `record_*_fixtures` tests of the `pitroom`
//! crate); and every recording of every CLI is also read torn (its last line cut in half, as
//! when a stream is read live) and with noise mixed in.

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

/// Every CLI with recorded streams.
const RECORDED: &[&Recorded] = &[
    &antigravity::CLI,
    &claude::CLI,
    &codex::CLI,
    &cursor::CLI,
    &gemini::CLI,
    &kilo::CLI,
    &opencode::CLI,
    &qwen::CLI,
];

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
