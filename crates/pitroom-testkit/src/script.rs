//! Walking a fake's script: which step of which scenario a request gets (each step a reply or
//! a list of replies served on repeated hits), the `scenario:NAME` tags, the `{{workdir}}` and
//! `{{port}}` placeholders, the fields every reply object may carry (`delay_ms`, `hang`,
//! `raw`, `error_body`…), and [`Scripted`]: an [`http::Server`] answering from a script and
//! logging every request.

use std::collections::HashMap;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value};

use crate::http::{lock, Reply, Request, Server};

/// How long `hang` lasts without `hang_s`.
const DEFAULT_HANG: Duration = Duration::from_secs(600);

/// An error reply from a script step: `error_body` (object or raw string, else `default`),
/// `content_type` and extra `headers`.
pub(crate) fn error_reply(status: u16, r: &Map<String, Value>, default: Value) -> Reply {
    let body = match r.get("error_body") {
        Some(Value::String(raw)) => raw.clone(),
        Some(other) => other.to_string(),
        None => default.to_string(),
    };
    let content_type = r
        .get("content_type")
        .and_then(Value::as_str)
        .unwrap_or("application/json");
    let mut headers = vec![("content-type".to_string(), content_type.to_string())];
    for (k, v) in r
        .get("headers")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        headers.push((k.clone(), value_text(v)));
    }
    Reply::Body {
        status,
        headers,
        body: body.into_bytes(),
    }
}

/// Which hit of each (scenario, step) comes next, to walk step lists.
#[derive(Default)]
pub(crate) struct ScriptState {
    hits: HashMap<(String, usize), usize>,
}

impl ScriptState {
    /// The reply for `step` of `scenario` (the last step past the end; an empty map for an
    /// unknown scenario) and how many times that step was hit before.
    pub fn pick(
        &mut self,
        script: &Value,
        scenario: &str,
        step: usize,
    ) -> (Map<String, Value>, usize) {
        let Some(steps) = script["scenarios"][scenario]
            .as_array()
            .filter(|s| !s.is_empty())
        else {
            return (Map::new(), 0);
        };
        let index = step.min(steps.len() - 1);
        let counter = self.hits.entry((scenario.to_string(), index)).or_insert(0);
        let hit = *counter;
        *counter += 1;
        let reply = match &steps[index] {
            Value::Array(list) if !list.is_empty() => list[hit.min(list.len() - 1)].clone(),
            other => other.clone(),
        };
        (reply.as_object().cloned().unwrap_or_default(), hit)
    }

    /// [`ScriptState::pick`], noted in the request's log `entry` as a request of `kind` with
    /// its scenario, step and hit.
    pub fn pick_logged(
        &mut self,
        script: &Value,
        scenario: &str,
        step: usize,
        kind: &str,
        entry: &mut Value,
    ) -> Map<String, Value> {
        let (reply, hit) = self.pick(script, scenario, step);
        entry["kind"] = kind.into();
        entry["scenario"] = scenario.into();
        entry["step"] = step.into();
        entry["hit"] = hit.into();
        reply
    }
}

/// Every `scenario:NAME` (or `scenario=NAME`) tag in `text`, in order: a name is letters,
/// digits and `_.-`, and a tag with no name is none.
pub(crate) fn scenario_tags(text: &str) -> impl Iterator<Item = &str> {
    text.match_indices("scenario")
        .filter_map(move |(at, word)| {
            let rest = text[at + word.len()..].strip_prefix([':', '='])?;
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')))
                .unwrap_or(rest.len());
            (end > 0).then(|| &rest[..end])
        })
}

/// `scenario:NAME` (or `scenario=NAME`) in `text`.
pub(crate) fn scenario_tag(text: &str) -> Option<&str> {
    let start = text.find("scenario:").or_else(|| text.find("scenario="))? + "scenario:".len();
    let rest = &text[start..];
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')))
        .unwrap_or(rest.len());
    let name = rest[..end].trim_end_matches('.');
    (!name.is_empty()).then_some(name)
}

pub(crate) fn default_scenario(script: &Value) -> String {
    script["default_scenario"]
        .as_str()
        .unwrap_or("default")
        .to_string()
}

