//! The one HTTP/1.1 core of the fake model servers: reading a request ([`Conn`]: a
//! `Content-Length` or chunked body, `Expect: 100-continue`, the bytes of a keep-alive client's
//! next request kept), the status phrases, and [`Server`], the small server the Responses and
//! Anthropic fakes reply on (one thread per connection, `Connection: close` on every reply; it
//! can stream SSE with pauses, drop a stream or hang it). The OpenAI and Gemini fakes read
//! through [`Conn`] too and write their replies (keep-alive, Python-json bodies) themselves.
//! What the scripts say is walked in [`crate::script`].

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

/// Blocking reads and scripted sleeps of [`Server`] wake this often to notice a stop.
const POLL: Duration = Duration::from_millis(50);
const MAX_HEAD: usize = 64 * 1024;
const MAX_LINE: usize = 8 * 1024;
pub(crate) const MAX_BODY: usize = 64 * 1024 * 1024;

pub(crate) type Handler = Arc<dyn Fn(&Request, u16) -> Reply + Send + Sync>;

/// Locks without panicking: a poisoned lock still holds usable test data.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One request as received.
pub(crate) struct Request {
    pub method: String,
    /// The request target as sent: the path with its query string.
    pub target: String,
    pub version: String,
    /// Lower-cased names, in the order received.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    /// The last value of a header (as Python's dict keeps the last).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The path without its query string.
    pub fn path_only(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }

    /// The path used for routing: no query string, no trailing slashes.
    pub fn route_path(&self) -> &str {
        self.path_only().trim_end_matches('/')
    }

    /// Whether the client wants the connection closed after this request (HTTP/1.0 does by
    /// default).
    pub fn wants_close(&self) -> bool {
        match self.header("connection").map(str::to_ascii_lowercase) {
            Some(value) if value.contains("close") => true,
            Some(value) if value.contains("keep-alive") => false,
            _ => self.version == "HTTP/1.0",
        }
    }

    pub fn expects_continue(&self) -> bool {
        self.header("expect")
            .is_some_and(|v| v.eq_ignore_ascii_case("100-continue"))
    }

    /// The headers as a JSON object, for request logs.
    pub fn headers_json(&self) -> Value {
        let map: Map<String, Value> = self
            .headers
            .iter()
            .map(|(name, value)| (name.clone(), json!(value)))
            .collect();
        Value::Object(map)
    }

    /// The body for the OpenAI fake's log: parsed JSON, else the text (as the Python fake).
    pub fn body_json(&self) -> Value {
        match serde_json::from_slice::<Value>(&self.body) {
            Ok(value) if !value.is_null() => value,
            _ => Value::String(String::from_utf8_lossy(&self.body).into_owned()),
        }
    }

