//! The HTTP plumbing and script walking shared by the Responses and Anthropic fakes: a small
//! HTTP/1.1 server (one thread per connection, `Connection: close` on every reply) that can
//! stream SSE with pauses, drop a stream or hang it, and the scripted server on it. The Gemini
//! and OpenAI fakes, which keep servers of their own, take the status phrases and the lock from
//! here.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

/// Blocking reads and scripted sleeps wake this often to notice a stop.
const POLL: Duration = Duration::from_millis(50);
const MAX_HEAD: usize = 64 * 1024;
const MAX_BODY: usize = 64 * 1024 * 1024;
/// How long `hang` lasts without `hang_s`.
const DEFAULT_HANG: Duration = Duration::from_secs(600);

pub(crate) type Handler = Arc<dyn Fn(&Request, u16) -> Reply + Send + Sync>;

/// Locks without panicking: a poisoned lock still holds usable test data.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The value of the header `name` (lower-case) among `headers` (names lower-cased).
pub(crate) fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// One request as received.
pub(crate) struct Request {
    pub method: String,
    pub path: String,
    /// Lower-cased names.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    pub fn path_only(&self) -> &str {
        self.path.split('?').next().unwrap_or("")
    }

    /// The body as JSON; `Null` when empty or not JSON.
    pub fn json_body(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    /// The log entry every fake keeps: method, path, headers and body (parsed when JSON).
    pub fn log_entry(&self, body: &Value) -> Value {
        let headers: Map<String, Value> = self
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect();
        let body = if body.is_null() && !self.body.is_empty() {
            Value::String(String::from_utf8_lossy(&self.body).into_owned())
        } else {
            body.clone()
        };
        json!({"method": self.method, "path": self.path, "headers": headers, "body": body,
            "kind": "other", "scenario": null, "step": null, "hit": null})
    }
}

/// A piece of a streamed body, sent after `delay`.
pub(crate) struct Chunk {
    pub delay: Duration,
    pub data: Vec<u8>,
}

impl Chunk {
    /// One server-sent event, `event: NAME` with its JSON `data`, sent after `delay`: the
    /// framing both the Responses and the Anthropic Messages streams use.
    pub(crate) fn sse(delay: Duration, event: &str, data: &Value) -> Chunk {
        Chunk {
            delay,
            data: format!("event: {event}\ndata: {data}\n\n").into_bytes(),
        }
    }
}

/// How a streamed reply ends.
pub(crate) enum StreamEnd {
    /// Close the connection (the body is delimited by the close).
    Close,
    /// Stay silent this long (or until the client leaves or the server stops), then close.
    Hang(Duration),
}

pub(crate) enum Reply {
    Body {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    },
    Stream {
        chunks: Vec<Chunk>,
        end: StreamEnd,
    },
}

impl Reply {
    pub fn text(status: u16, content_type: &str, body: String) -> Reply {
        Reply::Body {
            status,
            headers: vec![("content-type".into(), content_type.into())],
            body: body.into_bytes(),
        }
    }

    pub fn stream(chunks: Vec<Chunk>, end: StreamEnd) -> Reply {
        Reply::Stream { chunks, end }
    }
}

pub(crate) fn json_reply(status: u16, body: &Value) -> Reply {
    Reply::text(status, "application/json", body.to_string())
}

/// An error reply from a script step: `error_body` (object or raw string, else `default`),
/// `content_type` and extra `headers`.
pub(crate) fn error_reply(status: u16, r: &Map<String, Value>, default: Value) -> Reply {
    let body = match r.get("error_body") {
        Some(Value::String(raw)) => raw.clone(),
        Some(other) => other.to_string(),
        None => default.to_string(),
    };
    let content_type = r
        .get("content_type")
        .and_then(Value::as_str)
        .unwrap_or("application/json");
    let mut headers = vec![("content-type".to_string(), content_type.to_string())];
    for (k, v) in r
        .get("headers")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        headers.push((k.clone(), value_text(v)));
    }
    Reply::Body {
        status,
        headers,
        body: body.into_bytes(),
    }
}

/// Which hit of each (scenario, step) comes next, to walk step lists.
#[derive(Default)]
pub(crate) struct ScriptState {
    hits: HashMap<(String, usize), usize>,
}

impl ScriptState {
    /// The reply for `step` of `scenario` (the last step past the end; an empty map for an
    /// unknown scenario) and how many times that step was hit before.
    pub fn pick(
        &mut self,
        script: &Value,
        scenario: &str,
        step: usize,
    ) -> (Map<String, Value>, usize) {
        let Some(steps) = script["scenarios"][scenario]
            .as_array()
            .filter(|s| !s.is_empty())
        else {
            return (Map::new(), 0);
        };
        let index = step.min(steps.len() - 1);
        let counter = self.hits.entry((scenario.to_string(), index)).or_insert(0);
        let hit = *counter;
        *counter += 1;
        let reply = match &steps[index] {
            Value::Array(list) if !list.is_empty() => list[hit.min(list.len() - 1)].clone(),
            other => other.clone(),
        };
        (reply.as_object().cloned().unwrap_or_default(), hit)
    }

