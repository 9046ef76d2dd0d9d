//! `pitroom review`: a second model reviews a run's change or a commit range.

use pitroom_service::ReviewRequest;

use super::Outcome;
use crate::cli::ReviewArgs;

pub(super) fn review(args: ReviewArgs) -> Outcome {
    let service = super::service()?;
    let request = ReviewRequest {
        run: args.run.clone(),
        range: args.range.clone(),
        worker: args.worker.clone(),
        tier: args.tier.clone(),
        dir: args.dir.clone(),
        timeout: args.timeout.clone(),
        background: args.bg,
    };
    let resolved = service.prepare_review(&request)?;
    super::run::carry_out(&service, resolved, args.bg, args.json)
}
