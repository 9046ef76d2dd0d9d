use std::io::Read;
use std::time::Instant;

use super::*;

/// A parsed HTTP reply, as a raw client sees it.
struct Reply {
    status: u16,
    headers: HashMap<String, String>,
    body: Vec<u8>,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("reply body is JSON")
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }

    /// The `data:` payloads of an SSE body; fails on anything else.
    fn events(&self) -> Vec<String> {
        let text = String::from_utf8(self.body.clone()).unwrap();
        assert!(text.ends_with("\n\n"), "SSE body ends an event: {text:?}");
        text.split("\n\n")
            .filter(|event| !event.is_empty())
            .map(|event| {
                let data = event.strip_prefix("data: ");
                data.unwrap_or_else(|| panic!("not an SSE data event: {event:?}"))
                    .to_owned()
            })
            .collect()
    }

    /// The JSON chunks of an SSE body, checking it ends with `[DONE]`.
    fn chunks(&self) -> Vec<Value> {
        let mut events = self.events();
        assert_eq!(events.pop().as_deref(), Some("[DONE]"));
        events
            .iter()
            .map(|e| serde_json::from_str(e).expect("chunk is JSON"))
            .collect()
    }

    /// The concatenated `delta.content` of a streamed reply.
    fn streamed_text(&self) -> String {
        self.chunks()
            .iter()
            .filter_map(|c| {
                c["choices"][0]["delta"]["content"]
                    .as_str()
                    .map(str::to_owned)
            })
            .collect()
    }
}

fn parse_reply(all: &[u8]) -> Reply {
    let split = all
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("reply has a head");
    let head = String::from_utf8_lossy(&all[..split]);
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap();
    let status = status_line.split(' ').nth(1).unwrap().parse().unwrap();
    let headers: HashMap<String, String> = lines
        .map(|line| {
            let (name, value) = line.split_once(':').unwrap();
            (name.to_ascii_lowercase(), value.trim().to_owned())
        })
        .collect();
    let rest = &all[split + 4..];
    let body = if headers
        .get("transfer-encoding")
        .is_some_and(|v| v == "chunked")
    {
        dechunk(rest)
    } else {
        let length: usize = headers["content-length"].parse().unwrap();
        assert_eq!(rest.len(), length, "body matches Content-Length");
        rest.to_vec()
    };
    Reply {
        status,
        headers,
        body,
    }
}

/// Decodes a chunked body, insisting on the `0\r\n\r\n` terminator.
fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    loop {
        let eol = data.windows(2).position(|w| w == b"\r\n").unwrap();
        let size = usize::from_str_radix(std::str::from_utf8(&data[..eol]).unwrap(), 16).unwrap();
        let chunk = &data[eol + 2..];
        if size == 0 {
            assert_eq!(chunk, b"\r\n", "chunked body ends with the terminator");
            return body;
        }
        body.extend_from_slice(&chunk[..size]);
        assert_eq!(&chunk[size..size + 2], b"\r\n");
        data = &chunk[size + 2..];
    }
}

fn connect(port: u16) -> TcpStream {
    let stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream
}

/// Sends raw bytes on a new connection and reads the reply up to EOF.
fn exchange(port: u16, raw: &[u8]) -> Reply {
    let mut stream = connect(port);
    stream.write_all(raw).unwrap();
    let mut all = Vec::new();
    stream.read_to_end(&mut all).unwrap();
    parse_reply(&all)
}

fn request(port: u16, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Reply {
    let mut raw = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\
         Content-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        raw.push_str(&format!("{name}: {value}\r\n"));
    }
    raw.push_str("\r\n");
    let mut bytes = raw.into_bytes();
    bytes.extend_from_slice(body);
    exchange(port, &bytes)
}

/// Sends a chat request (`hi`) on a new connection, head then body, and leaves the reply
/// unread.
fn send_hi(port: u16) -> TcpStream {
    let mut stream = connect(port);
    let body = chat(vec![user("hi")]).to_string();
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body.as_bytes()).unwrap();
    stream
}

/// The `key` of each logged request.
fn logged(requests: &[Value], key: &str) -> Vec<Value> {
    requests.iter().map(|r| r[key].clone()).collect()
}

fn post_chat(server: &FakeOpenAi, body: &Value) -> Reply {
    let headers = [("Content-Type", "application/json")];
    let body = body.to_string();
    request(
        server.port(),
        "POST",
        "/v1/chat/completions",
        &headers,
        body.as_bytes(),
    )
}

