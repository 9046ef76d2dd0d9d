//! Tool schemas every client accepts: generated from the argument types, then stripped of what
//! some clients reject (Gemini CLI refuses `$schema` and `["string", "null"]` type arrays).

use std::sync::Arc;

use rmcp::model::JsonObject;
use serde_json::Value;

/// The input or output schema of `T`, flattened for strict clients.
pub fn for_type<T: schemars::JsonSchema>() -> Arc<JsonObject> {
    let settings = schemars::generate::SchemaSettings::draft2020_12().with(|s| {
        s.inline_subschemas = true;
    });
    let schema = settings.into_generator().into_root_schema_for::<T>();
    let mut value = serde_json::to_value(schema).unwrap_or(Value::Null);
    simplify(&mut value);
    if let Value::Object(map) = &mut value {
        map.remove("$schema");
        map.remove("title");
        map.remove("description");
    }
    match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    }
}

#[cfg(test)]
/// The output schema of `T`: the same shape without descriptions or required lists (the tool's description and
/// the field names say enough, and every byte of a tool list costs the host's context).
pub fn output_for<T: schemars::JsonSchema>() -> Arc<JsonObject> {
    let mut value = Value::Object((*for_type::<T>()).clone());
    strip_descriptions(&mut value);
    match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    }
}

#[cfg(test)]
fn strip_descriptions(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.remove("description");
            map.remove("required");
            map.values_mut().for_each(strip_descriptions);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_descriptions),
        _ => {}
    }
}

/// The output schema of `pitroom_run`, `pitroom_wait` and `pitroom_review`, by hand: the
/// top-level shape with each run an object (its fields are the ones `RunView` documents and
/// the text repeats), because the tool list's size is paid for in every host's context.
pub fn runs_output() -> Arc<JsonObject> {
    let value = serde_json::json!({
        "type": "object",
        "properties": {
            "runs": {"type": "array"},
            "group": {"type": "string"},
            "finished": {"type": "integer"},
            "active": {"type": "integer"},
            "next": {"type": "object"},
            "report": {"type": "string"}
        }
    });
    match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    }
}

/// `"type": ["string", "null"]` → `"type": "string"` (absence already means null), recursively.
fn simplify(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(Value::Array(types)) = map.get("type") {
                let concrete: Vec<Value> = types
                    .iter()
                    .filter(|t| t.as_str() != Some("null"))
                    .cloned()
                    .collect();
                if concrete.len() == 1 {
                    map.insert("type".into(), concrete[0].clone());
                }
            }
            if let Some(Value::Array(options)) = map.get("enum") {
                let kept: Vec<Value> = options.iter().filter(|o| !o.is_null()).cloned().collect();
                map.insert("enum".into(), Value::Array(kept));
            }
            map.remove("format");
            // Bounds and defaults the field names already imply cost context and say nothing.
            map.remove("minimum");
            if map.get("default").is_some_and(|d| {
                d.is_null() || d == &Value::Bool(false) || d == &Value::Array(vec![])
            }) {
                map.remove("default");
            }
            for v in map.values_mut() {
                simplify(v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(simplify),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Example {
        /// A required name.
        name: String,
        maybe: Option<String>,
        #[serde(default)]
        many: Vec<String>,
        #[serde(default)]
        flag: bool,
        count: Option<u32>,
    }

    #[test]
    fn schemas_have_no_dialect_marker_and_no_nullable_type_arrays() {
        let schema = Value::Object((*for_type::<Example>()).clone());
        let text = schema.to_string();
        assert!(!text.contains("$schema"), "{text}");
        assert!(!text.contains("\"null\""), "{text}");
        assert!(!text.contains("default"), "{text}");
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["properties"]["maybe"]["type"], "string");
        assert_eq!(schema["properties"]["count"]["type"], "integer");
        assert_eq!(schema["required"], serde_json::json!(["name"]));
    }

    #[test]
    fn the_runs_output_schema_names_every_top_level_field_of_runs_result() {
        let full = Value::Object((*output_for::<crate::render::RunsResult>()).clone());
        let compact = Value::Object((*runs_output()).clone());
        let names = |v: &Value| {
            v["properties"]
                .as_object()
                .map(|m| m.keys().cloned().collect::<Vec<_>>())
                .unwrap_or_default()
        };
        let (mut a, mut b) = (names(&full), names(&compact));
        a.sort();
        b.sort();
        assert_eq!(a, b);
    }

    #[test]
    fn output_schemas_carry_no_descriptions() {
        let schema = Value::Object((*output_for::<Example>()).clone());
        assert!(!schema.to_string().contains("description"), "{schema}");
        assert_eq!(schema["properties"]["name"]["type"], "string");
    }
}
