//! The failure matrix (issue 16, item 11): every provider failure shape a worker CLI can meet —
//! a 429 with and without `retry-after`, an out-of-quota 429, an unknown model, a 500 and a
//! 503 — run through the real CLI against its fake server, so each one surfaces classified in
//! seconds and the fallback chain gets its chance. Wall clock is printed, not asserted (it
//! flakes on a loaded machine); what is asserted is the classification and the number of
//! requests the fake saw, which the adapter's retry cap bounds.

use std::process::Output;
use std::time::Instant;

use serde_json::Value;

use super::common::{code, text};

/// The time limit of each shape's run: generous, because a failure ends the run as soon as it
/// is classified; a loaded machine may start a CLI slowly, and a run that times out proves
/// nothing about classification.
const TIMEOUT: &str = "300s";

/// One failure shape: its name, the scenario that plays it and the classification the record
/// must carry.
pub type Shape = (&'static str, &'static str, &'static str);

/// Runs every shape (`run` gets the task and its time limit as arguments of `pitroom run`,
/// `requests` counts the fake's model requests so far, `record` reads the latest run record),
/// prints one matrix line per shape and fails with all the cells that went wrong at once. Each
/// shape may send at most `max_requests` model requests: the CLI's retry cap under Pitroom.
pub fn walk(
    cli: &str,
    shapes: &[Shape],
    max_requests: usize,
    run: impl Fn(&[&str]) -> Output,
    requests: impl Fn() -> usize,
    record: impl Fn() -> Value,
) {
    let mut wrong = Vec::new();
    for &(name, scenario, expected) in shapes {
        let before = requests();
        let started = Instant::now();
        let task = format!("anything scenario:{scenario}");
        let out = run(&[&task, "-t", TIMEOUT]);
        let secs = started.elapsed().as_secs_f64();
        let sent = requests() - before;
        let r = record();
        let failure = r["failure"].as_str().unwrap_or("none").to_string();
        eprintln!(
            "failfast | {cli} | {name} | {failure} | {secs:.1} s | {sent} requests | {}",
            r["error"].as_str().unwrap_or("")
        );
        if code(&out) != 1 || r["state"] != "failed" {
            wrong.push(format!("{name}: did not fail: {r:#}\n{}", text(&out)));
        } else if failure != expected {
            wrong.push(format!(
                "{name}: classified {failure}, expected {expected}: {r:#}"
            ));
        } else if sent == 0 || sent > max_requests {
            wrong.push(format!(
                "{name}: {sent} model requests, the cap allows 1..={max_requests}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{cli}:\n{}", wrong.join("\n\n"));
}