    /// [`ScriptState::pick`], noted in the request's log `entry` as a request of `kind` with
    /// its scenario, step and hit.
    pub fn pick_logged(
        &mut self,
        script: &Value,
        scenario: &str,
        step: usize,
        kind: &str,
        entry: &mut Value,
    ) -> Map<String, Value> {
        let (reply, hit) = self.pick(script, scenario, step);
        entry["kind"] = kind.into();
        entry["scenario"] = scenario.into();
        entry["step"] = step.into();
        entry["hit"] = hit.into();
        reply
    }
}

/// Every `scenario:NAME` (or `scenario=NAME`) tag in `text`, in order: a name is letters,
/// digits and `_.-`, and a tag with no name is none.
pub(crate) fn scenario_tags(text: &str) -> impl Iterator<Item = &str> {
    text.match_indices("scenario")
        .filter_map(move |(at, word)| {
            let rest = text[at + word.len()..].strip_prefix([':', '='])?;
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')))
                .unwrap_or(rest.len());
            (end > 0).then(|| &rest[..end])
        })
}

/// `scenario:NAME` (or `scenario=NAME`) in `text`.
pub(crate) fn scenario_tag(text: &str) -> Option<&str> {
    let start = text.find("scenario:").or_else(|| text.find("scenario="))? + "scenario:".len();
    let rest = &text[start..];
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')))
        .unwrap_or(rest.len());
    let name = rest[..end].trim_end_matches('.');
    (!name.is_empty()).then_some(name)
}

pub(crate) fn default_scenario(script: &Value) -> String {
    script["default_scenario"]
        .as_str()
        .unwrap_or("default")
        .to_string()
}

/// Replaces `{{workdir}}` and `{{port}}` in every string of `reply`.
pub(crate) fn fill_placeholders(
    reply: Map<String, Value>,
    workdir: &str,
    port: u16,
) -> Map<String, Value> {
    fn fill(value: Value, workdir: &str, port: &str) -> Value {
        match value {
            Value::String(s) => {
                Value::String(s.replace("{{workdir}}", workdir).replace("{{port}}", port))
            }
            Value::Array(items) => {
                Value::Array(items.into_iter().map(|v| fill(v, workdir, port)).collect())
            }
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .map(|(k, v)| (k, fill(v, workdir, port)))
                    .collect(),
            ),
            other => other,
        }
    }
    let port = port.to_string();
    reply
        .into_iter()
        .map(|(k, v)| (k, fill(v, workdir, &port)))
        .collect()
}

pub(crate) fn status_of(value: &Value) -> u16 {
    value
        .as_u64()
        .or_else(|| value.as_str().and_then(|s| s.parse().ok()))
        .and_then(|n| u16::try_from(n).ok())
        .unwrap_or(500)
}

/// The reply of a step scripted `raw`: that text verbatim with status 200, as
/// `raw_content_type` (default `text/event-stream`).
pub(crate) fn raw_reply(r: &Map<String, Value>) -> Option<Reply> {
    let raw = r.get("raw")?;
    let content_type = r
        .get("raw_content_type")
        .and_then(Value::as_str)
        .unwrap_or("text/event-stream");
    Some(Reply::text(200, content_type, value_text(raw)))
}

pub(crate) fn value_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

pub(crate) fn millis(value: Option<&Value>) -> Option<Duration> {
    value
        .and_then(Value::as_f64)
        .map(|ms| Duration::from_secs_f64(ms.max(0.0) / 1000.0))
}

pub(crate) fn truthy(value: &Value) -> bool {
    !matches!(value, Value::Null | Value::Bool(false))
}

pub(crate) fn hang_limit(r: &Map<String, Value>) -> Duration {
    r.get("hang_s")
        .and_then(Value::as_f64)
        .map_or(DEFAULT_HANG, |s| Duration::from_secs_f64(s.max(0.0)))
}

/// Random-looking lowercase hex, for ids.
pub(crate) fn random_hex(len: usize) -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut out = String::new();
    while out.len() < len {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(Instant::now().elapsed().as_nanos());
        out.push_str(&format!("{:016x}", h.finish()));
    }
    out.truncate(len);
    out
}

/// How a fake answers one request from its script: the reply, and the request's log entry.
pub(crate) type Handle = fn(&Value, &Mutex<ScriptState>, &Request, u16) -> (Reply, Value);

