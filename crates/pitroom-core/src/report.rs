//! The report the primary agent reads: compact, honest, no ANSI unless a terminal asked.
//!
//! Every string of the record (the worker's answer, its errors, file names, the task) is
//! neutralised ([`crate::terminal::neutralise`]) before it is laid out, so the only escape
//! sequences in a report are this module's own colours.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::time::Duration;

use anstyle::{AnsiColor, Style};

use crate::duration::format_duration;
use crate::record::{AttemptState, Receipt, RunRecord, RunState};

/// The report without its receipt and hints: the part whose size is "returned tokens".
pub fn body(record: &RunRecord, color: bool) -> String {
    match shown(record) {
        Some(clean) => body_of(&clean, color),
        None => crate::terminal::neutralise(&body_of(record, false)).into_owned(),
    }
}

fn body_of(record: &RunRecord, color: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", header(record, color));
    let _ = writeln!(out, "{}", worker_line(record));
    if let Some(line) = budget_line(record) {
        let _ = writeln!(out, "{line}");
    }
    for w in &record.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    if let Some(err) = &record.error {
        let _ = writeln!(out, "{}", paint(color, red(), &format!("error: {err}")));
        if let Some(kind) = record.failure {
            let _ = writeln!(out, "hint: {} — {}", kind.describe(), kind.hint());
        }
    }
    if record.state == RunState::Timeout {
        let _ = writeln!(
            out,
            "hint: raise the limit with -t, or carry on with: pitroom run --continue {} \"…\"",
            record.id
        );
    }
    if record.state == RunState::OverBudget && record.interrupted_in.is_some() {
        let _ = writeln!(
            out,
            "hint: what the worker did is kept (pitroom show --patch {id}); carry on under a higher cap: pitroom run --continue {id} \"…\"",
            id = record.id
        );
    }
    out.push('\n');
    match record
        .answer
        .as_deref()
        .map(str::trim)
        .filter(|a| !a.is_empty())
    {
        Some(answer) => {
            let _ = writeln!(out, "{answer}");
        }
        None if record.state.is_active() => {
            let _ = writeln!(out, "(still running{})", last_suffix(record));
        }
        None => {
            let _ = writeln!(out, "(no answer)");
        }
    }
    out.push('\n');
    changes(&mut out, record, color);
    out
}

/// The full report: body, receipt and next steps.
pub fn render(record: &RunRecord, color: bool) -> String {
    match shown(record) {
        Some(clean) => render_of(&clean, color),
        // Unreachable for a record serde wrote, but never an escape from the worker either
        // way: the whole text, without colour, is neutralised instead.
        None => crate::terminal::neutralise(&render_of(record, false)).into_owned(),
    }
}

/// `record` with every string in it neutralised for a terminal, borrowed when none needed it;
/// `None` only if the record does not round-trip through JSON.
fn shown(record: &RunRecord) -> Option<Cow<'_, RunRecord>> {
    let mut value = serde_json::to_value(record).ok()?;
    if !neutralise_strings(&mut value) {
        return Some(Cow::Borrowed(record));
    }
    serde_json::from_value(value).ok().map(Cow::Owned)
}

/// Neutralises every string in `value` (keys included); whether any changed.
fn neutralise_strings(value: &mut serde_json::Value) -> bool {
    use serde_json::Value;
    match value {
        Value::String(s) => match crate::terminal::neutralise(s) {
            Cow::Borrowed(_) => false,
            Cow::Owned(clean) => {
                *s = clean;
                true
            }
        },
        Value::Array(items) => neutralise_all(items.iter_mut()),
        Value::Object(map) => {
            let values = neutralise_all(map.values_mut());
            let keys = map
                .keys()
                .any(|k| matches!(crate::terminal::neutralise(k), Cow::Owned(_)));
            if keys {
                // Rebuilt in the same order, so a map the report lists keeps its order.
                *map = std::mem::take(map)
                    .into_iter()
                    .map(|(k, v)| (crate::terminal::neutralise(&k).into_owned(), v))
                    .collect();
            }
            values || keys
        }
        _ => false,
    }
}

