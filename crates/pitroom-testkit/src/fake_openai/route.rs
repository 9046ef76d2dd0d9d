//! Routing, and which step of the script a request gets.

use super::*;
use crate::script::scenario_tags;

pub(super) fn route(conn: &mut Conn, req: &Request) -> io::Result<Outcome> {
    let close = req.wants_close();
    let shared = conn.shared;
    let out = &mut conn.stream;
    match (req.method.as_str(), req.route_path()) {
        ("GET", path) if path.ends_with("/models") => {
            shared.record(req, req.body_json(), "models", Map::new());
            send_json(out, 200, &models_list(&shared.script), &[], close)?;
        }
        ("GET", "/__requests") => {
            let log = Value::Array(lock(&shared.state).log.clone());
            send_json(out, 200, &log, &[], close)?;
        }
        ("GET", "/__health") => send_json(out, 200, &json!({"ok": true}), &[], close)?,
        ("POST", "/__reset") => {
            shared.reset();
            send_json(out, 200, &json!({"ok": true}), &[], close)?;
        }
        ("POST", path) if path.ends_with("/chat/completions") => {
            return serve_chat(conn, req, close);
        }
        ("POST", _) => {
            let note = fields([("note", json!("unknown path"))]);
            shared.record(req, req.body_json(), "other", note);
            let message = format!("unknown path {}", req.target);
            send_json(out, 404, &not_found_body(message), &[], close)?;
        }
        _ => {
            shared.record(req, req.body_json(), "other", Map::new());
            let message = format!("not found: {}", req.target);
            send_json(out, 404, &not_found_body(message), &[], close)?;
        }
    }
    Ok(outcome(close))
}

pub(super) fn not_found_body(message: String) -> Value {
    json!({"error": {"message": message, "type": "invalid_request_error"}})
}

pub(super) fn models_list(script: &Value) -> Value {
    let ids = script
        .get("models")
        .and_then(Value::as_array)
        .filter(|ids| !ids.is_empty())
        .cloned()
        .unwrap_or_else(|| vec![json!("fake-model")]);
    let created = now();
    let data: Vec<Value> = ids
        .into_iter()
        .map(|id| json!({"id": id, "object": "model", "created": created, "owned_by": "fake"}))
        .collect();
    json!({"object": "list", "data": data})
}

pub(super) fn serve_chat(conn: &mut Conn, req: &Request, close: bool) -> io::Result<Outcome> {
    let body = match serde_json::from_slice::<Value>(&req.body) {
        Ok(Value::Object(body)) => body,
        _ => {
            let raw = Value::String(String::from_utf8_lossy(&req.body).into_owned());
            let note = fields([("note", json!("bad json"))]);
            conn.shared.record(req, raw, "other", note);
            let error = json!({"error": {"message": "bad json", "type": "invalid_request_error"}});
            send_json(&mut conn.stream, 400, &error, &[], close)?;
            return Ok(outcome(close));
        }
    };
    let pick = pick_reply(conn.shared, &body);
    // Logged before answering, so a hanging request is visible in the log.
    conn.shared
        .record(req, Value::Object(body.clone()), pick.kind, pick.meta);
    respond(conn, &body, &pick.reply, close)
}

// ---------------------------------------------------------------- script logic

/// The response object chosen for a chat request, and what to log about it.
pub(super) struct Pick {
    pub(super) reply: Value,
    pub(super) kind: &'static str,
    pub(super) meta: Map<String, Value>,
}

pub(super) fn pick_reply(shared: &Shared, body: &Map<String, Value>) -> Pick {
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let placeholders = Placeholders {
        workdir: find_workdir(messages).unwrap_or_else(|| shared.fallback_workdir.clone()),
        port: shared.port.to_string(),
    };
    if !body.get("tools").is_some_and(truthy) {
        return aux_pick(&shared.script, &placeholders);
    }
    let scenario = scenario_for_model(&shared.script, body)
        .or_else(|| scenario_named_in(messages))
        .unwrap_or_else(|| shared.default_scenario.clone());
    let steps = scenario_steps(&shared.script, &scenario);
    let index = step_index(messages);
    // Past the end, the last step is reused (steps is never empty).
    let clamped = index.min(steps.len().saturating_sub(1));
    let hit = shared.next_hit(&scenario, clamped);
    let reply = match steps.get(clamped) {
        Some(Value::Array(tries)) => tries
            .get(hit.min(tries.len().saturating_sub(1)))
            .cloned()
            .unwrap_or_else(|| json!({})),
        step => step.cloned().unwrap_or_default(),
    };
    let meta = fields([
        ("scenario", json!(scenario)),
        ("step", json!(index)),
        ("hit", json!(hit)),
        ("tool_names", tool_names(body.get("tools"))),
    ]);
    Pick {
        reply: placeholders.apply(&reply),
        kind: "chat",
        meta,
    }
}

/// The steps of a scenario; an unknown or empty one answers with a note.
pub(super) fn scenario_steps<'s>(script: &'s Value, name: &str) -> Cow<'s, [Value]> {
    match script.get("scenarios").and_then(|s| s.get(name)) {
        Some(Value::Array(steps)) if !steps.is_empty() => Cow::Borrowed(steps),
        // Not in the Python (which would crash): a bare object is one step.
        Some(step @ Value::Object(o)) if !o.is_empty() => Cow::Borrowed(std::slice::from_ref(step)),
        _ => Cow::Owned(vec![
            json!({"text": format!("fake-openai: unknown scenario {name}")}),
        ]),
    }
}