/// A running scripted fake: a [`Server`] whose every request is answered by a [`Handle`] from
/// the script and logged; dropping it stops the server.
pub(crate) struct Scripted {
    server: Server,
    log: Arc<Mutex<Vec<Value>>>,
}

impl Scripted {
    /// Starts the server `name` on 127.0.0.1 with an OS-chosen port, serving `script`.
    pub fn start(name: &str, script: Value, handle: Handle) -> io::Result<Scripted> {
        let log = Arc::new(Mutex::new(Vec::new()));
        let state = Mutex::new(ScriptState::default());
        let handler_log = Arc::clone(&log);
        let server = Server::start(
            name,
            Arc::new(move |req: &Request, port: u16| {
                let (reply, entry) = handle(&script, &state, req, port);
                lock(&handler_log).push(entry);
                reply
            }),
        )?;
        Ok(Scripted { server, log })
    }

    pub fn port(&self) -> u16 {
        self.server.port()
    }

    /// Every request so far, in order.
    pub fn requests(&self) -> Vec<Value> {
        lock(&self.log).clone()
    }

    /// The requests logged with `"kind": kind`.
    pub fn requests_of_kind(&self, kind: &str) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(|r| r["kind"] == kind)
            .collect()
    }
}

impl std::fmt::Debug for Scripted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scripted")
            .field("port", &self.port())
            .finish_non_exhaustive()
    }
}

/// A running server; dropping it stops it and cuts every open stream short.
pub(crate) struct Server {
    port: u16,
    stopping: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl Server {
    pub fn start(name: &str, handler: Handler) -> io::Result<Server> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        let port = listener.local_addr()?.port();
        let stopping = Arc::new(AtomicBool::new(false));
        let accepting = Arc::clone(&stopping);
        let accept = thread::Builder::new()
            .name(format!("{name}-accept"))
            .spawn(move || {
                for stream in listener.incoming() {
                    if accepting.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let handler = Arc::clone(&handler);
                    let stopping = Arc::clone(&accepting);
                    let _ = thread::Builder::new().spawn(move || {
                        let _ = serve(stream, &handler, port, &stopping);
                    });
                }
            })?;
        Ok(Server {
            port,
            stopping,
            accept: Some(accept),
        })
    }

    pub fn port(&self) -> u16 {
        self.port
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stopping.store(true, Ordering::SeqCst);
        // A blocking accept() only returns for a connection, so make one.
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port));
        drop(TcpStream::connect_timeout(&addr, Duration::from_secs(1)));
        if let Some(handle) = self.accept.take() {
            let _ = handle.join();
        }
    }
}

fn serve(
    mut stream: TcpStream,
    handler: &Handler,
    port: u16,
    stopping: &AtomicBool,
) -> io::Result<()> {
    stream.set_read_timeout(Some(POLL))?;
    stream.set_write_timeout(Some(Duration::from_secs(30)))?;
    let Some(request) = read_request(&mut stream, stopping)? else {
        return Ok(());
    };
    match handler(&request, port) {
        Reply::Body {
            status,
            headers,
            body,
        } => {
            write_head(&mut stream, status, &headers, Some(body.len()))?;
            stream.write_all(&body)?;
            stream.flush()?;
        }
        Reply::Stream { chunks, end } => {
            let headers = vec![
                ("content-type".to_string(), "text/event-stream".to_string()),
                ("cache-control".to_string(), "no-cache".to_string()),
            ];
            write_head(&mut stream, 200, &headers, None)?;
            stream.flush()?;
            for chunk in chunks {
                if !pause(chunk.delay, stopping, None) {
                    break;
                }
                stream.write_all(&chunk.data)?;
                stream.flush()?;
            }
            if let StreamEnd::Hang(limit) = end {
                pause(limit, stopping, Some(&mut stream));
            }
        }
    }
    let _ = stream.shutdown(Shutdown::Both);
    Ok(())
}

/// Sleeps up to `limit`; false when the server stopped (or the watched client left) first.
fn pause(limit: Duration, stopping: &AtomicBool, mut client: Option<&mut TcpStream>) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if stopping.load(Ordering::SeqCst) {
            return false;
        }
        match client.as_deref_mut() {
            // Reads time out after POLL: that is the sleep. 0 bytes: the client left.
            Some(stream) => match stream.read(&mut [0u8; 512]) {
                Ok(0) => return false,
                Ok(_) => {}
                Err(e) if is_timeout(&e) => {}
                Err(_) => return false,
            },
            None => thread::sleep(POLL.min(deadline.saturating_duration_since(Instant::now()))),
        }
    }
    true
}

