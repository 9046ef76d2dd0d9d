//! `pitroom status`, `pitroom wait` and `pitroom stop`, for one run, several, or a group.

use std::time::{Duration, Instant};

use pitroom_core::duration::parse_duration;
use pitroom_core::{exit, report, Home, RunRecord};

use crate::cli::{StatusArgs, StopArgs, WaitArgs};
use crate::output;

/// How often `wait` looks at the records again.
const WAIT_POLL: Duration = Duration::from_millis(50);

fn print_one(record: &RunRecord, json: bool, brief: bool) {
    if json {
        output::json(record);
    } else if brief {
        println!("{}", report::brief(record));
    } else {
        print!("{}", report::render(record, output::stdout_color()));
    }
}

/// Several runs: one line each and a count, or a JSON array.
fn print_table(records: &[RunRecord], json: bool) {
    if json {
        output::json(&records);
        return;
    }
    for r in records {
        println!("{}", report::brief(r));
    }
    println!("{}", tally_line(records));
}

/// `6 runs: 4 done, 1 failed, 1 running`.
pub fn tally_line(records: &[RunRecord]) -> String {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for r in records {
        let state = r.state.as_str();
        match counts.iter_mut().find(|(s, _)| *s == state) {
            Some((_, n)) => *n += 1,
            None => counts.push((state, 1)),
        }
    }
    let parts: Vec<String> = counts.iter().map(|(s, n)| format!("{n} {s}")).collect();
    format!("{} runs: {}", records.len(), parts.join(", "))
}

/// The exit code of a set: 75 while any is active, 0 when all are ok, else the first failure's.
pub fn set_exit_code(records: &[RunRecord]) -> i32 {
    if records.iter().any(|r| r.state.is_active()) {
        return exit::STILL_RUNNING;
    }
    records
        .iter()
        .map(RunRecord::exit_code)
        .find(|&c| c != exit::OK)
        .unwrap_or(exit::OK)
}

pub fn status(args: StatusArgs) -> i32 {
    let home = super::home();
    let single = args.group.is_none() && args.runs.len() <= 1;
    let ids = match super::resolve_runs(&home, &args.runs, args.group.as_deref()) {
        Ok(ids) => ids,
        Err(code) => return code,
    };
    let records = super::load_runs(&home, &ids);
    match records.as_slice() {
        [one] if single => print_one(one, args.json, false),
        _ => print_table(&records, args.json),
    }
    set_exit_code(&records)
}

pub fn wait(args: WaitArgs) -> i32 {
    let limit = match parse_duration(&args.timeout) {
        Ok(d) => d,
        Err(why) => {
            output::error(format!("--timeout {why}"));
            return exit::USAGE;
        }
    };
    let home = super::home();
    let single = args.group.is_none() && args.runs.len() <= 1;
    let deadline = Instant::now() + limit;
    loop {
        // A group is re-read each time: runs that join it later are waited for too.
        let ids = match super::resolve_runs(&home, &args.runs, args.group.as_deref()) {
            Ok(ids) => ids,
            Err(code) => return code,
        };
        let records = super::load_runs(&home, &ids);
        let finished: Vec<&RunRecord> = records.iter().filter(|r| !r.state.is_active()).collect();
        let active = records.len() - finished.len();
        let satisfied = active == 0 || (args.any && !finished.is_empty());
        if satisfied {
            return report_finished(&records, single, &args);
        }
        if Instant::now() >= deadline {
            print_set_brief(&records, single, args.json);
            eprintln!(
                "pitroom: {active} run(s) still active; call again: {}",
                wait_again(&args, &records)
            );
            return exit::STILL_RUNNING;
        }
        std::thread::sleep(WAIT_POLL.min(deadline.saturating_duration_since(Instant::now())));
    }
}