fn system(text: &str) -> Value {
    json!({"role": "system", "content": text})
}

fn user(text: &str) -> Value {
    json!({"role": "user", "content": text})
}

fn assistant() -> Value {
    json!({"role": "assistant", "content": "", "tool_calls": [{"id": "call_1",
           "type": "function", "function": {"name": "read", "arguments": "{}"}}]})
}

fn tool_result() -> Value {
    json!({"role": "tool", "tool_call_id": "call_1", "content": "file contents"})
}

/// A request shaped like OpenCode's: tools, streaming, usage requested.
fn chat(messages: Vec<Value>) -> Value {
    json!({
        "model": "fake-model",
        "messages": messages,
        "tools": [{"type": "function", "function": {"name": "read", "parameters": {}}}],
        "tool_choice": "auto",
        "stream": true,
        "stream_options": {"include_usage": true},
    })
}

fn start(script: Value) -> FakeOpenAi {
    FakeOpenAi::start(script).unwrap()
}

#[test]
fn scenario_comes_from_the_latest_user_message_that_names_one() {
    let server = start(json!({"scenarios": {
        "default": [{"text": "default reply"}],
        "alpha": [{"text": "alpha reply"}],
        "beta.2": [{"text": "beta reply"}],
    }}));
    let plain = chat(vec![user("hello")]);
    assert_eq!(post_chat(&server, &plain).streamed_text(), "default reply");
    let switched = chat(vec![
        user("go scenario:alpha"),
        user("follow-up scenario=beta.2!"),
    ]);
    assert_eq!(post_chat(&server, &switched).streamed_text(), "beta reply");
    let untagged_follow_up = chat(vec![user("scenario:alpha"), user("no tag here")]);
    assert_eq!(
        post_chat(&server, &untagged_follow_up).streamed_text(),
        "alpha reply"
    );
    let unknown = chat(vec![user("scenario:nope")]);
    assert_eq!(
        post_chat(&server, &unknown).streamed_text(),
        "fake-openai: unknown scenario nope"
    );
    let scenarios = logged(&server.chat_requests(), "scenario");
    assert_eq!(
        scenarios,
        [
            json!("default"),
            json!("beta.2"),
            json!("alpha"),
            json!("nope")
        ]
    );
}

#[test]
fn step_index_counts_assistant_messages_after_the_last_user_message() {
    let server = start(json!({"scenarios": {"default": [
        {"text": "step zero"}, {"text": "step one"}, {"text": "step two"},
    ]}}));
    let mut messages = vec![system("sys"), user("first prompt")];
    let mut texts = Vec::new();
    for _ in 0..4 {
        texts.push(post_chat(&server, &chat(messages.clone())).streamed_text());
        messages.extend([assistant(), tool_result()]);
    }
    // A follow-up prompt in the same session starts again at step 0.
    messages.push(user("second prompt"));
    texts.push(post_chat(&server, &chat(messages)).streamed_text());
    assert_eq!(
        texts,
        ["step zero", "step one", "step two", "step two", "step zero"]
    );
    let steps = logged(&server.chat_requests(), "step");
    assert_eq!(steps, [json!(0), json!(1), json!(2), json!(3), json!(0)]);
}

#[test]
fn step_list_walks_through_retries_then_repeats_its_last_entry() {
    let server = start(json!({"scenarios": {"default": [[
        {"error": 429, "headers": {"retry-after": "0"}},
        {"text": "ok"},
    ]]}}));
    let request = chat(vec![user("hi")]);
    let limited = post_chat(&server, &request);
    assert_eq!(limited.status, 429);
    assert_eq!(limited.header("retry-after"), Some("0"));
    assert_eq!(
        limited.json(),
        json!({"error": {"message": "Rate limit reached for requests", "type": "rate_limit_error",
                         "param": null, "code": "rate_limit_exceeded"}})
    );
    assert_eq!(post_chat(&server, &request).streamed_text(), "ok");
    assert_eq!(post_chat(&server, &request).streamed_text(), "ok");
    let hits = logged(&server.chat_requests(), "hit");
    assert_eq!(hits, [json!(0), json!(1), json!(2)]);
}

