//! `cargo run --release -p pitroom-bench --bin store [-- RUNS]`: the history database with
//! 100,000 generated runs (by default): the insert rate in batches (as `history import` writes)
//! and one run at a time (as a run's end writes, each in its own transaction with the file
//! opened afresh), then the time of typical `history` searches, `history stats` and `savings`.
//! Prints medians; asserts nothing.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test support: a failed expectation is the test or benchmark failing, with its message"
)]

use std::time::{Duration, Instant};

use pitroom_store::{Filter, RunRow, Since, Store};

const QUERY_ROUNDS: usize = 15;

/// A small deterministic generator (xorshift), so every run of the benchmark sees the same data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// Roughly Zipf-distributed index in `0..n`: a few words are very common, most are rare.
    fn zipf(&mut self, n: u64) -> u64 {
        let u = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        ((n as f64).powf(u) as u64).saturating_sub(1).min(n - 1)
    }
}

const SYLLABLES: &[&str] = &[
    "ka", "ro", "mi", "te", "lu", "san", "vo", "rex", "pi", "dor", "en", "qua", "li", "zu", "bel",
    "tor", "ny", "fa", "gim", "os",
];

fn vocabulary(rng: &mut Rng, n: usize) -> Vec<String> {
    let mut words: Vec<String> = [
        "parser",
        "config",
        "router",
        "cookie",
        "session",
        "scheduler",
        "token",
        "cache",
        "render",
        "migrate",
        "handler",
        "socket",
        "retry",
        "index",
        "schema",
        "queue",
    ]
    .iter()
    .map(|w| w.to_string())
    .collect();
    while words.len() < n {
        let len = 2 + rng.below(3);
        let w: String = (0..len)
            .map(|_| SYLLABLES[rng.below(SYLLABLES.len() as u64) as usize])
            .collect();
        words.push(w);
    }
    words
}

