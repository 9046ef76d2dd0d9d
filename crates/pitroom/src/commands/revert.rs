//! `pitroom revert`: undo exactly a write run's edits.

use pitroom_core::exit;

use crate::cli::RevertArgs;
use crate::output;
use crate::output::say;

pub(super) fn revert(args: RevertArgs) -> i32 {
    let service = match super::service() {
        Ok(s) => s,
        Err(code) => return code,
    };
    match service.revert(args.run.as_deref()) {
        Ok((record, n)) => {
            let id = record.id;
            if args.json {
                output::json(&serde_json::json!({"run": id, "reverted": true, "files": n}));
            } else {
                say!(
                    "pitroom ✔ reverted run {id}: {n} file{} restored",
                    if n == 1 { "" } else { "s" }
                );
            }
            exit::OK
        }
        Err(e) => super::fail(&e),
    }
}