#[test]
fn request_without_tools_gets_the_aux_reply_and_consumes_no_step() {
    let server = start(json!({
        "aux": {"text": "A fine title"},
        "scenarios": {"default": [[{"text": "first"}, {"text": "second"}]]},
    }));
    let mut title = chat(vec![system("You are a title generator"), user("hi")]);
    title.as_object_mut().unwrap().remove("tools");
    assert_eq!(post_chat(&server, &title).streamed_text(), "A fine title");
    assert_eq!(
        post_chat(&server, &chat(vec![user("hi")])).streamed_text(),
        "first"
    );
    let kinds = logged(&server.requests(), "kind");
    assert_eq!(kinds, [json!("aux"), json!("chat")]);
    assert_eq!(server.chat_requests().len(), 1);
    assert_eq!(server.chat_requests()[0]["hit"], 0);
}

#[test]
fn streamed_tool_call_argument_deltas_concatenate_to_the_scripted_json() {
    let read_args = json!({"filePath": "/a/b.py", "limit": 5, "note": "naïve ✓"});
    let bash_args = json!({"command": "echo hi"});
    let server = start(json!({"scenarios": {"default": [{"tool_calls": [
        {"name": "read", "arguments": read_args},
        {"name": "bash", "arguments": bash_args, "id": "call_fixed"},
    ]}]}}));
    let reply = post_chat(&server, &chat(vec![user("hi")]));
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("content-type"), Some("text/event-stream"));
    assert_eq!(reply.header("cache-control"), Some("no-cache"));
    let chunks = reply.chunks();
    assert_eq!(
        chunks[0]["choices"][0]["delta"],
        json!({"role": "assistant", "content": ""})
    );
    let mut calls: Vec<(String, String, String)> = Vec::new();
    for chunk in &chunks {
        assert_eq!(chunk["object"], "chat.completion.chunk");
        for delta in chunk["choices"][0]["delta"]["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let index = delta["index"].as_u64().unwrap() as usize;
            if index == calls.len() {
                calls.push(Default::default());
            }
            let call = &mut calls[index];
            if let Some(id) = delta["id"].as_str() {
                assert_eq!(delta["type"], "function");
                call.0 = id.to_owned();
            }
            if let Some(name) = delta["function"]["name"].as_str() {
                call.1 = name.to_owned();
            }
            call.2
                .push_str(delta["function"]["arguments"].as_str().unwrap());
        }
    }
    assert_eq!(calls.len(), 2);
    assert!(
        calls[0].0.starts_with("call_") && calls[0].0.len() == 25,
        "{}",
        calls[0].0
    );
    assert_eq!(
        (
            calls[0].1.as_str(),
            calls[1].0.as_str(),
            calls[1].1.as_str()
        ),
        ("read", "call_fixed", "bash")
    );
    assert_eq!(
        serde_json::from_str::<Value>(&calls[0].2).unwrap(),
        read_args
    );
    assert_eq!(
        serde_json::from_str::<Value>(&calls[1].2).unwrap(),
        bash_args
    );
    let finishes: Vec<&Value> = chunks
        .iter()
        .filter_map(|c| c["choices"].get(0).map(|choice| &choice["finish_reason"]))
        .filter(|f| !f.is_null())
        .collect();
    assert_eq!(finishes, [&json!("tool_calls")]);
    let usage_chunk = chunks.last().unwrap();
    assert_eq!(usage_chunk["choices"], json!([]));
    assert_eq!(
        usage_chunk["usage"],
        json!({"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120,
               "prompt_tokens_details": {"cached_tokens": 0},
               "completion_tokens_details": {"reasoning_tokens": 0}})
    );
}

