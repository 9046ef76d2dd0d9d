//! Replies: completions, streamed or whole, errors, hangs.

use super::*;

pub(super) fn respond(
    conn: &mut Conn,
    body: &Map<String, Value>,
    reply: &Value,
    close: bool,
) -> io::Result<Outcome> {
    let Some(r) = reply.as_object() else {
        let error = json!({"error": {"message": "fake-openai: script step is not a JSON object",
                                     "type": "server_error", "param": null, "code": null}});
        send_json(&mut conn.stream, 500, &error, &[], close)?;
        return Ok(outcome(close));
    };
    if let Some(delay) = millis(r.get("delay_ms")) {
        if !conn.shared.pause(delay) {
            return Ok(Outcome::Close);
        }
    }
    if r.get("hang").is_some_and(truthy) {
        conn.hang(hang_limit(r));
        return Ok(Outcome::Close);
    }
    let headers = extra_headers(r.get("headers"));
    if r.get("error").is_some_and(truthy) {
        send_error(&mut conn.stream, r, body, &headers, close)?;
        return Ok(outcome(close));
    }
    if let Some(raw) = r.get("raw") {
        let content_type = r
            .get("raw_content_type")
            .map_or_else(|| "application/json".to_owned(), value_text);
        let raw = value_text(raw);
        send_body(
            &mut conn.stream,
            200,
            &content_type,
            raw.as_bytes(),
            &headers,
            close,
        )?;
        return Ok(outcome(close));
    }
    let completion = Completion::from_step(body, r);
    if body.get("stream").is_some_and(truthy) {
        stream_reply(conn, r, &completion, &headers)?;
        return Ok(Outcome::Close);
    }
    send_json(
        &mut conn.stream,
        200,
        &completion.response(),
        &headers,
        close,
    )?;
    Ok(outcome(close))
}

/// A positive number of milliseconds as a duration.
pub(super) fn millis(value: Option<&Value>) -> Option<Duration> {
    let ms = value.and_then(Value::as_f64).filter(|ms| *ms > 0.0)?;
    Duration::try_from_secs_f64(ms / 1000.0).ok()
}

pub(super) fn hang_limit(r: &Map<String, Value>) -> Duration {
    let secs = r
        .get("hang_s")
        .and_then(Value::as_f64)
        .unwrap_or(DEFAULT_HANG_SECS);
    if secs > 0.0 {
        Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX)
    } else {
        Duration::ZERO
    }
}

pub(super) fn extra_headers(headers: Option<&Value>) -> Vec<(String, String)> {
    headers
        .and_then(Value::as_object)
        .map(|map| {
            map.iter()
                .map(|(k, v)| (k.clone(), value_text(v)))
                .collect()
        })
        .unwrap_or_default()
}

pub(super) fn send_error(
    out: &mut TcpStream,
    r: &Map<String, Value>,
    body: &Map<String, Value>,
    headers: &[(String, String)],
    close: bool,
) -> io::Result<()> {
    let status = error_status(r.get("error"));
    if let Some(custom) = r.get("error_body") {
        return match custom {
            Value::String(text) => send_body(
                out,
                status,
                "application/json",
                text.as_bytes(),
                headers,
                close,
            ),
            other => send_json(out, status, other, headers, close),
        };
    }
    let (message, kind, code) = default_error(status, body.get("model"));
    let message = r.get("error_message").cloned().unwrap_or(json!(message));
    let payload = json!({"error": {"message": message, "type": kind, "param": null, "code": code}});
    send_json(out, status, &payload, headers, close)
}

/// The status of `"error"`: a number or numeric string; anything unusable
/// (the Python would crash) becomes 500.
pub(super) fn error_status(value: Option<&Value>) -> u16 {
    let number = match value {
        Some(Value::Number(n)) => n.as_f64(),
        Some(Value::String(s)) => s.trim().parse::<f64>().ok(),
        _ => None,
    };
    number
        .map(f64::trunc)
        .filter(|n| (100.0..=999.0).contains(n))
        .map_or(500, |n| n as u16)
}

/// OpenAI's messages, types and codes per status, as OpenCode expects them.
pub(super) fn default_error(
    status: u16,
    model: Option<&Value>,
) -> (String, &'static str, Option<&'static str>) {
    let (message, kind, code) = match status {
        400 => ("Bad request", "invalid_request_error", None),
        401 => (
            "Incorrect API key provided",
            "invalid_request_error",
            Some("invalid_api_key"),
        ),
        404 => {
            let message = format!(
                "The model `{}` does not exist or you do not have access to it.",
                python_str(model)
            );
            return (message, "invalid_request_error", Some("model_not_found"));
        }
        429 => (
            "Rate limit reached for requests",
            "rate_limit_error",
            Some("rate_limit_exceeded"),
        ),
        500 => (
            "The server had an error while processing your request.",
            "server_error",
            None,
        ),
        503 => (
            "The engine is currently overloaded, please try again later",
            "server_error",
            None,
        ),
        _ => return (format!("error {status}"), "server_error", None),
    };
    (message.to_owned(), kind, code)
}

