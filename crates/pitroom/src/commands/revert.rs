//! `pitroom revert`: undo exactly a write run's edits.

use pitroom_core::exit;
use pitroom_core::revert::{revert as revert_run, RevertError};

use crate::cli::RevertArgs;
use crate::output;

pub fn revert(args: RevertArgs) -> i32 {
    let home = super::home();
    let mut record = match super::load_run(&home, args.run.as_deref()) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let id = record.id.clone();
    match revert_run(&home, &mut record) {
        Ok(n) => {
            if args.json {
                output::json(&serde_json::json!({"run": id, "reverted": true, "files": n}));
            } else {
                println!(
                    "pitroom ✔ reverted run {id}: {n} file{} restored",
                    if n == 1 { "" } else { "s" }
                );
            }
            exit::OK
        }
        Err(e) => {
            output::error(&e);
            match e {
                RevertError::Conflict(_) => exit::FAILED,
                _ => exit::REFUSED,
            }
        }
    }
}