/// Neutralises every value (each one: no short cut once one changed); whether any changed.
fn neutralise_all<'a>(values: impl Iterator<Item = &'a mut serde_json::Value>) -> bool {
    let mut any = false;
    for v in values {
        any |= neutralise_strings(v);
    }
    any
}

fn render_of(record: &RunRecord, color: bool) -> String {
    let mut out = body_of(record, color);
    if let Some(v) = &record.verdict {
        let _ = writeln!(out, "── review: {}", v.line());
    }
    if let Some(refs) = record.refs.as_ref().filter(|r| r.total > 0) {
        let mut line = format!("── refs: {}/{} verified", refs.verified, refs.total);
        if !refs.bad.is_empty() {
            line.push_str(" · bad:");
        }
        let _ = writeln!(
            out,
            "{}",
            paint(
                color,
                if refs.bad.is_empty() {
                    green()
                } else {
                    yellow()
                },
                &line
            )
        );
        for bad in &refs.bad {
            let _ = writeln!(out, "   {bad}");
        }
    }
    if let Some(v) = &record.verify {
        let took = format_duration(v.duration);
        let verdict = match (v.passed, v.timed_out, v.exit_code) {
            (true, ..) => format!("✔ passed in {took}"),
            (false, true, _) => format!("✘ timed out after {took}"),
            (false, false, Some(c)) => format!("✘ failed (exit {c}) in {took}"),
            (false, false, None) => "✘ could not run".to_string(),
        };
        let rounds = match record.final_round() {
            Some((round, of)) => format!(" on round {round} of {of}"),
            None => String::new(),
        };
        let _ = writeln!(out, "── verify: {verdict}{rounds}: {}", v.command);
        if !v.passed {
            for line in v
                .tail
                .lines()
                .rev()
                .take(10)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
            {
                let _ = writeln!(out, "   | {line}");
            }
        }
    }
    attempts(&mut out, record);
    if let Some(view) = record.view {
        let what = match view {
            crate::record::ReadView::InPlace => "the live tree, read-only (in place)",
            crate::record::ReadView::Copy => "a read-only copy",
        };
        let why = record
            .view_reason
            .as_deref()
            .map(|r| format!(": {r}"))
            .unwrap_or_default();
        let _ = writeln!(out, "── view: {what}{why}");
    }
    if let Some(r) = &record.receipt {
        let _ = writeln!(out, "── receipt: {}", receipt_line(record, r));
    }
    hints(&mut out, record);
    out
}

/// The fallback chain as it went: one line per attempt, when there was more than one.
fn attempts(out: &mut String, record: &RunRecord) {
    if record.attempts.len() < 2 {
        return;
    }
    let _ = writeln!(out, "── attempts:");
    for (i, a) in record.attempts.iter().enumerate() {
        let what = match (&a.failure, a.state) {
            _ if a.repaired => format!(
                "{} → round {}",
                a.verify
                    .as_ref()
                    .map_or_else(|| "verify failed".to_string(), verify_failure_brief),
                a.round + 1
            ),
            (_, AttemptState::Skipped) => format!("skipped: {}", a.error.as_deref().unwrap_or("")),
            (Some(kind), _) if a.fell_back => format!(
                "{} after {} step{} → {}{}",
                kind.describe(),
                a.steps,
                if a.steps == 1 { "" } else { "s" },
                match record.attempts.get(i + 1) {
                    Some(next) if next.target == a.target => "ran again",
                    _ => "next target",
                },
                a.error
                    .as_deref()
                    .and_then(|e| e.lines().next())
                    .map(|e| format!(" ({})", truncate(e, 80)))
                    .unwrap_or_default()
            ),
            (_, state) => format!(
                "{state}{}",
                if a.handed_off {
                    " (finished the previous worker's task)"
                } else {
                    ""
                }
            ),
        };
        let _ = writeln!(out, "   {}. {}: {what}", i + 1, a.target);
    }
}

/// A failed `--verify` in a few words, for the line of a round that was sent back.
fn verify_failure_brief(v: &crate::record::VerifyOutcome) -> String {
    match (v.timed_out, v.exit_code) {
        (true, _) => "verify timed out".to_string(),
        (false, Some(c)) => format!("verify failed (exit {c})"),
        (false, None) => "verify could not run".to_string(),
    }
}

