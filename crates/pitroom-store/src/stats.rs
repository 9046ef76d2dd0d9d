//! `history stats` and `savings`: sums and medians over the ledger.

use std::collections::BTreeMap;

use rusqlite::Connection;

use crate::row::worker_label;
use crate::since::Since;

/// One worker and model over a period.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct WorkerStats {
    /// `backend:model`, or the backend for the CLI's default model.
    pub worker: String,
    pub backend: String,
    pub model: Option<String>,
    /// Finished runs, rate-limited ones included.
    pub runs: u64,
    pub done: u64,
    /// Runs that failed because the provider refused for rate or quota: the worker's
    /// availability, not its skill, so they are left out of the success rate.
    pub rate_limited: u64,
    /// `done / (runs − rate_limited)`; `None` when nothing is left to judge.
    pub success_rate: Option<f64>,
    /// Median run time of the runs that are not rate-limited.
    pub median_ms: Option<u64>,
    pub tokens: u64,
    /// Sum of the known costs (reported or estimated), USD.
    pub cost: f64,
    /// Runs whose cost is an estimate from `worker_prices`.
    pub cost_estimated_runs: u64,
    /// Runs with tokens but no known cost (`n/a`).
    pub cost_unknown_runs: u64,
    /// Estimated saving, USD.
    pub saved: f64,
}

/// The median of `values` (the mean of the middle two for an even count).
pub fn median(values: &mut [u64]) -> Option<u64> {
    if values.is_empty() {
        return None;
    }
    values.sort_unstable();
    let mid = values.len() / 2;
    Some(if values.len() % 2 == 1 {
        values[mid]
    } else {
        values[mid - 1] / 2 + values[mid] / 2 + (values[mid - 1] % 2 + values[mid] % 2) / 2
    })
}

/// One finished run as the sums need it.
struct Fact {
    backend: String,
    model: Option<String>,
    state: String,
    failure: Option<String>,
    duration_ms: Option<i64>,
    tokens: i64,
    returned_tokens: Option<i64>,
    cost: Option<f64>,
    cost_estimated: bool,
    saved: Option<f64>,
    primary: Option<String>,
}

fn facts(conn: &Connection, since: &Since) -> rusqlite::Result<Vec<Fact>> {
    let mut stmt = conn.prepare_cached(
        "SELECT backend, model, state, failure, duration_ms, tokens, returned_tokens, cost,
                cost_estimated, saved, primary_label
         FROM runs
         WHERE state NOT IN ('queued', 'running') AND started_ms >= ?1",
    )?;
    let rows = stmt.query_map([since.from_ms.unwrap_or(i64::MIN)], |r| {
        Ok(Fact {
            backend: r.get(0)?,
            model: r.get(1)?,
            state: r.get(2)?,
            failure: r.get(3)?,
            duration_ms: r.get(4)?,
            tokens: r.get(5)?,
            returned_tokens: r.get(6)?,
            cost: r.get(7)?,
            cost_estimated: r.get(8)?,
            saved: r.get(9)?,
            primary: r.get(10)?,
        })
    })?;
    rows.collect()
}

fn non_negative(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

pub(crate) fn worker_stats(conn: &Connection, since: &Since) -> rusqlite::Result<Vec<WorkerStats>> {
    let mut groups: BTreeMap<(String, Option<String>), (WorkerStats, Vec<u64>)> = BTreeMap::new();
    for f in facts(conn, since)? {
        let key = (f.backend.clone(), f.model.clone());
        let (s, times) = groups.entry(key).or_insert_with(|| {
            (
                WorkerStats {
                    worker: worker_label(&f.backend, f.model.as_deref()),
                    backend: f.backend.clone(),
                    model: f.model.clone(),
                    ..WorkerStats::default()
                },
                Vec::new(),
            )
        });
        s.runs += 1;
        let rate_limited = f.failure.as_deref() == Some("rate_limited") && f.state != "done";
        if rate_limited {
            s.rate_limited += 1;
        } else if let Some(ms) = f.duration_ms {
            times.push(non_negative(ms));
        }
        if f.state == "done" {
            s.done += 1;
        }
        s.tokens += non_negative(f.tokens);
        match f.cost {
            Some(c) => {
                s.cost += c;
                s.cost_estimated_runs += u64::from(f.cost_estimated);
            }
            None if f.tokens > 0 => s.cost_unknown_runs += 1,
            None => {}
        }
        s.saved += f.saved.unwrap_or(0.0);
    }
    Ok(groups
        .into_values()
        .map(|(mut s, mut times)| {
            let judged = s.runs - s.rate_limited;
            s.success_rate = (judged > 0).then(|| s.done as f64 / judged as f64);
            s.median_ms = median(&mut times);
            s
        })
        .collect())
}

/// Savings over one period.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Savings {
    pub since: String,
    pub from_ms: Option<i64>,
    /// Runs that reached the model (they used tokens): the delegated tasks.
    pub runs: u64,
    pub tokens: u64,
    pub returned_tokens: u64,
    /// `tokens / returned_tokens`; `None` without returned tokens.
    pub compression: Option<f64>,
    /// Estimated saving in USD: always an estimate.
    pub saved: f64,
    /// Known worker cost (reported or estimated), USD.
    pub worker_cost: f64,
    pub cost_estimated_runs: u64,
    /// Runs without any cost figure: counted as $0 in `saved`, which overstates it.
    pub cost_unknown_runs: u64,
    /// The primary models the savings were estimated against.
    pub primaries: Vec<String>,
    pub per_model: Vec<ModelSavings>,
}

/// One worker's share of a period's savings.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct ModelSavings {
    pub worker: String,
    pub runs: u64,
    pub tokens: u64,
    pub saved: f64,
    pub worker_cost: f64,
}

pub(crate) fn savings(conn: &Connection, since: &Since) -> rusqlite::Result<Savings> {
    let mut total = Savings {
        since: since.label.clone(),
        from_ms: since.from_ms,
        ..Savings::default()
    };
    let mut per_model: BTreeMap<String, ModelSavings> = BTreeMap::new();
    for f in facts(conn, since)? {
        if f.tokens <= 0 {
            continue;
        }
        let tokens = non_negative(f.tokens);
        total.runs += 1;
        total.tokens += tokens;
        total.returned_tokens += f.returned_tokens.map(non_negative).unwrap_or(0);
        total.saved += f.saved.unwrap_or(0.0);
        total.worker_cost += f.cost.unwrap_or(0.0);
        match f.cost {
            Some(_) if f.cost_estimated => total.cost_estimated_runs += 1,
            Some(_) => {}
            None => total.cost_unknown_runs += 1,
        }
        if let Some(p) = f.primary {
            if !total.primaries.contains(&p) {
                total.primaries.push(p);
            }
        }
        let worker = worker_label(&f.backend, f.model.as_deref());
        let m = per_model.entry(worker.clone()).or_insert(ModelSavings {
            worker,
            ..ModelSavings::default()
        });
        m.runs += 1;
        m.tokens += tokens;
        m.saved += f.saved.unwrap_or(0.0);
        m.worker_cost += f.cost.unwrap_or(0.0);
    }
    total.compression =
        (total.returned_tokens > 0).then(|| total.tokens as f64 / total.returned_tokens as f64);
    total.primaries.sort();
    total.per_model = per_model.into_values().collect();
    total
        .per_model
        .sort_by(|a, b| b.saved.total_cmp(&a.saved).then(a.worker.cmp(&b.worker)));
    Ok(total)
}