/// Requests without tools (titles, summaries) get the aux reply, no step.
pub(super) fn aux_pick(script: &Value, placeholders: &Placeholders) -> Pick {
    let aux = script
        .get("aux")
        .filter(|aux| truthy(aux))
        .cloned()
        .unwrap_or_else(|| json!({"text": "Fake title"}));
    Pick {
        reply: placeholders.apply(&aux),
        kind: "aux",
        meta: fields([
            ("scenario", json!("aux")),
            ("step", Value::Null),
            ("hit", Value::Null),
        ]),
    }
}

pub(super) fn tool_names(tools: Option<&Value>) -> Value {
    let names = tools
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice)
        .iter()
        .map(|tool| tool["function"]["name"].clone())
        .collect();
    Value::Array(names)
}

pub(super) fn role(message: &Value) -> Option<&str> {
    message.get("role").and_then(Value::as_str)
}

/// The number of assistant messages after the last user message.
pub(super) fn step_index(messages: &[Value]) -> usize {
    let start = messages
        .iter()
        .rposition(|m| role(m) == Some("user"))
        .map_or(0, |last_user| last_user + 1);
    messages[start..]
        .iter()
        .filter(|m| role(m) == Some("assistant"))
        .count()
}

/// The scenario `script.by_model` assigns to the requested model, if any.
pub(super) fn scenario_for_model(script: &Value, body: &Map<String, Value>) -> Option<String> {
    let model = body.get("model")?.as_str()?;
    let scenario = script.get("by_model")?.get(model)?.as_str()?;
    Some(scenario.to_owned())
}

/// The scenario named by the latest user message that names one; within a message, its last
/// tag. A CLI that resumes a session whose last prompt was never answered (a run stopped
/// mid-turn) may send that prompt and the new one in one message, oldest first: the new one
/// decides.
pub(super) fn scenario_named_in(messages: &[Value]) -> Option<String> {
    messages
        .iter()
        .rev()
        .filter(|m| role(m) == Some("user"))
        .find_map(|m| {
            scenario_tags(&msg_text(m.get("content")))
                .last()
                .map(str::to_owned)
        })
}

/// The text of a message's content: a string, or the text parts of a list.
pub(super) fn msg_text(content: Option<&Value>) -> String {
    match content {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .map(|part| match part {
                Value::Object(o) => o.get("text").map(value_text).unwrap_or_default(),
                other => value_text(other),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Some(other) => py_dumps(other),
    }
}

/// The working directory named in the request. OpenCode puts it in the
/// system prompt, Kilo in the user message's `<environment_details>`: system
/// messages are searched first, then user messages from the latest.
pub(super) fn find_workdir(messages: &[Value]) -> Option<String> {
    let system = messages.iter().filter(|m| role(m) == Some("system"));
    let users = messages.iter().rev().filter(|m| role(m) == Some("user"));
    system
        .chain(users)
        .find_map(|m| workdir_in(&msg_text(m.get("content"))).map(str::to_owned))
}

pub(super) fn workdir_in(text: &str) -> Option<&str> {
    word_after(text, "Working directory:")
        .or_else(|| cwd_tag(text))
        .or_else(|| word_after(text, "Current working directory:"))
        // Qwen Code's first user message: "I'm currently working in the directory: /path".
        .or_else(|| word_after(text, "working in the directory:"))
}

/// `LABEL\s*(\S+)`: the first non-blank word after the label.
pub(super) fn word_after<'t>(text: &'t str, label: &str) -> Option<&'t str> {
    text.match_indices(label).find_map(|(at, _)| {
        let rest = text[at + label.len()..].trim_start();
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        (end > 0).then(|| &rest[..end])
    })
}

/// `<cwd>\s*(\S+?)\s*</cwd>`: the shortest word followed by the closing tag.
pub(super) fn cwd_tag(text: &str) -> Option<&str> {
    text.match_indices("<cwd>").find_map(|(at, tag)| {
        let rest = text[at + tag.len()..].trim_start();
        let word_len = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let ends = rest[..word_len].char_indices().skip(1).map(|(i, _)| i);
        ends.chain([word_len])
            .filter(|&end| end > 0)
            .find(|&end| rest[end..].trim_start().starts_with("</cwd>"))
            .map(|end| &rest[..end])
    })
}

/// `{{workdir}}` and `{{port}}` values for one request.
pub(super) struct Placeholders {
    pub(super) workdir: String,
    pub(super) port: String,
}

impl Placeholders {
    /// Substitutes in every string value (not in keys), as the Python.
    pub(super) fn apply(&self, value: &Value) -> Value {
        match value {
            Value::String(text) => Value::String(
                text.replace("{{workdir}}", &self.workdir)
                    .replace("{{port}}", &self.port),
            ),
            Value::Array(items) => Value::Array(items.iter().map(|v| self.apply(v)).collect()),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), self.apply(v)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
}