/// One line per run for lists and `wait --brief`.
pub fn brief(record: &RunRecord) -> String {
    let summary = record
        .answer
        .as_deref()
        .and_then(summary_line)
        .or(record.error.as_deref())
        .unwrap_or("");
    // A run held for a rate limit is queued, but the news is why it waits.
    let state = match record.held_until_short() {
        Some(_) => "held",
        None => record.state.as_str(),
    };
    let line = format!(
        "{} {:<8} {:<6} {:>7}  {}  {}",
        record.id,
        state,
        record.spec.mode.as_str(),
        duration(record)
            .map(format_duration)
            .unwrap_or_else(|| "-".into()),
        truncate(&record.spec.task.replace('\n', " "), 48),
        truncate(summary, 60)
    );
    crate::terminal::neutralise(&line).into_owned()
}

/// For a run held now for a rate limit to reset: until when, as `14:05 UTC`.
fn header(record: &RunRecord, color: bool) -> String {
    let (icon, style) = match record.state {
        RunState::Done => ("✔", green()),
        RunState::Queued | RunState::Running => ("…", yellow()),
        RunState::Timeout => ("⏱", red()),
        RunState::Failed | RunState::Stopped | RunState::OverBudget => ("✘", red()),
    };
    let state = if record.read_only_violation {
        "failed · READ-ONLY VIOLATION".to_string()
    } else if record.verify_failed() {
        "failed · verify failed".to_string()
    } else if let Some(until) = record.held_until_short() {
        format!("held until {until} (every target is cooling down after a rate limit)")
    } else {
        record.state.as_str().to_string()
    };
    let took = duration(record)
        .map(|d| format!(" · {}", format_duration(d)))
        .unwrap_or_default();
    format!(
        "pitroom {} · {}{took} · run {}",
        paint(color, style, &format!("{icon} {state}")),
        record.spec.mode.as_str(),
        record.id
    )
}

fn worker_line(record: &RunRecord) -> String {
    let mut line = format!("worker {}", record.backend());
    let model = match (record.model(), &record.reported_model) {
        (Some(pinned), _) => pinned.to_string(),
        (None, Some(reported)) => format!("{reported} (the CLI's default)"),
        (None, None) => "(the CLI's default)".into(),
    };
    line.push_str(&format!(" · model {model}"));
    if let Some(s) = &record.session {
        line.push_str(&format!(" · session {s}"));
    }
    line
}

fn changes(out: &mut String, record: &RunRecord, color: bool) {
    if record.changes.is_empty() {
        if record.spec.mode.may_edit() && !record.state.is_active() {
            let _ = writeln!(out, "── changes: none");
        }
        return;
    }
    let added: u64 = record.changes.iter().filter_map(|c| c.added).sum();
    let deleted: u64 = record.changes.iter().filter_map(|c| c.deleted).sum();
    let place = if record.read_only_violation {
        "made in a read-only run — discarded, your tree is untouched"
    } else if record.spec.mode == pitroom_workers::Mode::Isolate {
        if record.patch.is_applied() {
            "applied to your working tree"
        } else {
            "in the isolated copy, NOT applied yet"
        }
    } else {
        "in your working tree"
    };
    let _ = writeln!(
        out,
        "── changes ({place}): {} file{}, +{added} −{deleted}",
        record.changes.len(),
        if record.changes.len() == 1 { "" } else { "s" }
    );
    for c in record.changes.iter().take(50) {
        let mark = if record.unreported.contains(&c.path) {
            "  (not reported by the worker)"
        } else {
            ""
        };
        let from = c
            .old_path
            .as_deref()
            .map(|o| format!("{o} → "))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "   {} {from}{}{mark}",
            paint(color, status_style(c.status), &c.status.to_string()),
            c.path
        );
    }
    if record.changes.len() > 50 {
        let _ = writeln!(
            out,
            "   … and {} more: pitroom show --patch {}",
            record.changes.len() - 50,
            record.id
        );
    }
}

