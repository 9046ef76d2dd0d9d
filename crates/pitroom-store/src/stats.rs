//! `history stats` and `savings`: sums and medians over the ledger.

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

/// One finished run as the sums need it, borrowed from the row being read: a period of
/// 100,000 runs is summed without allocating per row.
struct Fact<'a> {
    backend: &'a str,
    model: Option<&'a str>,
    state: &'a str,
    failure: Option<&'a str>,
    duration_ms: Option<i64>,
    tokens: i64,
    returned_tokens: Option<i64>,
    cost: Option<f64>,
    cost_estimated: bool,
    saved: Option<f64>,
    primary: Option<&'a str>,
}

fn text<'r>(r: &'r rusqlite::Row<'_>, i: usize) -> rusqlite::Result<Option<&'r str>> {
    Ok(r.get_ref(i)?.as_str_or_null()?)
}

/// Calls `visit` with every finished run started in the period.
fn for_each_fact(
    conn: &Connection,
    since: &Since,
    mut visit: impl FnMut(&Fact<'_>),
) -> rusqlite::Result<()> {
    let mut stmt = conn.prepare_cached(
        "SELECT backend, model, state, failure, duration_ms, tokens, returned_tokens, cost,
                cost_estimated, saved, primary_label
         FROM runs
         WHERE state NOT IN ('queued', 'running') AND started_ms >= ?1",
    )?;
    let mut rows = stmt.query([since.from_ms.unwrap_or(i64::MIN)])?;
    while let Some(r) = rows.next()? {
        visit(&Fact {
            backend: text(r, 0)?.unwrap_or_default(),
            model: text(r, 1)?,
            state: text(r, 2)?.unwrap_or_default(),
            failure: text(r, 3)?,
            duration_ms: r.get(4)?,
            tokens: r.get(5)?,
            returned_tokens: r.get(6)?,
            cost: r.get(7)?,
            cost_estimated: r.get(8)?,
            saved: r.get(9)?,
            primary: text(r, 10)?,
        });
    }
    Ok(())
}

/// Sums for one backend and model.
type Group<T> = (String, Option<String>, T);

/// The index of the group for `backend` and `model` in `groups`, added by `make` when new.
/// Periods hold a handful of workers, so a linear search beats hashing an owned key per row.
fn group<T>(
    groups: &mut Vec<Group<T>>,
    backend: &str,
    model: Option<&str>,
    make: impl FnOnce() -> T,
) -> usize {
    if let Some(i) = groups
        .iter()
        .position(|(b, m, _)| b == backend && m.as_deref() == model)
    {
        return i;
    }
    groups.push((backend.to_string(), model.map(str::to_string), make()));
    groups.len() - 1
}

fn non_negative(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

pub(crate) fn worker_stats(conn: &Connection, since: &Since) -> rusqlite::Result<Vec<WorkerStats>> {
    let mut groups: Vec<Group<(WorkerStats, Vec<u64>)>> = Vec::new();
    for_each_fact(conn, since, |f| {
        let i = group(&mut groups, f.backend, f.model, || {
            let stats = WorkerStats {
                worker: worker_label(f.backend, f.model),
                backend: f.backend.to_string(),
                model: f.model.map(str::to_string),
                ..WorkerStats::default()
            };
            (stats, Vec::new())
        });
        let (s, times) = &mut groups[i].2;
        s.runs += 1;
        let rate_limited = f.failure == Some("rate_limited") && f.state != "done";
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
    })?;
    let mut out: Vec<WorkerStats> = groups
        .into_iter()
        .map(|(_, _, (mut s, mut times))| {
            let judged = s.runs - s.rate_limited;
            s.success_rate = (judged > 0).then(|| s.done as f64 / judged as f64);
            s.median_ms = median(&mut times);
            s
        })
        .collect();
    out.sort_by(|a, b| (&a.backend, &a.model).cmp(&(&b.backend, &b.model)));
    Ok(out)
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
    let mut per_model: Vec<Group<ModelSavings>> = Vec::new();
    for_each_fact(conn, since, |f| {
        if f.tokens <= 0 {
            return;
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
            if !total.primaries.iter().any(|known| known == p) {
                total.primaries.push(p.to_string());
            }
        }
        let i = group(&mut per_model, f.backend, f.model, || ModelSavings {
            worker: worker_label(f.backend, f.model),
            ..ModelSavings::default()
        });
        let m = &mut per_model[i].2;
        m.runs += 1;
        m.tokens += tokens;
        m.saved += f.saved.unwrap_or(0.0);
        m.worker_cost += f.cost.unwrap_or(0.0);
    })?;
    total.compression =
        (total.returned_tokens > 0).then(|| total.tokens as f64 / total.returned_tokens as f64);
    total.primaries.sort();
    total.per_model = per_model.into_iter().map(|(_, _, m)| m).collect();
    total
        .per_model
        .sort_by(|a, b| b.saved.total_cmp(&a.saved).then(a.worker.cmp(&b.worker)));
    Ok(total)
}
