//! A scripted model's turn counting, shared by the test kit's fake Anthropic server and
//! `pitroom demo`'s model server: both answer a request with the step of their script it has
//! reached, told by the assistant turns since the latest user message. The product's binary must
//! not link the whole test kit, and the two servers must not count differently, so the rule
//! lives here, in a crate that depends on `serde_json` alone. So does the one reading of a model
//! message's text, which the fakes, the demo's server and the adapters (through
//! `pitroom-workers`) share.

use serde_json::Value;

/// The text of a model message's `content` (the Anthropic and OpenAI shapes): a string as it
/// is, or the `text` of each part joined by newlines, parts without one left out; anything else
/// has none.
pub fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Whether a user message only carries tool results back (Anthropic's shape: `tool_result`
/// blocks in a user turn): it continues the step sequence rather than starting a new task.
pub fn is_tool_results(message: &Value) -> bool {
    message["content"]
        .as_array()
        .is_some_and(|blocks| blocks.iter().any(|b| b["type"] == "tool_result"))
}

/// The step a conversation is at: the number of assistant turns since the latest user message
/// that is not only tool results (0 for a new task, and for none at all).
pub fn step_index(messages: &[Value]) -> usize {
    let start = messages
        .iter()
        .rposition(|m| m["role"] == "user" && !is_tool_results(m))
        .map_or(0, |at| at + 1);
    messages[start..]
        .iter()
        .filter(|m| m["role"] == "assistant")
        .count()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn tool_results_continue_the_step_and_a_new_task_restarts_it() {
        let task = json!({"role": "user", "content": "fix it"});
        let call = json!({"role": "assistant", "content": [{"type": "tool_use", "id": "t1"}]});
        let result =
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1"}]});
        assert_eq!(step_index(&[]), 0);
        assert_eq!(step_index(std::slice::from_ref(&task)), 0);
        assert_eq!(step_index(&[task.clone(), call.clone(), result.clone()]), 1);
        assert_eq!(
            step_index(&[
                task.clone(),
                call.clone(),
                result.clone(),
                call.clone(),
                result
            ]),
            2
        );
        assert_eq!(step_index(&[task.clone(), call, task]), 0);
        assert!(!is_tool_results(
            &json!({"role": "user", "content": "text"})
        ));
    }
}