/// A run with a budget: what it has spent against each of its caps (docs/budgets.md).
pub fn budget_line(record: &RunRecord) -> Option<String> {
    use crate::budget::dollars;
    let budget = &record.spec.budget;
    if budget.is_unset() {
        return None;
    }
    let spend = record.spend.unwrap_or_default();
    let usd = spend.usd.map_or_else(|| "n/a".to_string(), dollars);
    let mut parts = Vec::new();
    if let Some(cap) = budget.max_usd {
        parts.push(format!("{usd} of {} (--max-usd)", dollars(cap)));
    }
    if let Some(cap) = budget.max_tokens {
        parts.push(format!(
            "{} of {} tokens (--max-tokens)",
            human_count(spend.tokens),
            human_count(cap)
        ));
    }
    if let Some(cap) = budget.group_max_usd {
        parts.push(format!(
            "{usd} toward the crew's {} (crew --max-usd)",
            dollars(cap)
        ));
    }
    if let Some(cap) = budget.group_max_tokens {
        parts.push(format!(
            "{} tokens toward the crew's {} (crew --max-tokens)",
            human_count(spend.tokens),
            human_count(cap)
        ));
    }
    if let Some(cap) = budget.daily_usd {
        parts.push(format!(
            "{usd} on top of {} spent today, of {} a day (budget.daily_usd)",
            dollars(budget.spent_today_usd),
            dollars(cap)
        ));
    }
    Some(format!("budget: {}", parts.join(" · ")))
}

fn receipt_line(record: &RunRecord, r: &Receipt) -> String {
    let t = &record.tally;
    let mut calls = format!(
        "{} tool call{}",
        t.tool_calls,
        if t.tool_calls == 1 { "" } else { "s" }
    );
    if t.denied_calls > 0 {
        calls.push_str(&format!(", {} denied", t.denied_calls));
    }
    let cost = r
        .cost
        .map(|c| format!("${c:.3}"))
        .unwrap_or_else(|| "n/a".into());
    // The CLI reported no cost: the figure came from the user's worker_prices.
    let cost = if crate::receipt::cost_is_estimate(record) {
        format!("~{cost} (estimated from your worker_prices)")
    } else {
        cost
    };
    let mut line = format!(
        "worker processed {} tokens in {} step{} ({calls}) · worker cost {cost} · returned ~{} tokens",
        human_count(r.worker_tokens),
        t.steps,
        if t.steps == 1 { "" } else { "s" },
        r.returned_tokens
    );
    if r.worker_tokens > 0 {
        line.push_str(&format!(", {:.0}× compression", r.compression));
    }
    if let Some(saved) = r.saved {
        line.push_str(&format!(
            "\n   · est. saved ${saved:.3} vs {} (estimate)",
            r.primary
        ));
    }
    line
}

fn hints(out: &mut String, record: &RunRecord) {
    let id = &record.id;
    if record.state.is_active() {
        let _ = writeln!(out, "── still running: pitroom wait {id}");
        return;
    }
    if !record.changes.is_empty() && !record.read_only_violation {
        let _ = writeln!(out, "── review: pitroom show --patch {id}");
        match record.spec.mode {
            pitroom_workers::Mode::Write if !record.patch.is_reverted() => {
                let _ = writeln!(out, "── undo: pitroom revert {id}");
            }
            pitroom_workers::Mode::Isolate if !record.patch.is_applied() => {
                let deletes = record.changes.iter().filter(|c| c.status == 'D').count();
                let flag = if deletes > 0 { " --allow-delete" } else { "" };
                let note = if deletes > 0 {
                    format!("   (it deletes {deletes} file(s))")
                } else {
                    String::new()
                };
                let _ = writeln!(
                    out,
                    "── land it: pitroom apply {id}{flag}{note}   · drop it: pitroom discard {id}"
                );
            }
            _ => {}
        }
    }
    if record.session.is_some() {
        let _ = writeln!(out, "── follow up: pitroom run --continue {id} \"…\"");
    }
}

fn last_suffix(record: &RunRecord) -> String {
    let t = &record.tally;
    let mut s = format!(": {} steps, {} tool calls", t.steps, t.tool_calls);
    if let Some(last) = &record.last_step {
        s.push_str(&format!(", last: {last}"));
    }
    s
}

