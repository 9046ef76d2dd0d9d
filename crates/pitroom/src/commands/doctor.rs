//! `pitroom doctor`: prints the run library's check-up (`pitroom_service::doctor`), adds the
//! host integration's own check (skills loaded twice) and, with `--probe`, real runs.

use pitroom_service::doctor::{healthy, Check};
use pitroom_service::Exit;
use serde_json::json;

use super::Outcome;
use crate::cli::DoctorArgs;
use crate::output;
use crate::output::say;

pub(super) fn doctor(args: DoctorArgs) -> Outcome {
    let service = super::service()?;
    let mut checks = service.doctor();
    checks.push(skills_check());
    let probes = if args.probe {
        match service.probe(&args.workers, &mut super::probe::Shown::new(!args.json)) {
            Ok(probes) => Some(probes),
            Err(why) => {
                checks.push(Check::new("probe", false, true, why));
                None
            }
        }
    } else {
        None
    };
    let healthy = healthy(&checks) && probes.iter().flatten().all(|p| p.ok || !p.essential);
    if args.json {
        let mut report = json!({"healthy": healthy, "checks": checks});
        if args.probe {
            report["probes"] = json!(probes.unwrap_or_default());
        }
        output::json(&report);
    } else {
        for c in &checks {
            let mark = match (c.ok, c.essential) {
                (true, _) => "✔",
                (false, true) => "✘",
                (false, false) => "·",
            };
            say!("{mark} {:<12} {}", c.name, c.detail);
        }
        if let Some(probes) = &probes {
            super::probe::print(probes);
        }
    }
    // An unhealthy check-up is its outcome, already printed check by check.
    Ok(if healthy { Exit::Ok } else { Exit::Refused })
}

/// Skills that would load twice (a plugin and `pitroom install`'s links) reach the agent twice.
fn skills_check() -> Check {
    let (ok, detail) = crate::integrations::install::doctor_skills();
    Check::new("skills", ok, false, detail)
}
