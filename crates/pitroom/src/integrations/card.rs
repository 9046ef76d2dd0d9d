//! Hook cards: which runs a shell command touched, and one short card per run and phase
//! (started, ended, applied), each shown once. The once-only markers are files created with
//! `O_EXCL` in the run's directory, so two hooks racing on the same run print one card.

use std::io::ErrorKind;

use pitroom_core::duration::format_duration;
use pitroom_core::report::summary_line;
use pitroom_core::{RunRecord, RunState};
use pitroom_service::Service;
use pitroom_workers::Mode;

use super::skill_commands::{split_unquoted, words};
use crate::output::tell;

/// More cards than this in one hook is a listing, not news: the rest are summed up in a line.
const MAX_CARDS: usize = 6;

/// The subcommands whose runs get cards: the ones that start, follow or land runs. Listings
/// (`ls`, `history`…) mention many runs and would flood the session.
const CARDED: &[&str] = &[
    "run", "crew", "wait", "status", "watch", "show", "apply", "revert", "stop", "discard",
    "review",
];

/// Wrappers that may stand before the program in a shell command.
const PREFIXES: &[&str] = &["env", "time", "command", "exec", "nohup", "sudo"];

/// A run's phase, as a card announces it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    Started,
    Ended,
    Applied,
}

impl Phase {
    fn of(record: &RunRecord) -> Phase {
        if record.patch.is_applied() {
            Phase::Applied
        } else if record.state.is_active() {
            Phase::Started
        } else {
            Phase::Ended
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Phase::Started => "started",
            Phase::Ended => "ended",
            Phase::Applied => "applied",
        }
    }
}

/// One card: what the person sees, and the next step the agent is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Card {
    pub text: String,
    pub next: String,
}

/// The `pitroom` invocations in a shell command line: each one's arguments after `pitroom`.
pub(crate) fn pitroom_invocations(command: &str) -> Vec<Vec<String>> {
    split_unquoted(command)
        .iter()
        .filter_map(|segment| words(segment).ok())
        .filter_map(|w| {
            let mut rest = w
                .into_iter()
                .skip_while(|w| is_assignment(w) || PREFIXES.contains(&w.as_str()) || w == "(");
            let program = rest.next()?;
            let base = program.rsplit('/').next().unwrap_or(&program);
            (base == "pitroom").then(|| rest.collect())
        })
        .collect()
}