fn sentence(rng: &mut Rng, words: &[String], len: usize) -> String {
    (0..len)
        .map(|_| words[rng.zipf(words.len() as u64) as usize].as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

fn generate(rng: &mut Rng, words: &[String], i: usize, start_ms: i64) -> RunRow {
    let models = [
        "openai/gpt-5-mini",
        "zen/big-pickle",
        "anthropic/haiku",
        "local/qwen3",
    ];
    let states = ["done", "done", "done", "done", "failed", "timeout"];
    let tokens = 5_000 + rng.below(400_000) as i64;
    let state = states[rng.below(states.len() as u64) as usize].to_string();
    let steps: String = (0..2 + rng.below(10))
        .map(|_| {
            format!(
                "read src/{}.rs\n",
                words[rng.zipf(words.len() as u64) as usize]
            )
        })
        .collect();
    let task_len = 8 + rng.below(20) as usize;
    let task = sentence(rng, words, task_len);
    let answer_len = 80 + rng.below(250) as usize;
    let answer = sentence(rng, words, answer_len);
    RunRow {
        id: format!("bench-{i:07}"),
        // About one run every 90 s, so 100,000 runs span about 100 days.
        started_ms: start_ms + i as i64 * 90_000,
        ended_ms: Some(start_ms + i as i64 * 90_000 + 60_000),
        failure: (state == "failed" && rng.below(2) == 0).then(|| "rate_limited".to_string()),
        state,
        mode: "read".into(),
        backend: "opencode".into(),
        model: Some(models[rng.below(models.len() as u64) as usize].to_string()),
        group: None,
        dir: "/home/user/project".into(),
        task,
        duration_ms: Some(5_000 + rng.below(300_000) as i64),
        steps: 2 + rng.below(20) as i64,
        tool_calls: rng.below(40) as i64,
        tokens,
        returned_tokens: Some(200 + rng.below(2000) as i64),
        cost: Some(tokens as f64 * 1e-7),
        cost_estimated: false,
        saved: Some(tokens as f64 * 3e-6),
        primary: Some("Claude Sonnet".into()),
        files_changed: 0,
        applied: false,
        discarded: false,
        error: None,
        answer: Some(answer),
        steps_text: steps,
        patch: None,
    }
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100_000);
    let tmp = tempfile::tempdir().expect("temp dir");
    let path = tmp.path().join("history.sqlite");
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let words = vocabulary(&mut rng, 20_000);
    let start_ms = jiff::Timestamp::now().as_millisecond() - runs as i64 * 90_000;
    let rows: Vec<RunRow> = (0..runs)
        .map(|i| generate(&mut rng, &words, i, start_ms))
        .collect();

    let mut store = Store::open(&path).expect("open");
    let t = Instant::now();
    for chunk in rows.chunks(1000) {
        store.upsert_many(chunk).expect("insert");
    }
    let batch = t.elapsed();
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0)
        + std::fs::metadata(tmp.path().join("history.sqlite-wal"))
            .map(|m| m.len())
            .unwrap_or(0);
    println!(
        "insert {runs} runs in batches of 1000: {:.1} s, {:.0} runs/s, database {:.0} MB",
        batch.as_secs_f64(),
        runs as f64 / batch.as_secs_f64(),
        size as f64 / 1e6
    );

    // A run's end: open the file, upsert one row in its own transaction, close.
    let singles = 200;
    let t = Instant::now();
    for i in 0..singles {
        let s = Store::open(&path).expect("open");
        let mut row = generate(&mut rng, &words, runs + i, start_ms);
        row.started_ms = jiff::Timestamp::now().as_millisecond();
        s.upsert(&row).expect("upsert");
    }
    let single = t.elapsed() / singles as u32;
    println!(
        "one run at a time (open + upsert + close, as at a run's end): {} per run, {:.0} runs/s",
        ms(single),
        1.0 / single.as_secs_f64()
    );

    let now = jiff::Timestamp::now();
    let text = |t: &str| Filter {
        text: Some(t.to_string()),
        ..Filter::default()
    };
    let rare = words[words.len() - 7].clone();
    let queries: Vec<(String, Filter)> = vec![
        ("newest 20, no text".into(), Filter::default()),
        (format!("rare word `{rare}`"), text(&rare)),
        ("common word `parser`".into(), text("parser")),
        ("two words `cookie session`".into(), text("cookie session")),
        ("prefix `sched`".into(), text("sched")),
        (
            "`config` + --model + --since 30d".into(),
            Filter {
                model: Some("zen/big-pickle".into()),
                since: Since::days(30, now),
                ..text("config")
            },
        ),
        (
            "`retry` + --state failed".into(),
            Filter {
                state: Some("failed".into()),
                ..text("retry")
            },
        ),
    ];
    println!("\n| query over {runs} runs | median | hits |");
    println!("|---|---:|---:|");
    for (label, filter) in &queries {
        let mut hits = 0;
        let samples = (0..QUERY_ROUNDS)
            .map(|_| {
                let t = Instant::now();
                hits = store.search(filter).expect("search").len();
                t.elapsed()
            })
            .collect();
        println!("| {label} | {} | {hits} |", ms(median(samples)));
    }
    let timed = |f: &dyn Fn()| {
        median(
            (0..QUERY_ROUNDS)
                .map(|_| {
                    let t = Instant::now();
                    f();
                    t.elapsed()
                })
                .collect(),
        )
    };
    let stats_all = timed(&|| {
        store.stats(&Since::all()).expect("stats");
    });
    println!("| `history stats` (all time) | {} | |", ms(stats_all));
    let stats_week = timed(&|| {
        store.stats(&Since::days(7, now)).expect("stats");
    });
    println!("| `history stats --since 7d` | {} | |", ms(stats_week));
    let savings = timed(&|| {
        for p in [Since::days(7, now), Since::days(30, now), Since::all()] {
            store.savings(&p).expect("savings");
        }
    });
    println!("| `savings` (7d, 30d and all time) | {} | |", ms(savings));
}
