//! `pitroom review`: a second model reviews a run's change or a commit range.

use pitroom_service::ReviewRequest;

use crate::cli::ReviewArgs;

pub(super) fn review(args: ReviewArgs) -> i32 {
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
    match service.prepare_review(&request) {
        Ok(resolved) => super::run::carry_out(&service, resolved, args.bg, args.json),
        Err(e) => super::fail(&e),
    }
}
