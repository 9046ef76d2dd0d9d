//! History (full-text search with filters and paging) and Stats, from the ledger
//! (`pitroom_store`) the run library opens.

use std::collections::{BTreeMap, HashSet};

use axum::http::StatusCode;
use pitroom_core::redact::Redactor;
use pitroom_store::{median, parse_since, Filter, Hit, Since, Store};
use serde_json::{json, Value};

use crate::api::{is_state, HistoryQuery};
use crate::server::Shared;
use crate::view::redact_value;

/// Results per page.
pub const PAGE_SIZE: usize = 25;
/// How many rows a group filter looks through (the ledger has no group filter of its own).
const GROUP_SCAN: usize = 20_000;
/// How many rows the per-day chart reads.
const DAY_SCAN: usize = 200_000;

type Answer = Result<Value, (StatusCode, String)>;

fn bad(message: String) -> (StatusCode, String) {
    (StatusCode::BAD_REQUEST, message)
}

/// Runs `work` with the history database, opening it (and importing run directories it lacks)
/// on first use.
fn with_store<T>(
    shared: &Shared,
    work: impl FnOnce(&Store) -> Result<T, pitroom_store::StoreError>,
) -> Result<T, (StatusCode, String)> {
    let mut slot = shared.store.lock().unwrap_or_else(|p| p.into_inner());
    if slot.is_none() {
        let (store, _notes) = shared
            .service
            .history_store()
            .map_err(|e| (StatusCode::SERVICE_UNAVAILABLE, e.message))?;
        *slot = Some(store);
    }
    let store = slot.as_ref().ok_or((
        StatusCode::SERVICE_UNAVAILABLE,
        "the history database is not open; try again".to_string(),
    ))?;
    work(store).map_err(|e| {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("{e}; pitroom history import rebuilds it from the run directories"),
        )
    })
}

fn given(value: &Option<String>) -> Option<String> {
    value
        .as_deref()
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_string)
}

fn since(text: Option<&str>, default: &str) -> Result<Since, (StatusCode, String)> {
    // A window over stamped records: the stamping clock, so a fixed clock's runs are recent.
    parse_since(text.unwrap_or(default), pitroom_core::clock::now()).map_err(bad)
}

/// The ledger's model filter takes a model, a backend or `backend:model`.
fn model_filter(worker: Option<String>, model: Option<String>) -> Option<String> {
    match (worker, model) {
        (Some(w), Some(m)) if !w.contains(':') => Some(format!("{w}:{m}")),
        (Some(w), _) => Some(w),
        (None, m) => m,
    }
}

pub fn search(shared: &Shared, query: &HistoryQuery) -> Answer {
    let state = given(&query.state);
    if let Some(s) = &state {
        if !is_state(s) {
            return Err(bad(format!(
                "state `{s}`: use queued, running, done, failed, timeout or stopped"
            )));
        }
    }
    let page = query.page.unwrap_or(0);
    let offset = page.saturating_mul(PAGE_SIZE);
    let group = given(&query.group);
    let members: Option<HashSet<String>> = group
        .as_deref()
        .map(|g| shared.service.home().group_ids(g).into_iter().collect());
    let filter = Filter {
        text: given(&query.q),
        model: model_filter(given(&query.worker), given(&query.model)),
        state,
        since: since(given(&query.since).as_deref(), "all")?,
        // One more than the page, to know whether another follows.
        limit: if members.is_some() {
            GROUP_SCAN
        } else {
            offset + PAGE_SIZE + 1
        },
    };
    let hits: Vec<Hit> = with_store(shared, |store| store.search(&filter))?
        .into_iter()
        .filter(|h| members.as_ref().is_none_or(|m| m.contains(&h.id)))
        .collect();
    let has_more = hits.len() > offset + PAGE_SIZE;
    let page_hits: Vec<Value> = hits
        .iter()
        .skip(offset)
        .take(PAGE_SIZE)
        .map(|h| redacted_hit(shared, h))
        .collect();
    Ok(json!({
        "hits": page_hits,
        "page": page,
        "page_size": PAGE_SIZE,
        "has_more": has_more,
        "facets": facets(shared)?,
    }))
}

