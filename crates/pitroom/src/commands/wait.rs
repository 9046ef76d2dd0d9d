//! `pitroom status` and `pitroom wait`.

use std::time::{Duration, Instant};

use pitroom_core::duration::parse_duration;
use pitroom_core::{exit, report, RunRecord};

use crate::cli::{StatusArgs, WaitArgs};
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
