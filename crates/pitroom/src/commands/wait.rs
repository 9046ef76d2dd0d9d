//! `pitroom status` and `pitroom wait`.

use std::time::{Duration, Instant};

use pitroom_core::duration::parse_duration;
use pitroom_core::{exit, report, RunRecord};

use crate::cli::{StatusArgs, StopArgs, WaitArgs};
use crate::output;

fn print(record: &RunRecord, json: bool, brief: bool) {
    if json {
        output::json(record);
    } else if brief {
        println!("{}", report::brief(record));
    } else {
        print!("{}", report::render(record, output::stdout_color()));
    }
}

pub fn status(args: StatusArgs) -> i32 {
    let home = super::home();
    match super::load_run(&home, args.run.as_deref()) {
        Ok(record) => {
            print(&record, args.json, false);
            record.exit_code()
        }
        Err(code) => code,
    }
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
    let deadline = Instant::now() + limit;
    loop {
        let record = match super::load_run(&home, args.run.as_deref()) {
            Ok(r) => r,
            Err(code) => return code,
        };
        if !record.state.is_active() {
            print(&record, args.json, args.brief);
            return record.exit_code();
        }
        if Instant::now() >= deadline {
            print(&record, args.json, true);
            eprintln!(
                "pitroom: run {} is still running; call again: pitroom wait {}",
                record.id, record.id
            );
            return exit::STILL_RUNNING;
        }
        std::thread::sleep(
            Duration::from_millis(100).min(deadline.saturating_duration_since(Instant::now())),
        );
    }
}

/// `pitroom stop [run]`: asks the run's supervisor to stop (it ends the worker's whole tree and
/// records `stopped`), and waits up to 15 s for it to do so.
pub fn stop(args: StopArgs) -> i32 {
    let home = super::home();
    let record = match super::load_run(&home, args.run.as_deref()) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let id = record.id.clone();
    if !record.state.is_active() {
        output::error(format!(
            "run {id} is not running (it is {})",
            record.state.as_str()
        ));
        return exit::REFUSED;
    }
    // The note first: a supervisor that has not started yet finds it and stops at once.
    let note = home.run_dir(&id).join(pitroom_core::STOP_REQUESTED);
    if let Err(e) = std::fs::write(&note, b"stop\n") {
        output::error(format!("cannot ask run {id} to stop: {e}"));
        return exit::REFUSED;
    }
    if let (Some(pid), Some(start)) = (record.pid, record.pid_start) {
        // Only the process that started the run, never a later one that reused its pid.
        pitroom_proc::terminate_exact(pid as i32, start);
    }
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let current = match home.load_settled(&id) {
            Ok(r) => r,
            Err(e) => {
                output::error(e);
                return exit::REFUSED;
            }
        };
        if !current.state.is_active() {
            if args.json {
                output::json(&current);
            } else {
                println!("pitroom: run {id} is {}", current.state.as_str());
            }
            return exit::OK;
        }
        if Instant::now() >= deadline {
            output::error(format!(
                "run {id} was asked to stop but is still running; check again with: pitroom status {id}"
            ));
            return exit::STILL_RUNNING;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