/// Replaces `{{workdir}}` and `{{port}}` in every string of `reply`.
pub(crate) fn fill_placeholders(
    reply: Map<String, Value>,
    workdir: &str,
    port: u16,
) -> Map<String, Value> {
    fn fill(value: Value, workdir: &str, port: &str) -> Value {
        match value {
            Value::String(s) => {
                Value::String(s.replace("{{workdir}}", workdir).replace("{{port}}", port))
            }
            Value::Array(items) => {
                Value::Array(items.into_iter().map(|v| fill(v, workdir, port)).collect())
            }
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .map(|(k, v)| (k, fill(v, workdir, port)))
                    .collect(),
            ),
            other => other,
        }
    }
    let port = port.to_string();
    reply
        .into_iter()
        .map(|(k, v)| (k, fill(v, workdir, &port)))
        .collect()
}

pub(crate) fn status_of(value: &Value) -> u16 {
    value
        .as_u64()
        .or_else(|| value.as_str().and_then(|s| s.parse().ok()))
        .and_then(|n| u16::try_from(n).ok())
        .unwrap_or(500)
}

/// The reply of a step scripted `raw`: that text verbatim with status 200, as
/// `raw_content_type` (default `text/event-stream`).
pub(crate) fn raw_reply(r: &Map<String, Value>) -> Option<Reply> {
    let raw = r.get("raw")?;
    let content_type = r
        .get("raw_content_type")
        .and_then(Value::as_str)
        .unwrap_or("text/event-stream");
    Some(Reply::text(200, content_type, value_text(raw)))
}

pub(crate) fn value_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

pub(crate) fn millis(value: Option<&Value>) -> Option<Duration> {
    value
        .and_then(Value::as_f64)
        .map(|ms| Duration::from_secs_f64(ms.max(0.0) / 1000.0))
}

pub(crate) fn truthy(value: &Value) -> bool {
    !matches!(value, Value::Null | Value::Bool(false))
}

pub(crate) fn hang_limit(r: &Map<String, Value>) -> Duration {
    r.get("hang_s")
        .and_then(Value::as_f64)
        .map_or(DEFAULT_HANG, |s| Duration::from_secs_f64(s.max(0.0)))
}

/// How a fake answers one request from its script: the reply, and the request's log entry.
pub(crate) type Handle = fn(&Value, &Mutex<ScriptState>, &Request, u16) -> (Reply, Value);

/// A running scripted fake: a [`Server`] whose every request is answered by a [`Handle`] from
/// the script and logged; dropping it stops the server.
pub(crate) struct Scripted {
    server: Server,
    log: Arc<Mutex<Vec<Value>>>,
}

impl Scripted {
    /// Starts the server `name` on 127.0.0.1 with an OS-chosen port, serving `script`.
    pub fn start(name: &str, script: Value, handle: Handle) -> io::Result<Scripted> {
        let log = Arc::new(Mutex::new(Vec::new()));
        let state = Mutex::new(ScriptState::default());
        let handler_log = Arc::clone(&log);
        let server = Server::start(
            name,
            Arc::new(move |req: &Request, port: u16| {
                let (reply, entry) = handle(&script, &state, req, port);
                lock(&handler_log).push(entry);
                reply
            }),
        )?;
        Ok(Scripted { server, log })
    }

    pub fn port(&self) -> u16 {
        self.server.port()
    }

    /// Every request so far, in order.
    pub fn requests(&self) -> Vec<Value> {
        lock(&self.log).clone()
    }

    /// The requests logged with `"kind": kind`.
    pub fn requests_of_kind(&self, kind: &str) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(|r| r["kind"] == kind)
            .collect()
    }
}

impl std::fmt::Debug for Scripted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scripted")
            .field("port", &self.port())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn scenario_tags_end_at_the_first_non_name_character() {
        assert_eq!(scenario_tag("do it scenario:err429, now"), Some("err429"));
        assert_eq!(scenario_tag("scenario=edit."), Some("edit"));
        assert_eq!(scenario_tag("no tag"), None);
    }

    #[test]
    fn step_lists_walk_then_repeat_their_last_entry() {
        let script = json!({"scenarios": {"s": [[{"n": 1}, {"n": 2}]]}});
        let mut state = ScriptState::default();
        let picks: Vec<Value> = (0..3)
            .map(|_| state.pick(&script, "s", 5).0["n"].clone())
            .collect();
        assert_eq!(picks, vec![json!(1), json!(2), json!(2)]);
        assert!(state.pick(&script, "missing", 0).0.is_empty());
    }
}
