//! The output items of a scripted reply: reasoning, shell and `apply_patch` calls in the shape
//! of the tools the request offers, function calls (namespaced when Codex loaded the tool
//! through its tool search), `tool_search` calls, verbatim items and the assistant message.

use serde_json::{json, Map, Value};

use crate::{http, script};

/// The items of reply `r` to a request with `body`, in the order a model sends them.
pub(super) fn output_items(r: &Map<String, Value>, body: &Value) -> Vec<Value> {
    let mut items = Vec::new();
    if let Some(text) = r.get("reasoning").and_then(Value::as_str) {
        items.push(json!({"type": "reasoning", "id": format!("rs_{}", http::random_hex(12)),
            "summary": [{"type": "summary_text", "text": text}], "content": null, "encrypted_content": null}));
    }
    if let Some(cmd) = r.get("shell").and_then(Value::as_str) {
        items.push(shell_call(cmd, body));
    }
    if let Some(patch) = r.get("apply_patch").and_then(Value::as_str) {
        items.push(patch_call(patch, body));
    }
    if let Some(query) = r.get("tool_search").and_then(Value::as_str) {
        items.push(tool_search_call(query, body));
    }
    let namespaces = loaded_namespaces(body);
    for call in r
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        items.push(function_call(call, &namespaces));
    }
    items.extend(
        r.get("items")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .cloned(),
    );
    if let Some(text) = r.get("text") {
        items.push(json!({"type": "message", "id": format!("msg_{}", http::random_hex(12)),
            "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": script::value_text(text), "annotations": []}]}));
    }
    items
}

fn new_call_id() -> String {
    format!("call_{}", http::random_hex(12))
}

/// A function call as scripted (`name`, `arguments`, optional `namespace`). Without a
/// `namespace`, a tool the request's conversation loaded through `tool_search` is called in
/// the namespace it was loaded in, as Codex names it.
fn function_call(call: &Value, namespaces: &Map<String, Value>) -> Value {
    let call_id = new_call_id();
    let arguments = match &call["arguments"] {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let mut item = json!({"type": "function_call", "id": format!("fc_{call_id}"), "call_id": call_id,
        "name": call["name"], "arguments": arguments, "status": "completed"});
    let namespace = call.get("namespace").cloned().or_else(|| {
        call["name"]
            .as_str()
            .and_then(|n| namespaces.get(n).cloned())
    });
    if let Some(namespace) = namespace {
        item["namespace"] = namespace;
    }
    item
}

/// Tool name → namespace, for every namespaced tool the request offers or a `tool_search_output`
/// in its input loaded.
fn loaded_namespaces(body: &Value) -> Map<String, Value> {
    let offered = body["tools"].as_array().into_iter().flatten();
    let searched = body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| item["type"] == "tool_search_output")
        .flat_map(|item| item["tools"].as_array().into_iter().flatten());
    let mut names = Map::new();
    for namespace in offered.chain(searched).filter(|t| t["type"] == "namespace") {
        for tool in namespace["tools"].as_array().into_iter().flatten() {
            if let Some(name) = tool["name"].as_str() {
                names.insert(name.to_string(), namespace["name"].clone());
            }
        }
    }
    names
}

/// A call of the tool search the request offers: Codex's client-executed `tool_search` tool
/// (type `tool_search`) gets a `tool_search_call` item; a function of that name a function call.
fn tool_search_call(query: &str, body: &Value) -> Value {
    let call_id = new_call_id();
    let arguments = json!({"query": query});
    let offered = offered_tools(body);
    if offered
        .get("tool_search")
        .is_some_and(|t| t["type"] == "function")
    {
        return json!({"type": "function_call", "id": format!("fc_{call_id}"), "call_id": call_id,
            "name": "tool_search", "arguments": arguments.to_string(), "status": "completed"});
    }
    let execution = offered
        .get("tool_search")
        .and_then(|t| t["execution"].as_str())
        .unwrap_or("client")
        .to_string();
    json!({"type": "tool_search_call", "id": format!("tsc_{call_id}"), "call_id": call_id,
        "execution": execution, "arguments": arguments, "status": "completed"})
}

/// The tools a request offers, by name (or by type for unnamed built-ins).
fn offered_tools(body: &Value) -> Map<String, Value> {
    let mut names = Map::new();
    for tool in body["tools"].as_array().into_iter().flatten() {
        let name = tool["name"]
            .as_str()
            .or_else(|| tool["function"]["name"].as_str())
            .or_else(|| tool["type"].as_str());
        if let Some(name) = name {
            names.insert(name.to_string(), tool.clone());
        }
    }
    names
}

/// A call of whichever shell tool the request offers, in its argument shape.
fn shell_call(cmd: &str, body: &Value) -> Value {
    let names = offered_tools(body);
    let call_id = new_call_id();
    let name = ["exec_command", "shell_command", "shell", "local_shell"]
        .into_iter()
        .find(|n| names.contains_key(*n))
        .unwrap_or("shell");
    let arguments = match name {
        "exec_command" => json!({"cmd": cmd}),
        "shell_command" => json!({"command": cmd}),
        "local_shell" => {
            return json!({"type": "local_shell_call", "id": format!("lsh_{call_id}"), "call_id": call_id,
                "status": "completed", "action": {"type": "exec", "command": ["bash", "-lc", cmd]}});
        }
        _ => json!({"command": ["bash", "-lc", cmd]}),
    };
    json!({"type": "function_call", "id": format!("fc_{call_id}"), "call_id": call_id, "name": name,
        "arguments": arguments.to_string(), "status": "completed"})
}

fn patch_call(patch: &str, body: &Value) -> Value {
    let names = offered_tools(body);
    let call_id = new_call_id();
    if names
        .get("apply_patch")
        .is_some_and(|t| t["type"] == "custom")
    {
        return json!({"type": "custom_tool_call", "id": format!("ctc_{call_id}"), "call_id": call_id,
            "name": "apply_patch", "input": patch, "status": "completed"});
    }
    json!({"type": "function_call", "id": format!("fc_{call_id}"), "call_id": call_id, "name": "apply_patch",
        "arguments": json!({"input": patch}).to_string(), "status": "completed"})
}
