//! What the page is sent about a run: a card (Live), or everything (a run's page). Every string
//! goes through the redactor of the run's repository first, as in the records.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pitroom_service::{report, Home, Mode, Redactor, RunRecord, Service};
use serde_json::{json, Value};

/// How long a repository's redactor (the values of its secret files) is trusted before the
/// files are read again.
const REDACTOR_TTL: Duration = Duration::from_secs(60);

/// Redactors per repository, re-read now and then: building one reads the repository's
/// secret-looking files, and a Live page shows hundreds of runs of one repository.
#[derive(Default)]
pub struct Redactors {
    cache: Mutex<HashMap<PathBuf, (Instant, Arc<Redactor>)>>,
}

impl Redactors {
    pub fn for_record(&self, record: &RunRecord) -> Arc<Redactor> {
        let dir = record
            .repo
            .clone()
            .unwrap_or_else(|| record.spec.dir.clone());
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((at, r)) = cache.get(&dir) {
            if at.elapsed() < REDACTOR_TTL {
                return r.clone();
            }
        }
        let redactor = Arc::new(Redactor::for_dirs(&[dir.as_path()]));
        cache.insert(dir, (Instant::now(), redactor.clone()));
        redactor
    }
}

/// Redacts every string in a JSON value, in place (keys are ours and stay).
pub fn redact_value(value: &mut Value, redactor: &Redactor) {
    match value {
        Value::String(s) => {
            let clean = redactor.redact(s);
            if clean != *s {
                *s = clean;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| redact_value(v, redactor)),
        Value::Object(map) => map.values_mut().for_each(|v| redact_value(v, redactor)),
        _ => {}
    }
}

/// The first `n` characters of `text`.
fn clip(text: &str, n: usize) -> String {
    match text.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_string(),
    }
}

/// A Live card: what a glance needs.
pub fn card(service: &Service, record: &RunRecord, redactor: &Redactor) -> Value {
    let tally = &record.tally;
    let mut card = json!({
        "id": record.id,
        "state": record.state.as_str(),
        "task": clip(&record.spec.task, 300),
        "mode": record.spec.mode.as_str(),
        "worker": record.worker_target(),
        "backend": record.backend(),
        "model": record.model_ran(),
        "group": record.spec.group,
        "created_at": record.created_at,
        "started_at": record.started_at,
        "ended_at": record.ended_at,
        "duration_ms": record.duration_ms(),
        "steps": tally.steps,
        "tools": tally.tool_calls,
        "failed_calls": tally.failed_calls,
        "denied_calls": tally.denied_calls,
        "last": record.last_step.as_deref().map(|l| clip(l, 200)),
        "summary": record.answer.as_deref().and_then(report::summary_line).map(|s| clip(s, 300)),
        "error": record.error.as_deref().map(|e| clip(e, 300)),
        "changes": record.changes.len(),
        "refs": record.refs.as_ref().map(|r| format!("{}/{}", r.verified, r.total)),
        "cost": record.receipt.as_ref().and_then(|r| r.cost).or(tally.cost),
        "saved": record.receipt.as_ref().and_then(|r| r.saved),
        "budget": budget(record),
        "applied": record.patch.is_applied(),
        "discarded": record.patch.is_discarded(),
        "violation": record.read_only_violation,
        "stoppable": record.state.is_active(),
        // Waiting out a rate limit: when the run starts at the latest (`14:05 UTC`).
        "held_until": record.held_until_short(),
        "discardable": service.can_discard(record).is_ok(),
    });
    redact_value(&mut card, redactor);
    card
}

/// What a run held to a budget has spent against each cap, as its report says it; `None`
/// without a budget.
fn budget(record: &RunRecord) -> Option<String> {
    report::budget_line(record).map(|l| l.trim_start_matches("budget: ").to_string())
}