fn report_finished(records: &[RunRecord], single: bool, args: &WaitArgs) -> i32 {
    let finished: Vec<RunRecord> = records
        .iter()
        .filter(|r| !r.state.is_active())
        .cloned()
        .collect();
    match records {
        [one] if single => print_one(one, args.json, args.brief),
        _ if args.json => output::json(&records),
        _ => {
            for r in &finished {
                if args.brief {
                    println!("{}", report::brief(r));
                } else {
                    print!("{}", report::render(r, output::stdout_color()));
                    println!();
                }
            }
        }
    }
    let active = records.len() - finished.len();
    if active > 0 {
        eprintln!(
            "pitroom: {active} still active: {}",
            wait_again(args, records)
        );
    }
    set_exit_code(&finished)
}

fn print_set_brief(records: &[RunRecord], single: bool, json: bool) {
    match records {
        [one] if single => print_one(one, json, true),
        _ if json => output::json(&records),
        _ => {
            for r in records {
                println!("{}", report::brief(r));
            }
        }
    }
}

/// The command that waits for what is left.
fn wait_again(args: &WaitArgs, records: &[RunRecord]) -> String {
    match &args.group {
        Some(g) => format!("pitroom wait -g {g}"),
        None => {
            let active: Vec<&str> = records
                .iter()
                .filter(|r| r.state.is_active())
                .map(|r| r.id.as_str())
                .collect();
            format!("pitroom wait {}", active.join(" "))
        }
    }
}

/// `pitroom stop [run | -g NAME]`: asks each active run's supervisor to stop (it ends the
/// worker's whole tree, or leaves the queue, and records `stopped`), then waits up to 15 s.
pub fn stop(args: StopArgs) -> i32 {
    let home = super::home();
    let given: Vec<String> = args.run.iter().cloned().collect();
    let ids = match super::resolve_runs(&home, &given, args.group.as_deref()) {
        Ok(ids) => ids,
        Err(code) => return code,
    };
    let records = super::load_runs(&home, &ids);
    let active: Vec<&RunRecord> = records.iter().filter(|r| r.state.is_active()).collect();
    if active.is_empty() {
        let what = match (&args.group, records.as_slice()) {
            (Some(g), _) => format!("no run of group {g} is running or queued"),
            (None, [one]) => format!(
                "run {} is not running (it is {})",
                one.id,
                one.state.as_str()
            ),
            _ => "none of these runs is running or queued".into(),
        };
        output::error(what);
        return exit::REFUSED;
    }
    for record in &active {
        if let Err(code) = request_stop(&home, record) {
            return code;
        }
    }
    let ids: Vec<String> = active.iter().map(|r| r.id.clone()).collect();
    settle_stopped(&home, &ids, args.json)
}

/// The note first: a supervisor that has not started yet finds it and stops at once; then
/// SIGTERM to the exact process that started the run (never one that reused its pid).
fn request_stop(home: &Home, record: &RunRecord) -> Result<(), i32> {
    let id = &record.id;
    let note = home.run_dir(id).join(pitroom_core::STOP_REQUESTED);
    if let Err(e) = std::fs::write(&note, b"stop\n") {
        output::error(format!("cannot ask run {id} to stop: {e}"));
        return Err(exit::REFUSED);
    }
    if let (Some(pid), Some(start)) = (record.pid, record.pid_start) {
        pitroom_proc::terminate_exact(pid as i32, start);
    }
    Ok(())
}

fn settle_stopped(home: &Home, ids: &[String], json: bool) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let records = super::load_runs(home, ids);
        if records.iter().all(|r| !r.state.is_active()) {
            if json {
                match records.as_slice() {
                    [one] => output::json(one),
                    _ => output::json(&records),
                }
            } else {
                for r in &records {
                    println!("pitroom: run {} is {}", r.id, r.state.as_str());
                }
            }
            return exit::OK;
        }
        if Instant::now() >= deadline {
            let left: Vec<&str> = records
                .iter()
                .filter(|r| r.state.is_active())
                .map(|r| r.id.as_str())
                .collect();
            output::error(format!(
                "asked to stop, but still running: {}; check again with: pitroom status {}",
                left.join(" "),
                left.join(" ")
            ));
            return exit::STILL_RUNNING;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