#[test]
fn workdir_placeholder_is_taken_from_working_directory_in_the_system_prompt() {
    let server = start(
        json!({"scenarios": {"default": [{"tool_calls": [{"name": "read",
        "arguments": {"filePath": "{{workdir}}/calc.py", "url": "http://127.0.0.1:{{port}}/x"}}]}]}}),
    );
    let prompt = "You are OpenCode.\n<env>\n  Working directory: /x/y\n  Is directory a git repo: yes\n</env>";
    let mut request = chat(vec![system(prompt), user("read calc.py")]);
    request["stream"] = json!(false);
    let reply = post_chat(&server, &request).json();
    let message = &reply["choices"][0]["message"];
    let arguments: Value = serde_json::from_str(
        message["tool_calls"][0]["function"]["arguments"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    let url = format!("http://127.0.0.1:{}/x", server.port());
    assert_eq!(arguments, json!({"filePath": "/x/y/calc.py", "url": url}));
    assert_eq!(reply["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(reply["object"], "chat.completion");
}

#[test]
fn workdir_is_also_found_in_kilo_style_user_messages() {
    let messages = [
        system("no directory here"),
        json!({"role": "user", "content": [{"type": "text", "text": "<environment_details>\n<cwd> /k/repo </cwd>"}]}),
    ];
    assert_eq!(find_workdir(&messages).as_deref(), Some("/k/repo"));
    assert_eq!(cwd_tag("<cwd>/a/b</cwd>"), Some("/a/b"));
    assert_eq!(cwd_tag("<cwd>/a b</cwd>"), None);
    assert_eq!(
        workdir_in("Current working directory: /c/d\n"),
        Some("/c/d")
    );
    assert_eq!(find_workdir(&[user("nothing")]), None);
}

#[test]
fn request_log_records_method_path_headers_and_body() {
    let server = start(json!({"scenarios": {"default": [{"text": "ok"}]}}));
    let body = chat(vec![user("hi")]);
    let headers = [
        ("Content-Type", "application/json"),
        ("Authorization", "Bearer test-key"),
        ("X-Session-Id", "ses_123"),
    ];
    let encoded = body.to_string();
    request(
        server.port(),
        "POST",
        "/v1/chat/completions?x=1",
        &headers,
        encoded.as_bytes(),
    );
    let log = server.requests();
    assert_eq!(log.len(), 1);
    let entry = &log[0];
    assert_eq!(entry["method"], "POST");
    assert_eq!(entry["path"], "/v1/chat/completions?x=1");
    assert_eq!(entry["headers"]["authorization"], "Bearer test-key");
    assert_eq!(entry["headers"]["x-session-id"], "ses_123");
    assert_eq!(entry["body"], body);
    assert_eq!(
        (&entry["kind"], &entry["scenario"], &entry["step"]),
        (&json!("chat"), &json!("default"), &json!(0))
    );
    assert_eq!(entry["tool_names"], json!(["read"]));
    // The HTTP view of the log is the same list ("time" is a float that
    // serde_json may re-parse one ulp off, so it is left out).
    let without_time = |entries: Vec<Value>| -> Vec<Value> {
        entries
            .into_iter()
            .map(|mut e| {
                e.as_object_mut().unwrap().remove("time").unwrap();
                e
            })
            .collect()
    };
    let over_http = request(server.port(), "GET", "/__requests", &[], b"").json();
    let Value::Array(over_http) = over_http else {
        panic!("log is a list")
    };
    assert_eq!(without_time(over_http), without_time(log));
}

#[test]
fn reset_clears_the_log_and_the_retry_counters() {
    let server = start(json!({"scenarios": {"default": [[{"text": "one"}, {"text": "two"}]]}}));
    let request_body = chat(vec![user("hi")]);
    assert_eq!(post_chat(&server, &request_body).streamed_text(), "one");
    assert_eq!(
        request(server.port(), "POST", "/__reset", &[], b"").json(),
        json!({"ok": true})
    );
    assert!(server.requests().is_empty());
    assert_eq!(post_chat(&server, &request_body).streamed_text(), "one");
}

#[test]
fn usage_fields_map_to_openai_usage_in_the_usage_chunk() {
    let server = start(
        json!({"scenarios": {"default": [{"text": "hello", "reasoning": "thinking hard",
        "usage": {"prompt_tokens": 1000, "completion_tokens": 50, "cached_tokens": 200,
                  "reasoning_tokens": 7, "cache_write_tokens": 3}}]}}),
    );
    let reply = post_chat(&server, &chat(vec![user("hi")]));
    let chunks = reply.chunks();
    let reasoning: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["reasoning_content"].as_str())
        .collect();
    assert_eq!(reasoning, "thinking hard");
    assert_eq!(
        chunks.last().unwrap()["usage"],
        json!({"prompt_tokens": 1000, "completion_tokens": 50, "total_tokens": 1050,
               "prompt_tokens_details": {"cached_tokens": 200, "cache_write_tokens": 3},
               "completion_tokens_details": {"reasoning_tokens": 7}})
    );
}

#[test]
fn long_text_is_streamed_in_three_content_deltas() {
    let server = start(json!({"scenarios": {"default": [{"text": "divide() has no zero check"}]}}));
    let chunks = post_chat(&server, &chat(vec![user("hi")])).chunks();
    let deltas: Vec<&str> = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .filter(|d| !d.is_empty())
        .collect();
    assert_eq!(deltas, ["divide()", " has no ", "zero check"]);
    assert_eq!(pieces("short"), ["short"]);
}

#[test]
fn explicit_null_finish_reason_sends_no_finish_reason() {
    let server = start(json!({"scenarios": {
        "default": [{"text": "partial", "finish_reason": null}],
        "long": [{"text": "cut off", "finish_reason": "length"}],
    }}));
    let chunks = post_chat(&server, &chat(vec![user("hi")])).chunks();
    assert!(chunks.iter().all(|c| c["choices"]
        .get(0)
        .is_none_or(|choice| choice["finish_reason"].is_null())));
    assert!(chunks.last().unwrap()["usage"].is_object());
    let chunks = post_chat(&server, &chat(vec![user("scenario:long")])).chunks();
    assert_eq!(
        chunks[chunks.len() - 2]["choices"][0]["finish_reason"],
        "length"
    );
}

#[test]
fn error_replies_use_openai_defaults_or_the_scripted_body() {
    let server = start(json!({"scenarios": {
        "e404": [{"error": 404}],
        "e503": [{"error": 503, "error_message": "busy {{port}}"}],
        "custom": [{"error": 400, "error_body": "{\"error\": {\"message\": \"context_length_exceeded\"}}"}],
    }}));
    let mut missing = chat(vec![user("scenario:e404")]);
    missing["model"] = json!("gpt-nope");
    let reply = post_chat(&server, &missing);
    assert_eq!(reply.status, 404);
    assert_eq!(
        String::from_utf8(reply.body).unwrap(),
        "{\"error\": {\"message\": \"The model `gpt-nope` does not exist or you do not have access \
         to it.\", \"type\": \"invalid_request_error\", \"param\": null, \"code\": \"model_not_found\"}}"
    );
    let busy = post_chat(&server, &chat(vec![user("scenario:e503")]));
    assert_eq!(busy.status, 503);
    assert_eq!(
        busy.json()["error"]["message"],
        format!("busy {}", server.port())
    );
    assert_eq!(busy.json()["error"]["type"], "server_error");
    let custom = post_chat(&server, &chat(vec![user("scenario:custom")]));
    assert_eq!(custom.status, 400);
    assert_eq!(
        custom.body,
        b"{\"error\": {\"message\": \"context_length_exceeded\"}}"
    );
}

#[test]
fn raw_and_raw_stream_replies_are_sent_verbatim() {
    let server = start(json!({"scenarios": {
        "raw": [{"raw": "not json", "raw_content_type": "text/plain"}],
        "bad": [{"raw_stream": ["data: {not valid json\n\n", "", "data: [DONE]\n\n"], "chunk_delay_ms": 5}],
    }}));
    let raw = post_chat(&server, &chat(vec![user("scenario:raw")]));
    assert_eq!(
        (raw.status, raw.body.as_slice()),
        (200, b"not json".as_slice())
    );
    assert_eq!(raw.header("content-type"), Some("text/plain"));
    let bad = post_chat(&server, &chat(vec![user("scenario:bad")]));
    assert_eq!(bad.body, b"data: {not valid json\n\ndata: [DONE]\n\n");
}

#[test]
fn hang_sends_nothing_until_hang_s_passes() {
    let server = start(json!({"scenarios": {"default": [{"hang": true, "hang_s": 0.3}]}}));
    let started = Instant::now();
    let mut stream = send_hi(server.port());
    let mut all = Vec::new();
    stream.read_to_end(&mut all).unwrap();
    assert!(all.is_empty());
    assert!(started.elapsed() >= Duration::from_millis(300));
}

#[test]
fn dropping_the_server_unblocks_a_hanging_request() {
    let server = start(json!({"scenarios": {"default": [{"hang": true}]}}));
    let mut stream = send_hi(server.port());
    let deadline = Instant::now() + Duration::from_secs(5);
    while server.requests().is_empty() && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        server.chat_requests().len(),
        1,
        "the hanging request was logged"
    );
    let started = Instant::now();
    drop(server);
    let mut all = Vec::new();
    let _ = stream.read_to_end(&mut all);
    assert!(all.is_empty());
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "took {:?}",
        started.elapsed()
    );
}

#[test]
fn malformed_requests_get_400_and_the_server_keeps_serving() {
    let server = start(json!({}));
    let port = server.port();
    assert_eq!(exchange(port, b"garbage\r\n\r\n").status, 400);
    assert_eq!(
        exchange(port, b"GET / HTTP/1.1\r\nno colon\r\n\r\n").status,
        400
    );
    let bad_length = b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: lots\r\n\r\n{}";
    assert_eq!(exchange(port, bad_length).status, 400);
    let bad_chunk =
        b"POST /v1/chat/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n";
    assert_eq!(exchange(port, bad_chunk).status, 400);
    let not_json = request(port, "POST", "/v1/chat/completions", &[], b"{not json");
    assert_eq!(
        (not_json.status, &not_json.json()["error"]["message"]),
        (400, &json!("bad json"))
    );
    assert_eq!(server.requests()[0]["body"], "{not json");
    assert_eq!(
        request(port, "GET", "/__health", &[], b"").json(),
        json!({"ok": true})
    );
}

#[test]
fn chunked_request_bodies_are_accepted() {
    let server = start(json!({"scenarios": {"default": [{"text": "chunked ok"}]}}));
    let body = chat(vec![user("hi")]).to_string();
    let (a, b) = body.split_at(10);
    let raw = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n\
         {:x};ext=1\r\n{a}\r\n{:x}\r\n{b}\r\n0\r\nX-Trailer: t\r\n\r\n",
        a.len(),
        b.len()
    );
    assert_eq!(
        exchange(server.port(), raw.as_bytes()).streamed_text(),
        "chunked ok"
    );
}