/// Whether the command runs `pitroom` (as a program, not as a word in an argument).
pub(crate) fn invokes_pitroom(command: &str) -> bool {
    !pitroom_invocations(command).is_empty()
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// The subcommand of `pitroom ARGS`, the way the CLI reads it (a first word that is not a
/// command means `run`).
fn subcommand(args: &[String]) -> String {
    use clap::CommandFactory;
    let first = args.first().map(String::as_str).unwrap_or("");
    let known = crate::cli::Cli::command()
        .get_subcommands()
        .any(|c| c.get_name() == first);
    if known {
        first.to_string()
    } else {
        "run".to_string()
    }
}

/// Whether any `pitroom` invocation in the command is one whose runs get cards.
fn carded(command: &str) -> bool {
    pitroom_invocations(command)
        .iter()
        .any(|args| CARDED.contains(&subcommand(args).as_str()))
}

/// Run ids (`YYYYMMDD-HHMMSS-mmmX`) in a text, in order of first appearance.
pub(crate) fn run_ids(text: &str) -> Vec<String> {
    const SHAPE: &[u8] = b"dddddddd-dddddd-dddx";
    let bytes = text.as_bytes();
    let mut found: Vec<String> = Vec::new();
    let mut i = 0;
    while i + SHAPE.len() <= bytes.len() {
        let window = &bytes[i..i + SHAPE.len()];
        let fits = window.iter().zip(SHAPE).all(|(&b, &s)| match s {
            b'd' => b.is_ascii_digit(),
            b'x' => b.is_ascii_digit() || b.is_ascii_lowercase(),
            s => b == s,
        });
        let bounded = (i == 0 || !bytes[i - 1].is_ascii_alphanumeric())
            && bytes
                .get(i + SHAPE.len())
                .is_none_or(|b| !b.is_ascii_alphanumeric());
        if fits && bounded {
            // The window is ASCII, so this slice is on char boundaries.
            let id = text[i..i + SHAPE.len()].to_string();
            if !found.contains(&id) {
                found.push(id);
            }
            i += SHAPE.len();
        } else {
            i += 1;
        }
    }
    found
}

/// The new cards for the runs a `pitroom` command and its output mention.
pub(crate) fn cards_for(service: &Service, command: &str, output: &str) -> Vec<Card> {
    if !carded(command) {
        return Vec::new();
    }
    let mut ids = run_ids(command);
    for id in run_ids(output) {
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    let mut cards = Vec::new();
    let mut more = 0;
    for id in ids {
        let Ok(record) = service.load(Some(&id)) else {
            continue; // an id of another state dir, or text that only looks like one
        };
        let phase = Phase::of(&record);
        if !claim(service, &record.id, phase) {
            continue;
        }
        if cards.len() < MAX_CARDS {
            cards.push(card(&record, phase));
        } else {
            more += 1;
        }
    }
    if more > 0 {
        cards.push(Card {
            text: format!("pitroom · and {more} more runs"),
            next: "next: pitroom ls to see them all".into(),
        });
    }
    cards
}

/// Takes the once-only marker of a run's phase; false when another hook already showed it.
fn claim(service: &Service, id: &str, phase: Phase) -> bool {
    let marker = service
        .home()
        .run_dir(id)
        .join(format!(".hook-card-{}", phase.as_str()));
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&marker)
    {
        Ok(_) => true,
        Err(e) if e.kind() == ErrorKind::AlreadyExists => false,
        Err(e) => {
            // A card shown twice is better than a card lost: show it, say why.
            tell!(
                "pitroom: hook-card: could not write {}: {e}",
                marker.display()
            );
            true
        }
    }
}

/// One run's card.
pub(crate) fn card(record: &RunRecord, phase: Phase) -> Card {
    let id = &record.id;
    let worker = record.worker_target();
    match phase {
        Phase::Started => Card {
            text: format!(
                "pitroom … {} · {} · run {id} · {worker} · {}",
                record.state.as_str(),
                record.spec.mode.as_str(),
                quote_task(&record.spec.task)
            ),
            next: format!("next: pitroom wait {id} (exit 75 while it still runs: call it again)"),
        },
        Phase::Ended => Card {
            text: ended_text(record),
            next: next_after_end(record),
        },
        Phase::Applied => Card {
            text: format!(
                "pitroom ✔ applied · run {id} · {} landed in your tree",
                files(record.changes.len())
            ),
            next: "next: look at git diff, run the project's checks, commit".into(),
        },
    }
}

fn ended_text(record: &RunRecord) -> String {
    let icon = match record.state {
        RunState::Done => "✔",
        RunState::Timeout => "⏱",
        _ => "✘",
    };
    let state = if record.read_only_violation {
        "failed · READ-ONLY VIOLATION"
    } else if record.verify_failed() {
        "failed · verify failed"
    } else {
        record.state.as_str()
    };
    let took = record
        .duration
        .map(|took| format!(" · {}", format_duration(took)))
        .unwrap_or_default();
    let mut text = format!(
        "pitroom {icon} {state} · {}{took} · run {} · {}",
        record.spec.mode.as_str(),
        record.id,
        record.worker_target()
    );
    let summary = record
        .answer
        .as_deref()
        .and_then(summary_line)
        .or(record.error.as_deref().and_then(|e| e.lines().next()));
    if let Some(summary) = summary {
        text.push_str("\n  ");
        text.push_str(&truncate_chars(summary.trim(), 200));
    }
    let facts = facts(record);
    if !facts.is_empty() {
        text.push_str("\n  ");
        text.push_str(&facts.join(" · "));
    }
    text
}

/// The checkable facts of an ended run: changes, references, verify, saving.
fn facts(record: &RunRecord) -> Vec<String> {
    let mut facts = Vec::new();
    if record.spec.mode != Mode::Read {
        facts.push(format!("{} changed", files(record.changes.len())));
    }
    if let Some(refs) = record.refs.as_ref().filter(|r| r.total > 0) {
        facts.push(format!("refs {}/{} verified", refs.verified, refs.total));
    }
    if let Some(v) = &record.verify {
        facts.push(format!(
            "verify {}",
            if v.passed { "passed" } else { "failed" }
        ));
    }
    if let Some(saved) = record.receipt.as_ref().and_then(|r| r.saved) {
        if saved >= 0.005 {
            facts.push(format!("est. saved ${saved:.2}"));
        }
    }
    facts
}

fn next_after_end(record: &RunRecord) -> String {
    let id = &record.id;
    if record.state != RunState::Done {
        return format!("next: pitroom show --full {id} (the report and the worker's stderr)");
    }
    match record.spec.mode {
        Mode::Isolate if !record.changes.is_empty() && !record.patch.is_discarded() => format!(
            "next: pitroom show --patch {id}, then pitroom apply {id} or pitroom discard {id}"
        ),
        Mode::Write if !record.changes.is_empty() && !record.patch.is_reverted() => {
            format!("next: pitroom show --patch {id}; pitroom revert {id} undoes exactly these edits")
        }
        _ => format!("next: pitroom show {id} for the report; pitroom run --continue {id} \"…\" to follow up"),
    }
}

fn files(n: usize) -> String {
    match n {
        1 => "1 file".into(),
        n => format!("{n} files"),
    }
}

fn quote_task(task: &str) -> String {
    let one_line = task.split_whitespace().collect::<Vec<_>>().join(" ");
    format!("\"{}\"", truncate_chars(&one_line, 80))
}

/// At most `max` characters of `text`, with `…` when cut.
pub(crate) fn truncate_chars(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_are_found_once_each_in_order_and_only_whole() {
        let text = "run 20261201-101500-123a done; again 20261201-101500-123a, then 20261202-000000-000z. \
                    not x20261201-101500-123ab nor 2026120-101500-123a";
        assert_eq!(
            run_ids(text),
            vec!["20261201-101500-123a", "20261202-000000-000z"]
        );
    }

    #[test]
    fn pitroom_is_found_as_a_program_behind_assignments_paths_and_operators() {
        assert!(invokes_pitroom("pitroom wait"));
        assert!(invokes_pitroom("PITROOM_HOME=/tmp/s pitroom ls"));
        assert!(invokes_pitroom("cd repo && ~/.cargo/bin/pitroom -i \"x\""));
        assert!(invokes_pitroom("git status; pitroom show --patch | head"));
        assert!(!invokes_pitroom("echo pitroom"));
        assert!(!invokes_pitroom("grep -r 'pitroom wait' docs"));
        assert!(!invokes_pitroom("cargo build -p pitroom"));
    }

    #[test]
    fn listings_get_no_cards_but_runs_waits_and_applies_do() {
        assert!(!carded("pitroom ls"));
        assert!(!carded("pitroom history cookie"));
        assert!(carded("pitroom \"Where can divide fail?\""));
        assert!(carded("pitroom -W codex --bg x"));
        assert!(carded("pitroom wait -g auth"));
        assert!(carded("pitroom apply 20261201-101500-123a"));
    }

    #[test]
    fn truncation_counts_characters_not_bytes() {
        assert_eq!(truncate_chars("ééééé", 3), "éé…");
        assert_eq!(truncate_chars("abc", 3), "abc");
    }
}
