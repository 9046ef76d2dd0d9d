//! A review panel (`review --panel a,b,c`): reviewers on different backends review the same
//! package at once, as one group, and their verdicts merge into the strictest. Each reviewer's
//! own verdict and answer stay on record; the panel says how many agree with the merged one.

use std::time::Instant;

use pitroom_core::verdict::{strictest, Verdict};
use pitroom_core::{RunRecord, RunState};
use serde::Serialize;

use crate::runs::Selector;
use crate::{ReviewRequest, Service, ServiceError};

/// One reviewer's part of a panel.
#[derive(Debug, Clone, Serialize)]
pub struct Seat {
    pub run: String,
    /// `backend[:model]`.
    pub worker: String,
    pub state: RunState,
    /// `None` when the reviewer gave no verdict line (its review failed).
    pub verdict: Option<Verdict>,
    /// Why the review failed, when it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What a panel concluded.
#[derive(Debug, Clone, Serialize)]
pub struct Panel {
    pub group: String,
    /// What was reviewed (a run id, `A..B`, `uncommitted`).
    pub review_of: String,
    pub seats: Vec<Seat>,
    /// The strictest of the seats' verdicts; `None` when no reviewer gave one.
    pub verdict: Option<Verdict>,
    /// Reviewers whose verdict says the same as the merged one on spec and quality.
    pub agree: usize,
    /// Reviewers who gave a verdict.
    pub voted: usize,
}

impl Panel {
    /// The panel of `records`, the reviews of one group.
    pub fn of(group: &str, records: &[RunRecord]) -> Panel {
        let seats: Vec<Seat> = records
            .iter()
            .map(|r| Seat {
                run: r.id.clone(),
                worker: r.worker_target(),
                state: r.state,
                verdict: r.verdict.clone(),
                error: r.error.clone(),
            })
            .collect();
        let verdicts: Vec<&Verdict> = seats.iter().filter_map(|s| s.verdict.as_ref()).collect();
        let verdict = strictest(verdicts.iter().copied());
        let agree = verdict.as_ref().map_or(0, |m| {
            verdicts
                .iter()
                .filter(|v| v.spec_pass == m.spec_pass && v.approved == m.approved)
                .count()
        });
        Panel {
            group: group.to_string(),
            review_of: records
                .iter()
                .find_map(|r| r.spec.review_of.clone())
                .unwrap_or_default(),
            voted: verdicts.len(),
            seats,
            verdict,
            agree,
        }
    }

    /// The panel happened when every reviewer ended and at least one gave a verdict.
    pub fn happened(&self) -> bool {
        self.voted > 0 && self.seats.iter().all(|s| !s.state.is_active())
    }
}

impl Service {
    /// Starts every reviewer of a panel in the background, as one group; returns the group.
    pub fn start_panel(
        &self,
        review: &ReviewRequest,
    ) -> Result<(String, Vec<RunRecord>, Vec<String>), ServiceError> {
        let (group, runs) = self.prepare_panel(review)?;
        let mut started = Vec::new();
        let mut warnings = Vec::new();
        for resolved in runs {
            warnings.extend(resolved.warnings);
            started.push(self.start_background(resolved.spec)?);
        }
        Ok((group, started, warnings))
    }

    /// The panel of `group` as it stands at `deadline`: waits for its reviewers until then.
    pub fn panel(&self, group: &str, deadline: Instant) -> Panel {
        let outcome = self.wait(&Selector::Group(group.to_string()), deadline, false);
        Panel::of(group, &outcome.records)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pitroom_core::RunSpec;
    use pitroom_workers::Mode;

    fn review(id: &str, model: &str, verdict: Option<Verdict>) -> RunRecord {
        let spec = RunSpec {
            model: Some(model.into()),
            review_of: Some("uncommitted".into()),
            ..RunSpec::new("review", Mode::Read, "opencode", "/tmp")
        };
        let mut r = RunRecord::new(
            id.into(),
            spec,
            "2026-11-30T00:00:00Z".parse().expect("a stamp"),
        );
        r.state = if verdict.is_some() {
            RunState::Done
        } else {
            RunState::Failed
        };
        r.verdict = verdict;
        r
    }

    fn verdict(spec_pass: bool, approved: bool, important: u32) -> Verdict {
        Verdict {
            spec_pass,
            approved,
            critical: 0,
            important,
            minor: 0,
        }
    }

    #[test]
    fn a_panel_keeps_each_seat_and_counts_who_agrees_with_the_strictest_verdict() {
        let records = [
            review("a", "m/a", Some(verdict(true, true, 0))),
            review("b", "m/b", Some(verdict(true, false, 2))),
            review("c", "m/c", Some(verdict(true, false, 1))),
            review("d", "m/d", None),
        ];
        let panel = Panel::of("panel-1", &records);
        assert_eq!(panel.seats.len(), 4);
        assert_eq!(panel.seats[1].worker, "opencode:m/b");
        assert_eq!(panel.verdict, Some(verdict(true, false, 2)));
        assert_eq!((panel.agree, panel.voted), (2, 3));
        assert_eq!(panel.review_of, "uncommitted");
        assert!(panel.happened());
        assert!(
            !Panel::of("p", &records[3..]).happened(),
            "no verdict at all"
        );
    }
}