#[test]
fn keep_alive_connection_serves_several_json_requests() {
    let server = start(json!({"models": ["m1", "m2"]}));
    let mut stream = connect(server.port());
    let mut received = Vec::new();
    for _ in 0..2 {
        stream
            .write_all(b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        let mut buf = [0u8; 4096];
        let n = stream.read(&mut buf).unwrap();
        received.push(parse_reply(&buf[..n]));
    }
    for reply in &received {
        let models = reply.json();
        let ids: Vec<&Value> = models["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| &m["id"])
            .collect();
        assert_eq!(ids, [&json!("m1"), &json!("m2")]);
    }
    assert_eq!(server.requests().len(), 2);
    assert_eq!(server.requests()[0]["kind"], "models");
}

#[test]
fn unknown_routes_get_a_404_json_error() {
    let server = start(json!({}));
    let get = request(server.port(), "GET", "/v1/nothing", &[], b"");
    assert_eq!(
        (get.status, get.json()["error"]["message"].clone()),
        (404, json!("not found: /v1/nothing"))
    );
    let post = request(server.port(), "POST", "/v1/embeddings", &[], b"{}");
    assert_eq!(
        post.json()["error"]["message"],
        "unknown path /v1/embeddings"
    );
    let delete = request(server.port(), "DELETE", "/v1/chat/completions", &[], b"");
    assert_eq!(delete.status, 404);
    let models = request(server.port(), "GET", "/models/", &[], b"").json();
    assert_eq!(models["data"][0]["id"], "fake-model");
}

#[test]
fn json_is_written_as_python_json_dumps_writes_it() {
    let value = json!({"a": [1, "é😀"], "b": null, "c": "q\"\\\n\u{7f}"});
    assert_eq!(
        py_dumps(&value),
        r#"{"a": [1, "\u00e9\ud83d\ude00"], "b": null, "c": "q\"\\\n\u007f"}"#
    );
}

#[test]
fn scenario_tags_match_like_the_python_regex() {
    use crate::script::scenario_tags;
    let first = |text| scenario_tags(text).next();
    assert_eq!(first("run scenario:err-429.b now"), Some("err-429.b"));
    assert_eq!(first("scenario: x scenario=y"), Some("y"));
    assert_eq!(first("no scenario here"), None);
}

#[test]
fn a_resumed_message_with_the_unanswered_prompt_plays_the_new_prompts_scenario() {
    let merged = [json!({"role": "user", "content": [
        {"type": "text", "text": "first wait scenario:hang"},
        {"type": "text", "text": "Where can divide fail? scenario:default"}
    ]})];
    assert_eq!(scenario_named_in(&merged).as_deref(), Some("default"));
    let separate = [
        json!({"role": "user", "content": "first wait scenario:hang"}),
        json!({"role": "user", "content": "Where can divide fail? scenario:default"}),
        json!({"role": "assistant", "content": "looking"}),
    ];
    assert_eq!(scenario_named_in(&separate).as_deref(), Some("default"));
}
