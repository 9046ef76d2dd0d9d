//! `cargo run --release -p pitroom-bench --bin redact [-- MEGABYTES]`: redaction throughput
//! (issue 16). Every line of a worker's event stream passes through `Redactor::redact` before it
//! is written, so this feeds it a generated stream of the same shape, line by line: JSON event
//! lines (steps, tool calls, file contents read, text parts), one in 40 carrying a secret of a
//! known format or a value of the project's `.env`. Prints MB/s (median of several rounds) for
//! the full redactor and for the formats alone; asserts nothing.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test support: a failed expectation is the test or benchmark failing, with its message"
)]

use std::time::{Duration, Instant};

use pitroom_core::redact::{Redactor, MASK};
use serde_json::json;

const ROUNDS: usize = 7;

/// A small deterministic generator (xorshift), so every run sees the same stream.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn token(&mut self, alphabet: &[u8], n: usize) -> String {
        (0..n)
            .map(|_| char::from(alphabet[self.below(alphabet.len())]))
            .collect()
    }
}

const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const HEX: &[u8] = b"0123456789abcdef";

/// Code-like text as workers read and write it: identifiers, paths, hashes, UUIDs, URLs.
const CODE: &[&str] = &[
    "fn parse_config(path: &Path) -> Result<Config, Error> {",
    "    let session = Session::new(token_store.clone(), retry_policy);",
    "def wsgi_app(self, environ, start_response):",
    "export async function handleRequest(req: Request): Promise<Response> {",
    "    if err := srv.ListenAndServe(); err != nil { log.Fatal(err) }",
    "import { useState, useEffect } from 'react';",
    "    # see https://docs.example.org/guide/config#options for the key names",
    "    assert response.status_code == 200, response.text",
    "SELECT id, created_at FROM runs WHERE state = 'done' ORDER BY id DESC LIMIT 20;",
    "    self.cache.insert(key.to_string(), value); // keyed by the task hash",
];

/// The project's `.env` values, as `for_dirs` would find them.
const ENV_VALUES: &[&str] = &[
    "hunter2-correct-horse-battery",
    "postgres-prod-password-77",
    "s3cr3t-session-signing-key",
];

/// A secret as a worker might repeat it: a key of a known format, or a value of the `.env`.
fn secret(rng: &mut Rng) -> String {
    const BASE32: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    const LETTERS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    match rng.below(8) {
        0 => format!("sk_live_{}", rng.token(ALNUM, 48)),
        1 => format!("ghp_{}", rng.token(ALNUM, 36)),
        2 => format!("AKIA{}", rng.token(BASE32, 16)),
        3 => format!(
            "xoxb-{}-{}",
            rng.token(b"0123456789", 12),
            rng.token(ALNUM, 24)
        ),
        4 => format!("postgres://app:{}@db.internal/app", rng.token(ALNUM, 20)),
        5 => format!("hf_{}", rng.token(LETTERS, 34)),
        6 => format!("npm_{}", rng.token(ALNUM, 36)),
        _ => ENV_VALUES[rng.below(ENV_VALUES.len())].to_string(),
    }
}

/// One event line of a worker's stream.
fn event_line(rng: &mut Rng, n: usize) -> String {
    let mut text: String = (0..1 + rng.below(12))
        .map(|_| CODE[rng.below(CODE.len())])
        .collect::<Vec<_>>()
        .join("\n");
    text.push_str(&format!(
        "\ncommit {} run {}-{}-4{}-a{}-{}",
        rng.token(HEX, 40),
        rng.token(HEX, 8),
        rng.token(HEX, 4),
        rng.token(HEX, 3),
        rng.token(HEX, 3),
        rng.token(HEX, 12)
    ));
    let with_secret = n.checked_rem(40) == Some(0);
    if with_secret {
        text.push_str(&format!("\nAPI_KEY={}\n", secret(rng)));
    }
    // A line with a secret is one that carries text: a tool's output or the worker's words.
    let kind = if with_secret {
        1 + rng.below(3)
    } else {
        rng.below(4)
    };
    let event = match kind {
        0 => {
            json!({"type": "step_start", "timestamp": 1_700_000_000_000u64 + n as u64, "part": {"id": format!("prt_{n}")}})
        }
        1 => {
            json!({"type": "tool_use", "part": {"tool": "read", "state": {"input": {"filePath": "src/app.py"}, "output": text}}})
        }
        2 => json!({"type": "text", "part": {"text": text}}),
        _ => {
            json!({"type": "tool_use", "part": {"tool": "bash", "state": {"input": {"command": "rg -n token src"}, "output": text}}})
        }
    };
    event.to_string() + "\n"
}

fn stream(megabytes: usize) -> Vec<String> {
    let mut rng = Rng(0x5EED_1234_ABCD_9876);
    let mut lines = Vec::new();
    let mut bytes = 0;
    while bytes < megabytes * 1_000_000 {
        let line = event_line(&mut rng, lines.len());
        bytes += line.len();
        lines.push(line);
    }
    lines
}

/// Median time of redacting every line once, and how many masks the last round wrote.
fn measure(redactor: &Redactor, lines: &[String]) -> (Duration, usize) {
    let mut times = Vec::new();
    let mut masks = 0;
    for _ in 0..ROUNDS {
        let start = Instant::now();
        masks = lines
            .iter()
            .map(|l| redactor.redact(l).matches(MASK).count())
            .sum();
        times.push(start.elapsed());
    }
    times.sort();
    (times[ROUNDS / 2], masks)
}

fn main() {
    let megabytes: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(32);
    let lines = stream(megabytes);
    let bytes: usize = lines.iter().map(String::len).sum();
    let mb = bytes as f64 / 1e6;
    println!(
        "stream: {mb:.1} MB, {} JSON event lines (mean {} bytes), {} secrets (1 line in 40)",
        lines.len(),
        bytes / lines.len().max(1),
        lines.len().div_ceil(40)
    );
    let full = Redactor::new(ENV_VALUES.iter().map(|v| v.to_string()).collect());
    let formats = Redactor::new(Vec::new());
    for (name, redactor) in [("formats + .env values", &full), ("formats only", &formats)] {
        let (time, masks) = measure(redactor, &lines);
        let secs = time.as_secs_f64();
        println!(
            "redact ({name}): {:.0} MB/s, {:.0} lines/s, {masks} masks (median of {ROUNDS})",
            mb / secs,
            lines.len() as f64 / secs
        );
    }
    // What every call costs anyway: the copy it returns.
    let start = Instant::now();
    let copied: usize = lines
        .iter()
        .map(|l| std::hint::black_box(l.to_string()).len())
        .sum();
    let secs = start.elapsed().as_secs_f64();
    println!(
        "baseline (copying each line): {:.0} MB/s ({copied} bytes)",
        mb / secs
    );
}
