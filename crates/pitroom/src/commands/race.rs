//! `pitroom run --race a,b,c "task"`: the contenders, started together and waited for, then
//! the table of how each did and which one won, and why.

use std::time::{Duration, Instant};

use pitroom_core::duration::format_duration;
use pitroom_core::exit::Exit;
use pitroom_service::{Race, RunRequest, Service};

use super::Outcome;
use crate::output::{self, say, tell};

pub(super) fn race(
    service: &Service,
    request: &RunRequest,
    targets: &[String],
    review: bool,
    json: bool,
) -> Outcome {
    let (group, started, warnings) = service.start_race(request, targets)?;
    for w in &warnings {
        output::warning(w);
    }
    tell!(
        "pitroom: {} contenders started in race {group} (pitroom watch -g {group} follows them)",
        started.len()
    );
    // Each contender has its own time limit; the wait only has to outlast them.
    let race = service.finish_race(
        &group,
        review,
        Instant::now() + Duration::from_secs(7 * 24 * 3600),
    )?;
    if json {
        output::json(&race);
    } else {
        say!("{}", race_report(&race));
    }
    Ok(if race.winner.is_some() {
        Exit::Ok
    } else {
        Exit::Failed
    })
}

/// The contenders, best first, and the winner with the reason it won.
fn race_report(race: &Race) -> String {
    let mut lines = vec![format!("pitroom race {}", race.group)];
    for (place, c) in race.contenders.iter().enumerate() {
        let check = match c.verify {
            Some(true) => "verify ✔",
            Some(false) => "verify ✘",
            None => "no verify",
        };
        let review = c
            .verdict
            .as_ref()
            .map(|v| format!(" · review {}", v.line()))
            .unwrap_or_default();
        let took = c
            .duration_ms
            .map(|ms| format_duration(Duration::from_millis(ms)))
            .unwrap_or_else(|| "–".into());
        lines.push(format!(
            "   {}. {} ({}): {} · {check} · {} file(s), {} line(s) · {took}{review}",
            place + 1,
            c.worker,
            c.run,
            c.state.as_str(),
            c.files,
            c.diff_lines
        ));
    }
    match &race.winner {
        Some(winner) => {
            lines.push(format!("── winner: {winner}: {}", race.why));
            lines.push(format!(
                "── review it: pitroom show --patch {winner}   · land it: pitroom apply {winner} (or: pitroom apply -g {})",
                race.group
            ));
            lines.push("── the others stay until: pitroom discard RUN".to_string());
        }
        None => lines.push(format!("── no winner: {}", race.why)),
    }
    lines.join("\n")
}