fn is_timeout(err: &io::Error) -> bool {
    matches!(
        err.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

/// Reads one request; `None` when the client closed first or the server is stopping.
fn read_request(stream: &mut TcpStream, stopping: &AtomicBool) -> io::Result<Option<Request>> {
    let mut buf = Vec::new();
    let head_end = loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break end;
        }
        if buf.len() > MAX_HEAD {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "head too long"));
        }
        if !read_more(stream, &mut buf, stopping)? {
            return Ok(None);
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut rest = buf[head_end + 4..].to_vec();
    let mut lines = head.split("\r\n");
    let mut first = lines.next().unwrap_or("").split_whitespace();
    let method = first.next().unwrap_or("").to_string();
    let path = first.next().unwrap_or("/").to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let body = if header(&headers, "transfer-encoding")
        .is_some_and(|v| v.eq_ignore_ascii_case("chunked"))
    {
        read_chunked(stream, rest, stopping)?
    } else {
        let length: usize = header(&headers, "content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        if length > MAX_BODY {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "body too long"));
        }
        while rest.len() < length {
            if !read_more(stream, &mut rest, stopping)? {
                return Ok(None);
            }
        }
        rest.truncate(length);
        rest
    };
    Ok(Some(Request {
        method,
        path,
        headers,
        body,
    }))
}

fn read_chunked(
    stream: &mut TcpStream,
    mut buf: Vec<u8>,
    stopping: &AtomicBool,
) -> io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let line_end = loop {
            if let Some(p) = buf.windows(2).position(|w| w == b"\r\n") {
                break p;
            }
            if !read_more(stream, &mut buf, stopping)? {
                return Ok(body);
            }
        };
        let size_text = String::from_utf8_lossy(&buf[..line_end]).into_owned();
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "bad chunk size"))?;
        buf.drain(..line_end + 2);
        if size == 0 {
            return Ok(body);
        }
        if body.len() + size > MAX_BODY {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "body too long"));
        }
        while buf.len() < size + 2 {
            if !read_more(stream, &mut buf, stopping)? {
                return Ok(body);
            }
        }
        body.extend_from_slice(&buf[..size]);
        buf.drain(..size + 2);
    }
}

/// Reads what is available into `buf`; false at EOF or on stop.
fn read_more(stream: &mut TcpStream, buf: &mut Vec<u8>, stopping: &AtomicBool) -> io::Result<bool> {
    let mut chunk = [0u8; 16 * 1024];
    loop {
        if stopping.load(Ordering::SeqCst) {
            return Ok(false);
        }
        match stream.read(&mut chunk) {
            Ok(0) => return Ok(false),
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                return Ok(true);
            }
            Err(e) if is_timeout(&e) => {}
            Err(e) => return Err(e),
        }
    }
}

fn write_head(
    out: &mut TcpStream,
    status: u16,
    headers: &[(String, String)],
    length: Option<usize>,
) -> io::Result<()> {
    let mut head = format!("HTTP/1.1 {status} {}\r\n", reason(status));
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str(&format!("request-id: req_fake_{}\r\n", random_hex(12)));
    if let Some(n) = length {
        head.push_str(&format!("content-length: {n}\r\n"));
    }
    head.push_str("connection: close\r\n\r\n");
    out.write_all(head.as_bytes())
}

/// The reason phrase of an HTTP status line (empty for a status not listed: HTTP/1.1 allows it).
pub(crate) fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        413 => "Request Entity Too Large",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        529 => "Overloaded",
        _ => "",
    }
}

/// For the fakes' tests: posts `body` as JSON to `path` on 127.0.0.1:`port` with the request's
/// other `headers` (each ending in CRLF), and reads the raw reply to the end.
#[cfg(test)]
pub(crate) fn post_raw(port: u16, path: &str, headers: &str, body: &Value) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let payload = body.to_string();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nhost: x\r\n{headers}content-length: {}\r\n\r\n{payload}",
        payload.len()
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenario_tags_end_at_the_first_non_name_character() {
        assert_eq!(scenario_tag("do it scenario:err429, now"), Some("err429"));
        assert_eq!(scenario_tag("scenario=edit."), Some("edit"));
        assert_eq!(scenario_tag("no tag"), None);
    }

    #[test]
    fn step_lists_walk_then_repeat_their_last_entry() {
        let script = json!({"scenarios": {"s": [[{"n": 1}, {"n": 2}]]}});
        let mut state = ScriptState::default();
        let picks: Vec<Value> = (0..3)
            .map(|_| state.pick(&script, "s", 5).0["n"].clone())
            .collect();
        assert_eq!(picks, vec![json!(1), json!(2), json!(2)]);
        assert!(state.pick(&script, "missing", 0).0.is_empty());
    }
}
