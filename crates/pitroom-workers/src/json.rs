//! Small helpers over `serde_json` values that every adapter needs: reading a field of a CLI's
//! event by its path, the text of a model message's content, and deep-merging Pitroom's settings
//! over a user's.

use serde_json::Value;

/// The string at `path` (object keys, outermost first), if every step exists.
pub(crate) fn str_at<'a>(value: &'a Value, path: &[&str]) -> Option<&'a str> {
    at(value, path).and_then(Value::as_str)
}

/// The unsigned number at `path`, 0 when a step is missing or the value is not one (token
/// counts a CLI left out count as none).
pub(crate) fn u64_at(value: &Value, path: &[&str]) -> u64 {
    at(value, path).and_then(Value::as_u64).unwrap_or(0)
}

fn at<'a>(value: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(value, |v, key| v.get(key))
}

/// The text of a model message's `content`: one reading, shared with the fake model servers and
/// the demo's (see `pitroom-script`).
pub use pitroom_script::content_text;

/// Deep merge: objects merge key by key, anything else is replaced.
pub(crate) fn merge(base: &mut Value, overlay: Value) {
    match (base, overlay) {
        (Value::Object(base), Value::Object(overlay)) => {
            for (k, v) in overlay {
                match base.get_mut(&k) {
                    Some(existing) => merge(existing, v),
                    None => {
                        base.insert(k, v);
                    }
                }
            }
        }
        (base, overlay) => *base = overlay,
    }
}
