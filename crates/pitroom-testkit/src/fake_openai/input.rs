//! HTTP input: reading requests, with bodies chunked or not.

use super::*;

/// A parsed request; header names are lowercased.
pub(super) struct Request {
    pub(super) method: String,
    pub(super) target: String,
    pub(super) version: String,
    pub(super) headers: Vec<(String, String)>,
    pub(super) body: Vec<u8>,
}

impl Request {
    /// The last value of a header (the Python's dict also keeps the last).
    pub(super) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The path used for routing: no query string, no trailing slashes.
    pub(super) fn route_path(&self) -> &str {
        let path = self.target.split('?').next().unwrap_or_default();
        path.trim_end_matches('/')
    }

    pub(super) fn wants_close(&self) -> bool {
        match self.header("connection").map(str::to_ascii_lowercase) {
            Some(value) if value.contains("close") => true,
            Some(value) if value.contains("keep-alive") => false,
            _ => self.version == "HTTP/1.0",
        }
    }

    pub(super) fn headers_json(&self) -> Value {
        let map: Map<String, Value> = self
            .headers
            .iter()
            .map(|(name, value)| (name.clone(), json!(value)))
            .collect();
        Value::Object(map)
    }

    /// The body for the log: parsed JSON, else the text (as the Python).
    pub(super) fn body_json(&self) -> Value {
        match serde_json::from_slice::<Value>(&self.body) {
            Ok(value) if !value.is_null() => value,
            _ => Value::String(String::from_utf8_lossy(&self.body).into_owned()),
        }
    }

    pub(super) fn expects_continue(&self) -> bool {
        self.header("expect")
            .is_some_and(|v| v.eq_ignore_ascii_case("100-continue"))
    }
}

pub(super) enum ReadError {
    /// EOF, an I/O error or a stopping server: just drop the connection.
    Closed,
    /// Malformed input: answer 400, then close.
    Bad(String),
}

/// A connection with the bytes received but not yet consumed.
pub(super) struct Conn<'a> {
    pub(super) shared: &'a Shared,
    pub(super) stream: TcpStream,
    pub(super) buf: Vec<u8>,
}

impl Conn<'_> {
    /// Reads more bytes into `buf`; the read timeout only exists so that a
    /// stopping server is noticed.
    pub(super) fn fill(&mut self) -> Result<(), ReadError> {
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

    pub(super) fn read_request(&mut self) -> Result<Request, ReadError> {
        let head = self.take_head()?;
        let mut req = parse_head(&head).map_err(ReadError::Bad)?;
        req.body = self.read_body(&req)?;
        Ok(req)
    }

    pub(super) fn take_head(&mut self) -> Result<Vec<u8>, ReadError> {
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
    pub(super) fn take_line(&mut self) -> Result<Vec<u8>, ReadError> {
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

    pub(super) fn take_exact(&mut self, len: usize) -> Result<Vec<u8>, ReadError> {
        while self.buf.len() < len {
            self.fill()?;
        }
        Ok(self.buf.drain(..len).collect())
    }

    pub(super) fn read_body(&mut self, req: &Request) -> Result<Vec<u8>, ReadError> {
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

    pub(super) fn read_chunked(&mut self) -> Result<Vec<u8>, ReadError> {
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

    /// Waits (sending nothing) until the client disconnects, the deadline
    /// passes or the server stops.
    pub(super) fn hang(&mut self, limit: Duration) {
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

    /// Half-closes and drains what the client still sends, so the kernel does
    /// not answer unread request bytes with a RST that could destroy the reply.
    pub(super) fn close_gracefully(&mut self) {
        if self.stream.shutdown(Shutdown::Write).is_err() {
            return;
        }
        let deadline = Instant::now() + LINGER;
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
pub(super) fn find_head_end(buf: &[u8]) -> Option<(usize, usize)> {
    buf.iter()
        .enumerate()
        .filter(|(_, &b)| b == b'\n')
        .find_map(|(i, _)| match buf.get(i + 1..) {
            Some([b'\n', ..]) => Some((i, i + 2)),
            Some([b'\r', b'\n', ..]) => Some((i, i + 3)),
            _ => None,
        })
}

pub(super) fn parse_chunk_size(line: &[u8]) -> Option<usize> {
    let text = std::str::from_utf8(line).ok()?;
    // Chunk extensions (";name=value") are allowed and ignored.
    let size = text.split(';').next()?.trim();
    usize::from_str_radix(size, 16).ok()
}

pub(super) fn parse_head(head: &[u8]) -> Result<Request, String> {
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
