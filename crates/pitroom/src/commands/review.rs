//! `pitroom review`: a second model reviews a run's change or a commit range.

use pitroom_core::{exit, report};
use pitroom_service::ReviewRequest;

use crate::cli::ReviewArgs;
use crate::output::{self, Progress};

pub fn review(args: ReviewArgs) -> i32 {
    let service = match super::service() {
        Ok(s) => s,
        Err(code) => return code,
    };
    let request = ReviewRequest {
        run: args.run.clone(),
        range: args.range.clone(),
        worker: args.worker.clone(),
        tier: args.tier.clone(),
        dir: args.dir.clone(),
        timeout: args.timeout.clone(),
        background: args.bg,
    };
    let resolved = match service.prepare_review(&request) {
        Ok(r) => r,
        Err(e) => return super::fail(&e),
    };
    for w in &resolved.warnings {
        output::warning(w);
    }
    if args.bg {
        return match service.start_background(resolved.spec) {
            Ok(record) => {
                super::run::print_started(&record, args.json);
                exit::OK
            }
            Err(e) => super::fail(&e),
        };
    }
    let mut progress = Progress::new(!args.json);
    let outcome = service.run_foreground(resolved.spec, &mut progress);
    progress.finish();
    let (record, notes) = match outcome {
        Ok(done) => done,
        Err(e) => return super::fail(&e),
    };
    for n in notes {
        output::warning(n);
    }
    if args.json {
        output::json(&record);
    } else {
        print!("{}", report::render(&record, output::stdout_color()));
    }
    record.exit_code()
}