/// Python's `"%s" % value` for a JSON value (missing or null is `None`).
pub(super) fn python_str(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => "None".into(),
        Some(other) => value_text(other),
    }
}

/// A string value as is, anything else as JSON text.
pub(super) fn value_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => py_dumps(other),
    }
}

/// Python truthiness of a JSON value (the script semantics follow `if r.get(…)`).
pub(super) fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// A successful completion built from a script step.
pub(super) struct Completion {
    pub(super) id: String,
    pub(super) model: Value,
    pub(super) text: Value,
    pub(super) reasoning: Value,
    /// OpenAI tool calls, each with its stream `index`.
    pub(super) tool_calls: Vec<Value>,
    /// `Value::Null` means "send no finish reason".
    pub(super) finish_reason: Value,
    pub(super) usage: Value,
}

impl Completion {
    pub(super) fn from_step(body: &Map<String, Value>, r: &Map<String, Value>) -> Completion {
        let tool_calls = tool_calls(r);
        let finish_reason = finish_reason(r, !tool_calls.is_empty());
        Completion {
            id: format!("chatcmpl-{}", random_hex(24)),
            model: body
                .get("model")
                .cloned()
                .unwrap_or_else(|| json!("fake-model")),
            text: r.get("text").cloned().unwrap_or(Value::Null),
            reasoning: r.get("reasoning").cloned().unwrap_or(Value::Null),
            tool_calls,
            finish_reason,
            usage: usage(r),
        }
    }

    /// The non-streaming `chat.completion` body.
    pub(super) fn response(&self) -> Value {
        let mut message = fields([("role", json!("assistant")), ("content", self.text.clone())]);
        if truthy(&self.reasoning) {
            message.insert("reasoning_content".into(), self.reasoning.clone());
        }
        if !self.tool_calls.is_empty() {
            let calls = self.tool_calls.iter().map(without_index).collect();
            message.insert("tool_calls".into(), Value::Array(calls));
        }
        json!({
            "id": self.id, "object": "chat.completion", "created": now(), "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": self.finish_reason}],
            "usage": self.usage,
        })
    }

    pub(super) fn chunk(&self, delta: Value, finish_reason: Value) -> Value {
        json!({
            "id": self.id, "object": "chat.completion.chunk", "created": now(), "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        })
    }

    /// The SSE events of a streamed reply, in order, before `[DONE]`.
    pub(super) fn events(&self) -> Vec<Value> {
        let none = || Value::Null;
        let mut events = vec![self.chunk(json!({"role": "assistant", "content": ""}), none())];
        if truthy(&self.reasoning) {
            for piece in pieces(&value_text(&self.reasoning)) {
                events.push(self.chunk(json!({"reasoning_content": piece}), none()));
            }
        }
        if truthy(&self.text) {
            for piece in pieces(&value_text(&self.text)) {
                events.push(self.chunk(json!({"content": piece}), none()));
            }
        }
        for call in &self.tool_calls {
            // First the identity with empty arguments, then the arguments, as
            // OpenAI does, so clients must accumulate deltas by index.
            let (index, function) = (&call["index"], &call["function"]);
            let head = json!({"index": index, "id": call["id"], "type": "function",
                              "function": {"name": function["name"], "arguments": ""}});
            let args = json!({"index": index, "function": {"arguments": function["arguments"]}});
            events.push(self.chunk(json!({"tool_calls": [head]}), none()));
            events.push(self.chunk(json!({"tool_calls": [args]}), none()));
        }
        if !self.finish_reason.is_null() {
            events.push(self.chunk(json!({}), self.finish_reason.clone()));
        }
        // OpenAI sends this only for stream_options.include_usage; the Python
        // (and so this fake) always sends it.
        events.push(json!({
            "id": self.id, "object": "chat.completion.chunk", "created": now(),
            "model": self.model, "choices": [], "usage": self.usage,
        }));
        events
    }
}

pub(super) fn without_index(call: &Value) -> Value {
    let map = call.as_object().map(|o| {
        o.iter()
            .filter(|(k, _)| *k != "index")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect::<Map<_, _>>()
    });
    map.map_or(Value::Null, Value::Object)
}

pub(super) fn tool_calls(r: &Map<String, Value>) -> Vec<Value> {
    let Some(list) = r.get("tool_calls").and_then(Value::as_array) else {
        return Vec::new();
    };
    list.iter()
        .enumerate()
        .map(|(index, call)| {
            // Arguments travel as a JSON string; a scripted string is sent verbatim
            // (that is how invalid arguments are scripted).
            let arguments = match call.get("arguments") {
                Some(Value::String(raw)) => raw.clone(),
                Some(other) => py_dumps(other),
                None => "{}".to_owned(),
            };
            let id = call
                .get("id")
                .filter(|id| truthy(id))
                .cloned()
                .unwrap_or_else(|| json!(format!("call_{}", random_hex(20))));
            let name = call.get("name").cloned().unwrap_or(Value::Null);
            json!({"index": index, "id": id, "type": "function",
                   "function": {"name": name, "arguments": arguments}})
        })
        .collect()
}

pub(super) fn finish_reason(r: &Map<String, Value>, has_tool_calls: bool) -> Value {
    match r.get("finish_reason") {
        // Not in the Python: an explicit null scripts "no finish reason".
        Some(Value::Null) => Value::Null,
        Some(reason) if truthy(reason) => reason.clone(),
        _ if has_tool_calls => json!("tool_calls"),
        _ => json!("stop"),
    }
}

/// Maps the script's flat usage fields to OpenAI's usage object.
pub(super) fn usage(r: &Map<String, Value>) -> Value {
    let empty = Map::new();
    let u = r
        .get("usage")
        .filter(|u| truthy(u))
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let field = |key: &str, default: u64| u.get(key).cloned().unwrap_or_else(|| json!(default));
    let prompt = field("prompt_tokens", 100);
    let completion = field("completion_tokens", 20);
    let total = add_numbers(&prompt, &completion);
    let mut prompt_details = fields([("cached_tokens", field("cached_tokens", 0))]);
    if let Some(written) = u.get("cache_write_tokens").filter(|w| truthy(w)) {
        prompt_details.insert("cache_write_tokens".into(), written.clone());
    }
    json!({
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": total,
        "prompt_tokens_details": prompt_details,
        "completion_tokens_details": {"reasoning_tokens": field("reasoning_tokens", 0)},
    })
}

pub(super) fn add_numbers(a: &Value, b: &Value) -> Value {
    if let Some(sum) = a
        .as_i64()
        .zip(b.as_i64())
        .and_then(|(x, y)| x.checked_add(y))
    {
        return json!(sum);
    }
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => {
            serde_json::Number::from_f64(x + y).map_or(Value::Null, Value::Number)
        }
        _ => Value::Null,
    }
}

