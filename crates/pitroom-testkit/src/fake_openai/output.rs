//! HTTP output, and JSON written as Python writes it.

use super::*;

pub(super) fn owned_headers(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

pub(super) fn write_head(
    out: &mut impl Write,
    status: u16,
    headers: &[(String, String)],
) -> io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {status} {}\r\nServer: fake-openai/1.0\r\n",
        reason(status)
    );
    // Script-supplied headers must not be able to break the framing.
    let clean = |s: &str| s.replace(['\r', '\n'], " ");
    for (name, value) in headers {
        head.push_str(&format!("{}: {}\r\n", clean(name), clean(value)));
    }
    head.push_str("\r\n");
    out.write_all(head.as_bytes())
}

pub(super) fn send_body(
    out: &mut TcpStream,
    status: u16,
    content_type: &str,
    body: &[u8],
    extra: &[(String, String)],
    close: bool,
) -> io::Result<()> {
    let length = body.len().to_string();
    let mut headers = owned_headers(&[("Content-Type", content_type), ("Content-Length", &length)]);
    if close {
        headers.push(("Connection".into(), "close".into()));
    }
    headers.extend_from_slice(extra);
    let mut bytes = Vec::with_capacity(256 + body.len());
    write_head(&mut bytes, status, &headers)?;
    bytes.extend_from_slice(body);
    out.write_all(&bytes)?;
    out.flush()
}

pub(super) fn send_json(
    out: &mut TcpStream,
    status: u16,
    value: &Value,
    extra: &[(String, String)],
    close: bool,
) -> io::Result<()> {
    let body = py_dumps(value);
    send_body(
        out,
        status,
        "application/json",
        body.as_bytes(),
        extra,
        close,
    )
}

pub(super) fn send_bad_request(out: &mut TcpStream, why: &str) -> io::Result<()> {
    let error = json!({"error": {"message": format!("bad request: {why}"),
                                 "type": "invalid_request_error"}});
    send_json(out, 400, &error, &[], true)
}

/// JSON text exactly as Python's `json.dumps` writes it (`", "` and `": "`
/// separators, non-ASCII escaped), so bodies that clients echo back in error
/// messages (OpenCode's `responseBody`) read the same as with the Python fake.
pub(super) fn py_dumps(value: &Value) -> String {
    let mut out = String::new();
    write_py_json(&mut out, value);
    out
}

pub(super) fn write_py_json(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => write_py_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_py_json(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_py_string(out, key);
                out.push_str(": ");
                write_py_json(out, item);
            }
            out.push('}');
        }
    }
}

pub(super) fn write_py_string(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
    }
    out.push('"');
}

pub(super) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

pub(super) fn unix_time() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Random-looking lowercase hex for ids (std's randomly seeded hasher stands
/// in for a random number generator, which is not a dependency here).
pub(super) fn random_hex(len: usize) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut out = String::with_capacity(len + 16);
    while out.len() < len {
        let mut hasher = RandomState::new().build_hasher();
        hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
        hasher.write_u128(
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        out.push_str(&format!("{:016x}", hasher.finish()));
    }
    out.truncate(len);
    out
}