/// A hit with its task and snippet redacted by its run's repository (the values of its
/// secret files), or by the well-known formats when the run directory is gone.
fn redacted_hit(shared: &Shared, hit: &Hit) -> Value {
    let mut value = serde_json::to_value(hit).unwrap_or(Value::Null);
    match shared.service.home().load(&hit.id) {
        Ok(record) => redact_value(&mut value, &shared.redactors.for_record(&record)),
        Err(_) => redact_value(&mut value, &Redactor::new(Vec::new())),
    }
    value
}

/// How long History's filter choices are reused.
const FACETS_TTL: std::time::Duration = std::time::Duration::from_secs(60);

/// What the filters offer, read at most once a minute.
fn facets(shared: &Shared) -> Result<Value, (StatusCode, String)> {
    if let Some((at, value)) = shared
        .facets
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .as_ref()
    {
        if at.elapsed() < FACETS_TTL {
            return Ok(value.clone());
        }
    }
    let value = read_facets(shared)?;
    *shared.facets.lock().unwrap_or_else(|p| p.into_inner()) =
        Some((std::time::Instant::now(), value.clone()));
    Ok(value)
}

/// Workers and models from the ledger, groups from the state dir.
fn read_facets(shared: &Shared) -> Result<Value, (StatusCode, String)> {
    let stats = with_store(shared, |store| store.stats(&Since::all()))?;
    let backends: std::collections::BTreeSet<&str> =
        stats.iter().map(|s| s.backend.as_str()).collect();
    let models: std::collections::BTreeSet<&str> =
        stats.iter().filter_map(|s| s.model.as_deref()).collect();
    let mut groups: Vec<String> = std::fs::read_dir(shared.service.home().groups())
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter(|n| !n.starts_with('.'))
        .collect();
    groups.sort();
    Ok(json!({ "workers": backends, "models": models, "groups": groups }))
}

pub fn stats(shared: &Shared, since_text: Option<&str>) -> Answer {
    let since = since(since_text.filter(|s| !s.trim().is_empty()), "30d")?;
    let workers = with_store(shared, |store| store.stats(&since))?;
    let savings = with_store(shared, |store| store.savings(&since))?;
    let hits = with_store(shared, |store| {
        store.search(&Filter {
            since: since.clone(),
            limit: DAY_SCAN,
            ..Filter::default()
        })
    })?;
    let mut out = json!({
        "since": since.label,
        "workers": workers,
        "savings": savings,
        "days": per_day(&hits),
    });
    redact_value(&mut out, &Redactor::new(Vec::new()));
    Ok(out)
}

#[derive(Default)]
struct Day {
    runs: u64,
    done: u64,
    failed: u64,
    tokens: u64,
    cost: f64,
    saved: f64,
    times: Vec<u64>,
}

/// Per UTC day: runs (done and not), tokens, cost, saving and median time.
fn per_day(hits: &[Hit]) -> Vec<Value> {
    let mut days: BTreeMap<&str, Day> = BTreeMap::new();
    for h in hits.iter().filter(|h| h.started_at.len() >= 10) {
        let d = days.entry(&h.started_at[..10]).or_default();
        d.runs += 1;
        if h.state == "done" {
            d.done += 1;
        } else if !matches!(h.state.as_str(), "queued" | "running") {
            d.failed += 1;
        }
        d.tokens += u64::try_from(h.tokens).unwrap_or(0);
        d.cost += h.cost.unwrap_or(0.0);
        d.saved += h.saved.unwrap_or(0.0);
        if let Some(ms) = h.duration_ms.and_then(|ms| u64::try_from(ms).ok()) {
            d.times.push(ms);
        }
    }
    days.into_iter()
        .map(|(day, mut d)| {
            json!({
                "day": day,
                "runs": d.runs,
                "done": d.done,
                "failed": d.failed,
                "tokens": d.tokens,
                "cost": d.cost,
                "saved": d.saved,
                "median_ms": median(&mut d.times),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worker_and_model_filters_combine_into_the_ledgers_form() {
        assert_eq!(
            model_filter(Some("opencode".into()), Some("a/b".into())).as_deref(),
            Some("opencode:a/b")
        );
        assert_eq!(
            model_filter(None, Some("a/b".into())).as_deref(),
            Some("a/b")
        );
        assert_eq!(
            model_filter(Some("codex".into()), None).as_deref(),
            Some("codex")
        );
        assert_eq!(model_filter(None, None), None);
    }
}