    /// The body as JSON; `Null` when empty or not JSON.
    pub fn json_body(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    /// The log entry the Responses and Anthropic fakes keep: method, path, headers and body
    /// (parsed when JSON).
    pub fn log_entry(&self, body: &Value) -> Value {
        let body = if body.is_null() && !self.body.is_empty() {
            Value::String(String::from_utf8_lossy(&self.body).into_owned())
        } else {
            body.clone()
        };
        json!({"method": self.method, "path": self.target, "headers": self.headers_json(), "body": body,
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

fn serve(stream: TcpStream, handler: &Handler, port: u16, stopping: &AtomicBool) -> io::Result<()> {
    stream.set_read_timeout(Some(POLL))?;
    stream.set_write_timeout(Some(Duration::from_secs(30)))?;
    let mut conn = Conn::new(stopping, stream);
    let request = match conn.read_request() {
        Ok(request) => request,
        Err(ReadError::Closed) => return Ok(()),
        Err(ReadError::Bad(why)) => return Err(io::Error::new(io::ErrorKind::InvalidData, why)),
    };
    let mut stream = conn.stream;
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

/// A read that timed out (or was interrupted): try again, it is no end of the connection.
fn is_timeout(err: &io::Error) -> bool {
    matches!(
        err.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

/// Why no request could be read.
pub(crate) enum ReadError {
    /// EOF, an I/O error or a stopping server: just drop the connection.
    Closed,
    /// Malformed input: the server may answer 400, then close.
    Bad(String),
}

/// What a connection asks of its server while it reads: whether it is stopping.
pub(crate) trait Stopping {
    fn is_stopping(&self) -> bool;
}

impl Stopping for AtomicBool {
    fn is_stopping(&self) -> bool {
        self.load(Ordering::SeqCst)
    }
}

/// A connection with the bytes received but not yet consumed (keep-alive clients may send the
/// next request in the same read), and the server it belongs to.
pub(crate) struct Conn<'a, S: Stopping + ?Sized> {
    pub(crate) shared: &'a S,
    pub(crate) stream: TcpStream,
    pub(crate) buf: Vec<u8>,
}

impl<'a, S: Stopping + ?Sized> Conn<'a, S> {
    pub(crate) fn new(shared: &'a S, stream: TcpStream) -> Self {
        Conn {
            shared,
            stream,
            buf: Vec::new(),
        }
    }

    /// Reads more bytes into `buf`. Servers that set a read timeout do so only to notice a stop.
    pub(crate) fn fill(&mut self) -> Result<(), ReadError> {
        let mut chunk = [0u8; 16 * 1024];
        loop {
            if self.shared.is_stopping() {
                return Err(ReadError::Closed);
            }
            match self.stream.read(&mut chunk) {
                Ok(0) => return Err(ReadError::Closed),
                Ok(n) => {
                    self.buf.extend_from_slice(&chunk[..n]);
                    return Ok(());
                }
                Err(err) if is_timeout(&err) => {}
                Err(_) => return Err(ReadError::Closed),
            }
        }
    }

    /// Reads one request: its head, then its body (`Content-Length` or chunked), answering
    /// `Expect: 100-continue` first.
    pub(crate) fn read_request(&mut self) -> Result<Request, ReadError> {
        let head = self.take_head()?;
        let mut req = parse_head(&head).map_err(ReadError::Bad)?;
        req.body = self.read_body(&req)?;
        Ok(req)
    }

    fn take_head(&mut self) -> Result<Vec<u8>, ReadError> {
        loop {
            // Stray line breaks between requests are allowed (RFC 9112 §2.2).
            let blank = self.buf.iter().take_while(|b| matches!(b, b'\r' | b'\n'));
            let skip = blank.count();
            self.buf.drain(..skip);
            if let Some((end, consumed)) = find_head_end(&self.buf) {
                let head = self.buf[..end].to_vec();
                self.buf.drain(..consumed);
                return Ok(head);
            }
            if self.buf.len() > MAX_HEAD {
                return Err(ReadError::Bad("request head too large".into()));
            }
            self.fill()?;
        }
    }

    /// One line without its line break (for chunked bodies).
    fn take_line(&mut self) -> Result<Vec<u8>, ReadError> {
        loop {
            if let Some(eol) = self.buf.iter().position(|&b| b == b'\n') {
                let mut line: Vec<u8> = self.buf.drain(..=eol).collect();
                line.pop();
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                return Ok(line);
            }
            if self.buf.len() > MAX_LINE {
                return Err(ReadError::Bad("chunk line too long".into()));
            }
            self.fill()?;
        }
    }

    fn take_exact(&mut self, len: usize) -> Result<Vec<u8>, ReadError> {
        while self.buf.len() < len {
            self.fill()?;
        }
        Ok(self.buf.drain(..len).collect())
    }

    fn read_body(&mut self, req: &Request) -> Result<Vec<u8>, ReadError> {
        let chunked = req
            .header("transfer-encoding")
            .is_some_and(|te| te.to_ascii_lowercase().contains("chunked"));
        let length = match req.header("content-length") {
            None => 0,
            Some(value) => value
                .trim()
                .parse::<usize>()
                .map_err(|_| ReadError::Bad(format!("bad Content-Length {value:?}")))?,
        };
        if !chunked && length > MAX_BODY {
            return Err(ReadError::Bad("request body too large".into()));
        }
        if (chunked || length > 0) && req.expects_continue() {
            self.stream
                .write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
                .map_err(|_| ReadError::Closed)?;
        }
        if chunked {
            self.read_chunked()
        } else {
            self.take_exact(length)
        }
    }

    fn read_chunked(&mut self) -> Result<Vec<u8>, ReadError> {
        let mut body = Vec::new();
        loop {
            let line = self.take_line()?;
            let size = parse_chunk_size(&line)
                .ok_or_else(|| ReadError::Bad("bad chunk size line".into()))?;
            if size == 0 {
                // Trailer fields, ignored, up to the blank line.
                while !self.take_line()?.is_empty() {}
                return Ok(body);
            }
            if body.len().saturating_add(size) > MAX_BODY {
                return Err(ReadError::Bad("request body too large".into()));
            }
            body.extend(self.take_exact(size)?);
            if !self.take_line()?.is_empty() {
                return Err(ReadError::Bad("chunk not followed by CRLF".into()));
            }
        }
    }

    /// Waits (sending nothing) until the client disconnects, the deadline passes or the server
    /// stops.
    pub(crate) fn hang(&mut self, limit: Duration) {
        let deadline = Instant::now().checked_add(limit);
        let mut sink = [0u8; 1024];
        while deadline.is_none_or(|d| Instant::now() < d) && !self.shared.is_stopping() {
            match self.stream.read(&mut sink) {
                Ok(0) => return,
                Ok(_) => {}
                Err(err) if is_timeout(&err) => {}
                Err(_) => return,
            }
        }
    }

    /// Half-closes and drains what the client still sends for up to `linger`, so the kernel
    /// does not answer unread request bytes with a RST that could destroy the reply.
    pub(crate) fn close_gracefully(&mut self, linger: Duration) {
        if self.stream.shutdown(Shutdown::Write).is_err() {
            return;
        }
        let deadline = Instant::now() + linger;
        let mut sink = [0u8; 4096];
        while Instant::now() < deadline && !self.shared.is_stopping() {
            match self.stream.read(&mut sink) {
                Ok(0) => return,
                Ok(_) => {}
                Err(err) if is_timeout(&err) => {}
                Err(_) => return,
            }
        }
    }
}

/// Finds the blank line ending a request head; tolerates bare `\n` line ends.
/// Returns (length of the head, bytes to consume).
fn find_head_end(buf: &[u8]) -> Option<(usize, usize)> {
    buf.iter()
        .enumerate()
        .filter(|(_, &b)| b == b'\n')
        .find_map(|(i, _)| match buf.get(i + 1..) {
            Some([b'\n', ..]) => Some((i, i + 2)),
            Some([b'\r', b'\n', ..]) => Some((i, i + 3)),
            _ => None,
        })
}

fn parse_chunk_size(line: &[u8]) -> Option<usize> {
    let text = std::str::from_utf8(line).ok()?;
    // Chunk extensions (";name=value") are allowed and ignored.
    let size = text.split(';').next()?.trim();
    usize::from_str_radix(size, 16).ok()
}

fn parse_head(head: &[u8]) -> Result<Request, String> {
    let text = String::from_utf8_lossy(head);
    let mut lines = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split_whitespace();
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(format!("malformed request line {request_line:?}"));
    };
    if !version.starts_with("HTTP/1.") || !method.bytes().all(|b| b.is_ascii_alphabetic()) {
        return Err(format!("malformed request line {request_line:?}"));
    }
    let mut headers: Vec<(String, String)> = Vec::new();
    for line in lines {
        if line.starts_with([' ', '\t']) {
            // Obsolete line folding continues the previous header's value.
            let (_, value) = headers
                .last_mut()
                .ok_or_else(|| format!("malformed header line {line:?}"))?;
            value.push(' ');
            value.push_str(line.trim());
            continue;
        }
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| format!("malformed header line {line:?}"))?;
        if name.is_empty() || name.contains(char::is_whitespace) {
            return Err(format!("malformed header line {line:?}"));
        }
        headers.push((name.to_ascii_lowercase(), value.trim().to_owned()));
    }
    Ok(Request {
        method: method.to_owned(),
        target: target.to_owned(),
        version: version.to_owned(),
        headers,
        body: Vec::new(),
    })
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