fn duration(record: &RunRecord) -> Option<Duration> {
    if let Some(took) = record.duration {
        return Some(took);
    }
    let start = record.started_at?;
    // Time since a stamp: the stamping clock, so a fixed clock shows no time passed, not months.
    let secs = crate::clock::now().duration_since(start).as_secs_f64();
    Some(Duration::from_secs_f64(secs.max(0.0)))
}

/// The first line of the answer's SUMMARY, or its first non-empty line.
pub fn summary_line(answer: &str) -> Option<&str> {
    let mut lines = answer.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next()?;
    match first.strip_prefix("SUMMARY:") {
        Some(rest) if !rest.trim().is_empty() => Some(rest.trim()),
        Some(_) => lines.next(),
        None => Some(first),
    }
}

fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        format!("{}…", text.chars().take(max - 1).collect::<String>())
    }
}

/// `163k`, `1.2M`.
pub fn human_count(n: u64) -> String {
    match n {
        0..=9_999 => n.to_string(),
        10_000..=999_999 => format!("{}k", n / 1000),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}

fn paint(color: bool, style: Style, text: &str) -> String {
    if color {
        format!("{style}{text}{style:#}")
    } else {
        text.to_string()
    }
}

fn green() -> Style {
    Style::new().fg_color(Some(AnsiColor::Green.into())).bold()
}
fn red() -> Style {
    Style::new().fg_color(Some(AnsiColor::Red.into())).bold()
}
fn yellow() -> Style {
    Style::new().fg_color(Some(AnsiColor::Yellow.into())).bold()
}
fn status_style(status: char) -> Style {
    match status {
        'A' => Style::new().fg_color(Some(AnsiColor::Green.into())),
        'D' => Style::new().fg_color(Some(AnsiColor::Red.into())),
        _ => Style::new().fg_color(Some(AnsiColor::Yellow.into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{ChangedFile, RunSpec, Tally};
    use pitroom_workers::{Mode, Usage};

    /// `text` contains every one of `parts`.
    fn assert_has_all(text: &str, parts: &[&str]) {
        for part in parts {
            assert!(text.contains(part), "{part:?} is missing from:\n{text}");
        }
    }

    fn record(state: RunState) -> RunRecord {
        let spec = RunSpec {
            model: Some("fake/fake-model".into()),
            timeout: Duration::from_secs(60),
            verify_timeout: Duration::from_secs(60),
            ..RunSpec::new("Which files read the cookie?", Mode::Read, "opencode", "/p")
        };
        let mut r = RunRecord::new(
            "20260930-003902-3270".into(),
            spec,
            "2026-09-30T00:39:02Z".parse().expect("a stamp"),
        );
        r.state = state;
        r.duration = Some(Duration::from_secs(30));
        r
    }

    #[test]
    fn done_report_has_header_answer_receipt_and_follow_up() {
        let mut r = record(RunState::Done);
        r.session = Some("ses_1".into());
        r.answer = Some("SUMMARY: cookie is read in a.rs:3".into());
        r.tally = Tally {
            usage: Usage {
                input: 150_000,
                output: 13_000,
                ..Usage::default()
            },
            steps: 6,
            tool_calls: 7,
            cost: Some(0.0),
            ..Tally::default()
        };
        r.receipt = Some(Receipt {
            worker_tokens: 163_000,
            returned_tokens: 554,
            compression: 294.2,
            cost: Some(0.0),
            primary: "Claude Sonnet".into(),
            saved: Some(0.152),
        });
        let text = render(&r, false);
        assert!(
            text.starts_with("pitroom ✔ done · read · 30s · run 20260930-003902-3270\n"),
            "{text}"
        );
        assert_has_all(
            &text,
            &[
                "worker opencode · model fake/fake-model · session ses_1",
                "SUMMARY: cookie is read in a.rs:3",
                "worker processed 163k tokens in 6 steps (7 tool calls)",
                "294× compression",
                "est. saved $0.152 vs Claude Sonnet (estimate)",
                "pitroom run --continue 20260930-003902-3270",
            ],
        );
        assert!(!text.contains('\u{1b}'), "no ANSI without colour");
    }

    #[test]
    fn unknown_cost_is_na_never_zero() {
        let mut r = record(RunState::Done);
        r.receipt = Some(Receipt {
            cost: None,
            ..Receipt::default()
        });
        assert!(render(&r, false).contains("worker cost n/a"));
    }

    #[test]
    fn a_cost_from_worker_prices_is_labelled_an_estimate() {
        let mut r = record(RunState::Done);
        r.tally.cost = None;
        r.receipt = Some(Receipt {
            cost: Some(0.02),
            ..Receipt::default()
        });
        let text = render(&r, false);
        assert!(
            text.contains("worker cost ~$0.020 (estimated from your worker_prices)"),
            "{text}"
        );
        r.tally.cost = Some(0.02);
        assert!(render(&r, false).contains("worker cost $0.020 ·"));
    }

    #[test]
    fn failed_run_shows_the_cause_and_a_hint() {
        let mut r = record(RunState::Failed);
        r.error = Some("The model `x` does not exist".into());
        r.failure = Some(pitroom_workers::FailureKind::ModelUnavailable);
        let text = render(&r, false);
        assert_has_all(
            &text,
            &[
                "✘ failed",
                "error: The model `x` does not exist",
                "hint: model unavailable",
                "(no answer)",
            ],
        );
    }

    #[test]
    fn write_changes_are_listed_with_revert_hint() {
        let mut r = record(RunState::Done);
        r.spec.mode = Mode::Write;
        r.changes = vec![ChangedFile {
            old_path: None,
            status: 'M',
            path: "src/a b.rs".into(),
            added: Some(2),
            deleted: Some(1),
        }];
        r.unreported = vec!["src/a b.rs".into()];
        let text = render(&r, false);
        assert_has_all(
            &text,
            &[
                "── changes (in your working tree): 1 file, +2 −1",
                "M src/a b.rs  (not reported by the worker)",
                "pitroom revert 20260930-003902-3270",
            ],
        );
    }

    #[test]
    fn colour_only_when_asked() {
        let r = record(RunState::Done);
        assert!(render(&r, true).contains('\u{1b}'));
    }

    #[test]
    fn a_workers_escape_sequences_reach_the_report_as_visible_text_and_colours_stay() {
        let mut r = record(RunState::Done);
        r.answer = Some("SUMMARY: fine\n\x1b[1A\x1b[2Kall green".into());
        r.error = Some("bad\rgood".into());
        r.spec.task = "task \u{9b}2J".into();
        r.changes.push(ChangedFile {
            status: 'A',
            path: "evil\x1b]0;title\x07.sh".into(),
            old_path: None,
            added: Some(1),
            deleted: Some(0),
        });
        for color in [false, true] {
            let out = render(&r, color);
            let without_colours = out
                .replace("\x1b[0m", "")
                .replace("\x1b[1m", "")
                .replace("\x1b[31m", "")
                .replace("\x1b[32m", "")
                .replace("\x1b[33m", "");
            assert!(!without_colours.contains('\x1b'), "{out:?}");
            assert!(!out.contains('\r') && !out.contains('\u{9b}'), "{out:?}");
            assert!(out.contains("\\x1b[1A\\x1b[2Kall green"), "{out}");
            assert!(out.contains("evil\\x1b]0;title\\x07.sh"), "{out}");
            assert_eq!(out.contains('\x1b'), color, "colours only when asked");
        }
        assert!(brief(&r).contains("task \\u{9b}2J"), "{}", brief(&r));
    }

    #[test]
    fn summary_line_prefers_the_summary_field() {
        assert_eq!(summary_line("SUMMARY: a\nDETAILS: b"), Some("a"));
        assert_eq!(summary_line("SUMMARY:\n  first\n"), Some("first"));
        assert_eq!(summary_line("plain"), Some("plain"));
        assert_eq!(summary_line("  \n"), None);
    }

    #[test]
    fn counts_are_humanised() {
        assert_eq!(human_count(999), "999");
        assert_eq!(human_count(163_400), "163k");
        assert_eq!(human_count(2_500_000), "2.5M");
    }
}