/// Splits a string into up to three pieces so clients must accumulate deltas
/// (the Python's `_pieces`, counting characters, not bytes).
pub(super) fn pieces(text: &str) -> Vec<String> {
    const N: usize = 3;
    let chars: Vec<char> = text.chars().collect();
    if chars.len() < 2 * N {
        return vec![text.to_owned()];
    }
    let k = chars.len() / N;
    (0..N)
        .map(|i| {
            let end = if i == N - 1 { chars.len() } else { (i + 1) * k };
            chars[i * k..end].iter().collect()
        })
        .collect()
}

pub(super) fn stream_reply(
    conn: &mut Conn,
    r: &Map<String, Value>,
    completion: &Completion,
    extra: &[(String, String)],
) -> io::Result<()> {
    let mut headers = owned_headers(&[
        ("Content-Type", "text/event-stream"),
        ("Cache-Control", "no-cache"),
        ("Connection", "close"),
        ("Transfer-Encoding", "chunked"),
    ]);
    headers.extend_from_slice(extra);
    write_head(&mut conn.stream, 200, &headers)?;
    let mut sse = Sse {
        out: &mut conn.stream,
        shared: conn.shared,
        delay: millis(r.get("chunk_delay_ms")).unwrap_or_default(),
    };
    if let Some(raw) = r.get("raw_stream") {
        let items = match raw {
            Value::Array(items) => items.as_slice(),
            single => std::slice::from_ref(single),
        };
        for item in items {
            match item {
                Value::String(payload) => sse.send(payload)?,
                event => sse.data(event)?,
            }
        }
    } else {
        for event in completion.events() {
            sse.data(&event)?;
        }
        sse.send("data: [DONE]\n\n")?;
    }
    sse.end()
}

/// Writes SSE payloads as HTTP chunks.
pub(super) struct Sse<'a> {
    pub(super) out: &'a mut TcpStream,
    pub(super) shared: &'a Shared,
    pub(super) delay: Duration,
}

impl Sse<'_> {
    /// Sends one payload as one chunk, flushed, then waits `chunk_delay_ms`.
    pub(super) fn send(&mut self, payload: &str) -> io::Result<()> {
        // A zero-length chunk would end the body; the Python writes nothing.
        if !payload.is_empty() {
            let mut frame = format!("{:x}\r\n", payload.len()).into_bytes();
            frame.extend_from_slice(payload.as_bytes());
            frame.extend_from_slice(b"\r\n");
            self.out.write_all(&frame)?;
            self.out.flush()?;
        }
        if !self.delay.is_zero() && !self.shared.pause(self.delay) {
            return Err(io::Error::other("fake-openai server stopped"));
        }
        Ok(())
    }

    pub(super) fn data(&mut self, event: &Value) -> io::Result<()> {
        self.send(&format!("data: {}\n\n", py_dumps(event)))
    }

    pub(super) fn end(self) -> io::Result<()> {
        self.out.write_all(b"0\r\n\r\n")?;
        self.out.flush()
    }
}
