//! History (full-text search with filters and paging) and Stats, from the history the run
//! library opens (`Service::history`).

use std::collections::HashSet;

use axum::http::StatusCode;
use pitroom_service::{Filter, History, Hit, Redactor, ServiceError, Since};
use serde_json::{json, Value};

use crate::api::{is_state, HistoryQuery};
use crate::server::Shared;
use crate::view::redact_value;

/// Results per page.
pub const PAGE_SIZE: usize = 25;
/// How many rows a group filter looks through (the ledger has no group filter of its own).
const GROUP_SCAN: usize = 20_000;

type Answer = Result<Value, (StatusCode, String)>;

fn bad(message: String) -> (StatusCode, String) {
    (StatusCode::BAD_REQUEST, message)
}

/// Runs `work` with the history database, opening it (and importing run directories it lacks)
/// on first use.
fn with_store<T>(
    shared: &Shared,
    work: impl FnOnce(&History) -> Result<T, ServiceError>,
) -> Result<T, (StatusCode, String)> {
    let mut slot = shared.history.lock().unwrap_or_else(|p| p.into_inner());
    if slot.is_none() {
        let (history, _notes) = shared
            .service
            .history()
            .map_err(|e| (StatusCode::SERVICE_UNAVAILABLE, e.message))?;
        *slot = Some(history);
    }
    let store = slot.as_ref().ok_or((
        StatusCode::SERVICE_UNAVAILABLE,
        "the history database is not open; try again".to_string(),
    ))?;
    work(store).map_err(|e| {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "{}; pitroom history import rebuilds it from the run directories",
                e.message
            ),
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
    pitroom_service::ledger::since(text.unwrap_or(default)).map_err(bad)
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
    let days = with_store(shared, |store| store.days(&since))?;
    let mut out = json!({
        "since": since.label,
        "workers": workers,
        "savings": savings,
        "days": days,
    });
    redact_value(&mut out, &Redactor::new(Vec::new()));
    Ok(out)
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