/// Everything about one run: the record (less what is ours only), the card, the steps and the
/// patch (redacted), and the commands that follow up.
pub fn detail(
    service: &Service,
    record: &RunRecord,
    redactor: &Redactor,
    steps: crate::steps::Timeline,
    patch: Option<String>,
) -> Value {
    let mut full = serde_json::to_value(record).unwrap_or(Value::Null);
    if let Some(spec) = full.get_mut("spec").and_then(Value::as_object_mut) {
        // The config's worker definitions may hold environment values; the page needs none.
        spec.remove("custom_workers");
    }
    const PATCH_LIMIT: usize = 2 << 20;
    let patch_truncated = patch.as_ref().is_some_and(|p| p.len() > PATCH_LIMIT);
    let patch = patch.map(|p| cut(&p, PATCH_LIMIT).to_string());
    let mut out = json!({
        "card": card(service, record, redactor),
        "record": full,
        "steps": steps.entries,
        "steps_truncated": steps.truncated,
        "patch": patch,
        "patch_truncated": patch_truncated,
        "follow_up": follow_up(record),
    });
    redact_value(&mut out, redactor);
    out
}

/// `text` cut to at most `limit` bytes, on a character boundary.
fn cut(text: &str, limit: usize) -> &str {
    if text.len() <= limit {
        return text;
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The commands a person would type next (shown to copy, never run by the page).
fn follow_up(record: &RunRecord) -> Vec<String> {
    let id = &record.id;
    let mut out = Vec::new();
    if record.state.is_active() {
        out.push(format!("pitroom wait {id}"));
        return out;
    }
    out.push(format!("pitroom show {id}"));
    if record.session.is_some() {
        out.push(format!("pitroom run --continue {id} \"…\""));
    }
    if record.spec.mode == Mode::Isolate && !record.patch.is_applied() && !record.changes.is_empty()
    {
        out.push(format!("pitroom apply {id}"));
    }
    if record.spec.mode == Mode::Write && !record.patch.is_reverted() && !record.changes.is_empty()
    {
        out.push(format!("pitroom revert {id}"));
    }
    out
}

/// Whether `id` has the shape of a run id (so it can never name a path outside `runs/`).
pub fn is_run_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !id.starts_with('-')
}

/// The run's record path, if `id` is a run of this state directory.
pub fn existing_run(home: &Home, id: &str) -> Option<PathBuf> {
    let path = home.record_path(id);
    (is_run_id(id) && Path::new(&path).is_file()).then_some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_string_in_a_value_is_redacted() {
        let r = Redactor::new(vec!["hunter2-very-secret".into()]);
        let mut v = json!({"a": "key hunter2-very-secret", "b": ["sk-ant-api03-Xq7vL2pR9mK4tN8wB3cF6hJ1zD5gY0s"], "n": 3});
        redact_value(&mut v, &r);
        assert_eq!(v["a"], "key [REDACTED]");
        assert_eq!(v["b"][0], "[REDACTED]");
        assert_eq!(v["n"], 3);
    }

    #[test]
    fn run_ids_cannot_name_other_paths() {
        assert!(is_run_id("20261130-000000-000a"));
        for bad in ["", "..", "../x", "a/b", "A", "-rf", "x%2f"] {
            assert!(!is_run_id(bad), "{bad}");
        }
    }

    #[test]
    fn a_card_shows_the_spend_of_a_run_held_to_a_budget() {
        let spec = pitroom_service::RunSpec::new("t", Mode::Isolate, "opencode", "/tmp");
        let mut r = RunRecord::new(
            "20261130-000000-000a".into(),
            spec,
            "2026-11-30T00:00:00Z".parse().expect("a stamp"),
        );
        assert_eq!(budget(&r), None);
        r.spec.budget.max_tokens = Some(1000);
        r.spend = Some(pitroom_service::budget::Spend {
            tokens: 1400,
            usd: None,
        });
        assert_eq!(
            budget(&r).as_deref(),
            Some("1400 of 1000 tokens (--max-tokens)")
        );
    }

    #[test]
    fn clipping_keeps_whole_characters() {
        assert_eq!(clip("héllo", 2), "hé…");
        assert_eq!(clip("hi", 5), "hi");
    }
}
