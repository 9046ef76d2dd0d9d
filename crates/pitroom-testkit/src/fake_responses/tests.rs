use super::*;
use std::io::{Read, Write};
use std::net::TcpStream;

fn post(server: &FakeResponses, body: &Value) -> (u16, String) {
    let out = http::post_raw(
        server.port(),
        "/v1/responses",
        "content-type: application/json\r\n",
        body,
    );
    let status = out[9..12].parse().unwrap();
    (status, out)
}

fn user(text: &str) -> Value {
    json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
}

fn script() -> Value {
    json!({"scenarios": {
        "default": [{"shell": "grep -n add calc.py"}, {"text": "at {{workdir}}/calc.py:1"}],
        "err429": [[{"error": 429, "headers": {"retry-after": "0"}}, {"text": "recovered"}]],
        "fail": [{"failed": {"code": "rate_limit_exceeded", "message": "slow down"}}],
    }})
}

#[test]
fn steps_follow_the_conversation_and_the_shell_tool_offered() {
    let server = FakeResponses::start(script()).unwrap();
    let env = user("<environment_context>\n  <cwd>/w/repo</cwd>\n</environment_context>");
    let tools = json!([{"type": "function", "name": "exec_command"}]);
    let (status, out) = post(
        &server,
        &json!({"input": [env.clone(), user("where?")], "tools": tools}),
    );
    assert_eq!(status, 200);
    assert!(out.contains(r#"\"cmd\":\"grep -n add calc.py\""#), "{out}");
    assert!(out.contains("response.completed"), "{out}");
    let call =
        json!({"type": "function_call", "name": "exec_command", "call_id": "c", "arguments": "{}"});
    let result = json!({"type": "function_call_output", "call_id": "c", "output": "1:def add"});
    let (_, out) = post(
        &server,
        &json!({"input": [env, user("where?"), call, result], "tools": tools}),
    );
    assert!(out.contains("at /w/repo/calc.py:1"), "{out}");
    let steps: Vec<u64> = server
        .model_requests()
        .iter()
        .map(|r| r["step"].as_u64().unwrap())
        .collect();
    assert_eq!(steps, vec![0, 1]);
}

#[test]
fn a_step_list_scripts_retries_and_errors_carry_headers() {
    let server = FakeResponses::start(script()).unwrap();
    let body = json!({"input": [user("go scenario:err429")]});
    let (status, out) = post(&server, &body);
    assert_eq!(status, 429);
    assert!(out.to_lowercase().contains("retry-after: 0"), "{out}");
    assert!(out.contains("rate_limit_exceeded"), "{out}");
    let (status, out) = post(&server, &body);
    assert_eq!(status, 200);
    assert!(out.contains("recovered"), "{out}");
}

#[test]
fn response_failed_replaces_completed() {
    let server = FakeResponses::start(script()).unwrap();
    let (_, out) = post(&server, &json!({"input": [user("scenario:fail")]}));
    assert!(
        out.contains("response.failed") && out.contains("slow down"),
        "{out}"
    );
    assert!(!out.contains("response.completed"), "{out}");
}

#[test]
fn unknown_routes_are_404_and_logged() {
    let server = FakeResponses::start(script()).unwrap();
    let mut s = TcpStream::connect(("127.0.0.1", server.port())).unwrap();
    s.write_all(b"GET /nope HTTP/1.1\r\nhost: x\r\n\r\n")
        .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    assert!(out.starts_with("HTTP/1.1 404"), "{out}");
    assert_eq!(server.requests()[0]["kind"], "other");
}

#[test]
fn tool_search_is_called_the_way_it_is_offered_and_the_loaded_tool_in_its_namespace() {
    let script = json!({"scenarios": {"default": [
        {"tool_search": "pitroom run"},
        {"tool_calls": [{"name": "pitroom_run", "arguments": {"task": "t"}}]},
    ]}});
    let server = FakeResponses::start(script).unwrap();
    let tools = json!([{"type": "tool_search", "execution": "client"}]);
    let (_, out) = post(&server, &json!({"input": [user("go")], "tools": tools}));
    assert!(out.contains(r#""type":"tool_search_call""#), "{out}");
    assert!(out.contains(r#""execution":"client""#), "{out}");
    assert!(out.contains(r#""query":"pitroom run""#), "{out}");
    let search = json!({"type": "tool_search_call", "call_id": "s", "execution": "client", "arguments": {"query": "pitroom run"}});
    let loaded = json!({"type": "tool_search_output", "call_id": "s", "execution": "client", "status": "completed",
        "tools": [{"type": "namespace", "name": "mcp__pitroom", "tools": [{"type": "function", "name": "pitroom_run"}]}]});
    let (_, out) = post(
        &server,
        &json!({"input": [user("go"), search, loaded], "tools": tools}),
    );
    assert!(out.contains(r#""namespace":"mcp__pitroom""#), "{out}");
    assert!(out.contains(r#""name":"pitroom_run""#), "{out}");
    let steps: Vec<u64> = server
        .model_requests()
        .iter()
        .map(|r| r["step"].as_u64().unwrap())
        .collect();
    assert_eq!(
        steps,
        vec![0, 1],
        "a tool search is a model reply of its own"
    );
}
