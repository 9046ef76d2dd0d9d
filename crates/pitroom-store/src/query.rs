//! History search: FTS5 over task, answer and steps, with filters.

use rusqlite::types::Value;
use rusqlite::Connection;

use crate::row::worker_label;
use crate::since::Since;

/// What `history` asks for.
#[derive(Debug, Clone)]
pub struct Filter {
    /// Words to find in the task, answer or steps; each word matches as a prefix, all must match.
    pub text: Option<String>,
    /// A model (`openai/gpt-5`), a worker (`opencode:openai/gpt-5`) or a backend (`opencode`).
    pub model: Option<String>,
    pub state: Option<String>,
    pub since: Since,
    pub limit: usize,
}

impl Default for Filter {
    fn default() -> Self {
        Filter {
            text: None,
            model: None,
            state: None,
            since: Since::all(),
            limit: 20,
        }
    }
}

/// One search result.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Hit {
    pub id: String,
    /// RFC 3339, UTC.
    pub started_at: String,
    pub state: String,
    pub mode: String,
    pub worker: String,
    pub model: Option<String>,
    pub task: String,
    pub duration_ms: Option<i64>,
    pub tokens: i64,
    pub cost: Option<f64>,
    pub cost_estimated: bool,
    pub saved: Option<f64>,
    pub failure: Option<String>,
    /// The matching passage, with the match in `[` `]`; only for text searches.
    pub snippet: Option<String>,
    /// `clean` removed the run's directory; only this row is left.
    pub pruned: bool,
}

/// Turns typed words into an FTS5 query: each word a quoted prefix term, so punctuation in
/// the user's text (`foo.rs:12`, `a-b`, `"`) is never FTS syntax.
pub(crate) fn match_expression(text: &str) -> Option<String> {
    let terms: Vec<String> = text
        .split_whitespace()
        .map(|w| w.replace('"', ""))
        .filter(|w| w.chars().any(char::is_alphanumeric))
        .map(|w| format!("\"{w}\"*"))
        .collect();
    (!terms.is_empty()).then(|| terms.join(" "))
}

const COLUMNS: &str = "r.id, r.started_ms, r.state, r.mode, r.backend, r.model, r.task, \
    r.duration_ms, r.tokens, r.cost, r.cost_estimated, r.saved, r.failure, r.pruned";

pub(crate) fn search(conn: &Connection, filter: &Filter) -> rusqlite::Result<Vec<Hit>> {
    let mut clauses: Vec<String> = Vec::new();
    let mut params: Vec<Value> = Vec::new();
    let text = filter.text.as_deref().and_then(match_expression);
    let (from, snippet, order) = match &text {
        Some(q) => {
            params.push(Value::Text(q.clone()));
            clauses.push(format!("runs_fts MATCH ?{}", params.len()));
            (
                "runs_fts JOIN runs r ON r.rid = runs_fts.rowid",
                "snippet(runs_fts, -1, '[', ']', '…', 12)",
                // Newest first by row id (rows are inserted as runs end, and imports go in id
                // order): FTS5 walks its doclists backwards and stops at the limit, where a
                // relevance order would have to score every match (600+ ms for a common word
                // over 100,000 runs).
                "runs_fts.rowid DESC",
            )
        }
        // Runs that started in the same millisecond (or under a fixed test clock): newest id first.
        None => ("runs r", "NULL", "r.started_ms DESC, r.id DESC"),
    };
    if let Some(m) = &filter.model {
        params.push(Value::Text(m.clone()));
        let n = params.len();
        clauses.push(format!(
            "(r.model = ?{n} OR r.backend = ?{n} OR r.backend || ':' || r.model = ?{n})"
        ));
    }
    if let Some(s) = &filter.state {
        params.push(Value::Text(s.clone()));
        clauses.push(format!("r.state = ?{}", params.len()));
    }
    if let Some(from_ms) = filter.since.from_ms {
        params.push(Value::Integer(from_ms));
        clauses.push(format!("r.started_ms >= ?{}", params.len()));
    }
    params.push(Value::Integer(
        i64::try_from(filter.limit.max(1)).unwrap_or(i64::MAX),
    ));
    let limit = params.len();
    let filter_sql = if clauses.is_empty() {
        String::new()
    } else {
        format!("WHERE {}", clauses.join(" AND "))
    };
    let sql = format!(
        "SELECT {COLUMNS}, {snippet} FROM {from} {filter_sql} ORDER BY {order} LIMIT ?{limit}"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map(rusqlite::params_from_iter(params), |r| {
        let started_ms: i64 = r.get(1)?;
        let backend: String = r.get(4)?;
        let model: Option<String> = r.get(5)?;
        Ok(Hit {
            id: r.get(0)?,
            started_at: format_ms(started_ms),
            state: r.get(2)?,
            mode: r.get(3)?,
            worker: worker_label(&backend, model.as_deref()),
            model,
            task: r.get(6)?,
            duration_ms: r.get(7)?,
            tokens: r.get(8)?,
            cost: r.get(9)?,
            cost_estimated: r.get(10)?,
            saved: r.get(11)?,
            failure: r.get(12)?,
            pruned: r.get(13)?,
            snippet: r.get(14)?,
        })
    })?;
    rows.collect()
}

fn format_ms(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_becomes_a_quoted_prefix_term() {
        for (words, expression) in [
            ("parse config", Some("\"parse\"* \"config\"*")),
            (
                "src/main.rs:12 \"quoted\"",
                Some("\"src/main.rs:12\"* \"quoted\"*"),
            ),
            ("  -- \"\" ", None),
        ] {
            assert_eq!(match_expression(words).as_deref(), expression, "{words}");
        }
    }
}
