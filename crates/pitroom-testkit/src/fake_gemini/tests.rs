use super::*;

fn post(server: &FakeGemini, path: &str, body: &Value) -> String {
    crate::http::post_raw(
        server.port(),
        path,
        "content-type: application/json\r\nconnection: close\r\n",
        body,
    )
}

fn turn(role: &str, text: &str) -> Value {
    json!({"role": role, "parts": [{"text": text}]})
}

fn tools() -> Value {
    json!([{"functionDeclarations": [{"name": "read_file"}]}])
}

#[test]
fn steps_follow_the_model_turns_after_the_last_user_text() {
    let server = FakeGemini::start(json!({"scenarios": {"default": [
        {"tool_calls": [{"name": "read_file", "arguments": {"file_path": "{{workdir}}/a.rs"}}]},
        {"text": "done", "usage": {"prompt": 5, "candidates": 2}}
    ]}}))
    .unwrap();
    let first = json!({"contents": [turn("user", "I'm currently working in the directory: /r/x\nq")], "tools": tools()});
    let out = post(
        &server,
        "/v1beta/models/m:streamGenerateContent?alt=sse",
        &first,
    );
    assert!(
        out.contains(r#""functionCall":{"name":"read_file","args":{"file_path":"/r/x/a.rs"}}"#),
        "{out}"
    );
    let second = json!({"contents": [
        turn("user", "I'm currently working in the directory: /r/x\nq"),
        {"role": "model", "parts": [{"functionCall": {"name": "read_file", "args": {}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "read_file", "response": {}}}]}
    ], "tools": tools()});
    let out = post(
        &server,
        "/v1beta/models/m:streamGenerateContent?alt=sse",
        &second,
    );
    assert!(
        out.contains(r#""text":"done""#) && out.contains(r#""promptTokenCount":5"#),
        "{out}"
    );
    assert_eq!(server.model_requests().len(), 2);
}

#[test]
fn errors_carry_googles_status_and_side_calls_get_json() {
    let server = FakeGemini::start(
        json!({"scenarios": {"err": [{"error": 429, "headers": {"retry-after": "1"}}]}}),
    )
    .unwrap();
    let out = post(
        &server,
        "/v1beta/models/m:streamGenerateContent",
        &json!({"contents": [turn("user", "x scenario:err")], "tools": tools()}),
    );
    assert!(out.starts_with("HTTP/1.1 429"), "{out}");
    assert!(
        out.contains("RESOURCE_EXHAUSTED") && out.contains("retry-after: 1"),
        "{out}"
    );
    let side = json!({"contents": [turn("user", "x")], "generationConfig": {"responseMimeType": "application/json",
        "responseJsonSchema": {"type": "object", "properties": {"next_speaker": {"type": "string"}}}}});
    let out = post(&server, "/v1beta/models/m:generateContent", &side);
    assert!(out.contains(r#"next_speaker\":\"user"#), "{out}");
    assert!(server.model_requests().len() == 1);
}

#[test]
fn a_resumed_turn_with_the_unanswered_prompt_plays_the_new_prompts_scenario() {
    // Gemini CLI resuming a session stopped mid-turn: both prompts in one user turn, oldest first.
    let resumed = [json!({"role": "user", "parts": [
        {"text": "first wait scenario:hang"},
        {"text": "Where can divide fail? scenario:default"}
    ]})];
    assert_eq!(scenario_in(&resumed).as_deref(), Some("default"));
    let one_text = [turn("user", "wait scenario:hang\n\nthen scenario:edit")];
    assert_eq!(scenario_in(&one_text).as_deref(), Some("edit"));
    let earlier_turn_names_it = [
        turn("user", "scenario:edit please"),
        json!({"role": "model", "parts": [{"text": "ok"}]}),
        turn("user", "and now without a tag"),
    ];
    assert_eq!(scenario_in(&earlier_turn_names_it).as_deref(), Some("edit"));
}
