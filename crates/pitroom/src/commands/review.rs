//! `pitroom review`: a second model (or a panel of them) reviews a run's change, a commit range,
//! a branch or the uncommitted work.

use std::time::{Duration, Instant};

use pitroom_core::exit::Exit;
use pitroom_service::{Panel, ReviewRequest};

use super::Outcome;
use crate::cli::ReviewArgs;
use crate::output::{self, say, tell};

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
        uncommitted: args.uncommitted,
        base: args.base.clone(),
        focus: args.focus.clone(),
        panel: args.panel.clone(),
    };
    if !request.panel.is_empty() {
        return panel(&service, &request, args.json);
    }
    let resolved = service.prepare_review(&request)?;
    super::run::carry_out(&service, resolved, args.bg, args.json)
}

/// Starts the panel's reviewers together and waits for all of them; the panel's report.
fn panel(service: &pitroom_service::Service, request: &ReviewRequest, json: bool) -> Outcome {
    let (group, started, warnings) = service.start_panel(request)?;
    for w in &warnings {
        output::warning(w);
    }
    tell!(
        "pitroom: {} reviewers started in group {group} (pitroom watch -g {group} follows them)",
        started.len()
    );
    // Each reviewer has its own time limit; the wait only has to outlast them.
    let panel = service.panel(&group, Instant::now() + Duration::from_secs(7 * 24 * 3600));
    if json {
        output::json(&panel);
    } else {
        say!("{}", panel_report(&panel));
    }
    Ok(if panel.happened() {
        Exit::Ok
    } else {
        Exit::Failed
    })
}

/// The panel as text: one line per reviewer, then the merged verdict and who agrees with it.
fn panel_report(panel: &Panel) -> String {
    let mut lines = vec![format!(
        "pitroom review panel · {} · group {}",
        panel.review_of, panel.group
    )];
    for seat in &panel.seats {
        let said = match (&seat.verdict, &seat.error) {
            (Some(v), _) => v.line(),
            (None, Some(e)) => format!("no verdict: {}", e.lines().next().unwrap_or("")),
            (None, None) => format!("no verdict ({})", seat.state.as_str()),
        };
        lines.push(format!("   {} ({}): {said}", seat.worker, seat.run));
    }
    lines.push(match &panel.verdict {
        Some(v) => format!(
            "── panel: {} · {} of {} reviewer(s) agree (the strictest verdict wins)",
            v.line(),
            panel.agree,
            panel.voted
        ),
        None => "── panel: no reviewer gave a verdict; the review did not happen".to_string(),
    });
    lines.push(format!(
        "── each review: pitroom show RUN   · all: pitroom status -g {}",
        panel.group
    ));
    lines.join("\n")
}
