//! A race (`run --race a,b,c "task"`): the same task in several isolated copies at once, one per
//! target, as one group; each contender verified (and, with `--review`, reviewed), and the
//! winner picked by one rule (docs/race.md): a finished run with changes whose check passed,
//! then the cleaner review verdict, then fewer issues, then the smaller diff, then the faster.
//! The winner is what `apply` lands; the others stay until `discard`.

use std::cmp::Ordering;
use std::time::Instant;

use pitroom_core::verdict::Verdict;
use pitroom_core::{RunRecord, RunState};
use pitroom_workers::Mode;
use serde::Serialize;

use crate::runs::Selector;
use crate::{ReviewRequest, RunRequest, Service, ServiceError};

/// The most contenders a race may have: each is a full worker session in its own copy.
pub const MAX_CONTENDERS: usize = 5;

/// One contender of a race, as the winner rule sees it.
#[derive(Debug, Clone, Serialize)]
pub struct Contender {
    pub run: String,
    /// `backend[:model]`.
    pub worker: String,
    pub state: RunState,
    /// Whether its `--verify` passed; `None` without one.
    pub verify: Option<bool>,
    /// Its review's verdict (`--review`); `None` without one.
    pub verdict: Option<Verdict>,
    /// The review run, when there was one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub review: Option<String>,
    pub files: usize,
    /// Lines added and deleted.
    pub diff_lines: u64,
    pub duration_ms: Option<u64>,
}

impl Contender {
    fn of(record: &RunRecord, review: Option<&RunRecord>) -> Contender {
        Contender {
            run: record.id.clone(),
            worker: record.worker_target(),
            state: record.state,
            verify: record.verify.as_ref().map(|v| v.passed),
            verdict: review.and_then(|r| r.verdict.clone()),
            review: review.map(|r| r.id.clone()),
            files: record.changes.len(),
            diff_lines: record
                .changes
                .iter()
                .map(|c| c.added.unwrap_or(0) + c.deleted.unwrap_or(0))
                .sum(),
            duration_ms: record.duration_ms(),
        }
    }

    /// May it win at all: it finished done (a failed check fails the run) with changes.
    fn eligible(&self) -> bool {
        self.state == RunState::Done && self.files > 0 && self.verify != Some(false)
    }
}

/// How a race ended.
#[derive(Debug, Clone, Serialize)]
pub struct Race {
    pub group: String,
    /// The contenders, best first.
    pub contenders: Vec<Contender>,
    /// The winner's run id; `None` when no contender may win.
    pub winner: Option<String>,
    /// Why the winner won (or why nobody did), in a few words.
    pub why: String,
}

impl Race {
    /// Ranks the contenders of a race by the winner rule.
    pub fn rank(group: &str, mut contenders: Vec<Contender>) -> Race {
        contenders.sort_by(compare);
        let winner = contenders.first().filter(|c| c.eligible()).cloned();
        let why = match &winner {
            None => "no contender finished with changes and a passing check".to_string(),
            Some(w) => match contenders.get(1) {
                None => "the only contender".to_string(),
                Some(next) => why_ahead(w, next),
            },
        };
        Race {
            group: group.to_string(),
            winner: winner.map(|w| w.run),
            contenders,
            why,
        }
    }
}

/// The winner rule, as an order: the better contender first.
fn compare(a: &Contender, b: &Contender) -> Ordering {
    b.eligible()
        .cmp(&a.eligible())
        .then_with(|| verdict_rank(a).cmp(&verdict_rank(b)))
        .then_with(|| issues(a).cmp(&issues(b)))
        .then_with(|| a.diff_lines.cmp(&b.diff_lines))
        .then_with(|| {
            a.duration_ms
                .unwrap_or(u64::MAX)
                .cmp(&b.duration_ms.unwrap_or(u64::MAX))
        })
        .then_with(|| a.run.cmp(&b.run))
}

/// A clean verdict before one that asks for fixes, before none.
fn verdict_rank(c: &Contender) -> u8 {
    match &c.verdict {
        Some(v) if v.clean() => 0,
        Some(_) => 1,
        None => 2,
    }
}

/// Issues by severity, the gravest first; none counted without a verdict.
fn issues(c: &Contender) -> (u32, u32, u32) {
    c.verdict
        .as_ref()
        .map_or((0, 0, 0), |v| (v.critical, v.important, v.minor))
}

/// The first rule that puts `winner` ahead of `next`.
fn why_ahead(winner: &Contender, next: &Contender) -> String {
    if !next.eligible() {
        return format!(
            "the only contender that finished with changes and a passing check ({} did not)",
            next.worker
        );
    }
    if verdict_rank(winner) != verdict_rank(next) {
        return "its review was cleaner".to_string();
    }
    if issues(winner) != issues(next) {
        let (c, i, m) = issues(winner);
        let (nc, ni, nm) = issues(next);
        return format!(
            "fewer review issues (critical/important/minor {c}/{i}/{m} against {nc}/{ni}/{nm})"
        );
    }
    if winner.diff_lines != next.diff_lines {
        return format!(
            "the smaller diff ({} lines against {})",
            winner.diff_lines, next.diff_lines
        );
    }
    "as good, and it finished first".to_string()
}

impl Service {
    /// Starts one isolated background run per target on the same task, as one race group.
    pub fn start_race(
        &self,
        template: &RunRequest,
        targets: &[String],
    ) -> Result<(String, Vec<RunRecord>, Vec<String>), ServiceError> {
        let targets = match targets {
            [count] if count.trim().parse::<usize>().is_ok() => {
                self.chain_targets(template, count.trim().parse().unwrap_or(0))?
            }
            _ => targets.to_vec(),
        };
        let targets = contenders(&targets)?;
        if matches!(template.mode, Some(Mode::Read | Mode::Write)) {
            return Err(ServiceError::usage(
                "a race runs each contender in its own isolated copy: drop -r/-w (it is -i)",
            ));
        }
        if template.continue_run.is_some() {
            return Err(ServiceError::usage(
                "a race starts fresh sessions; it cannot follow up a run",
            ));
        }
        let group = format!("race-{}", crate::wall_stamp());
        let mut resolved = Vec::new();
        let mut warnings = Vec::new();
        // Resolve every contender before starting any: a bad target starts nothing.
        for target in &targets {
            let request = RunRequest {
                mode: Some(Mode::Isolate),
                worker: Some(target.clone()),
                model: None,
                tier: None,
                background: true,
                // Each contender is its target: falling back would make two of them one.
                no_fallback: true,
                group: Some(group.clone()),
                ..template.clone()
            };
            let mut one = self.resolve(&request)?;
            one.spec.race = true;
            // The race is followed in the foreground: its table is the news.
            one.spec.notify = false;
            warnings.append(&mut one.warnings);
            resolved.push(one.spec);
        }
        let mut started = Vec::new();
        for spec in resolved {
            started.push(self.start_background(spec)?);
        }
        warnings.dedup();
        Ok((group, started, warnings))
    }

    /// The first `count` targets of the chain the template resolves to: its target, then its
    /// fallbacks (`--race 3`).
    fn chain_targets(
        &self,
        template: &RunRequest,
        count: usize,
    ) -> Result<Vec<String>, ServiceError> {
        let spec = self.resolve(template)?.spec;
        let chain: Vec<String> = std::iter::once(spec.worker().to_string())
            .chain(spec.fallback.iter().map(ToString::to_string))
            .take(count)
            .collect();
        if chain.len() < count {
            return Err(ServiceError::usage(format!(
                "--race {count}: the configured chain has {} target(s) (the worker and its `fallback` list); name the targets instead: --race a,b",
                chain.len()
            )));
        }
        Ok(chain)
    }

    /// Waits for the race's contenders (and, with `review`, has each finished contender with
    /// changes reviewed), then ranks them.
    pub fn finish_race(
        &self,
        group: &str,
        review: bool,
        deadline: Instant,
    ) -> Result<Race, ServiceError> {
        let selector = Selector::Group(group.to_string());
        let records = self.wait(&selector, deadline, false).records;
        if review {
            let mut reviews = Vec::new();
            for record in records
                .iter()
                .filter(|r| r.state == RunState::Done && !r.changes.is_empty())
            {
                let request = ReviewRequest {
                    run: Some(record.id.clone()),
                    background: true,
                    ..ReviewRequest::default()
                };
                let resolved = self.prepare_review(&request)?;
                reviews.push(self.start_background(resolved.spec)?.id);
            }
            if !reviews.is_empty() {
                self.wait(&Selector::Runs(reviews), deadline, false);
            }
        }
        Ok(self.race(group))
    }

    /// The race of `group` as its records stand now.
    pub fn race(&self, group: &str) -> Race {
        let home = self.home();
        let (records, _) = self.load_many(&home.group_ids(group));
        let contenders = records
            .iter()
            .filter(|r| r.spec.race)
            .map(|r| {
                let review = self.latest_review_of(&r.id);
                Contender::of(r, review.as_ref())
            })
            .collect();
        Race::rank(group, contenders)
    }

    /// The winner of the race `record` ran in, when it is a contender of one that has a winner.
    pub fn race_winner_of(&self, record: &RunRecord) -> Option<String> {
        let group = record.spec.group.as_deref().filter(|_| record.spec.race)?;
        self.race(group).winner
    }
}

/// The race's targets, each once; two to [`MAX_CONTENDERS`] of them.
fn contenders(given: &[String]) -> Result<Vec<String>, ServiceError> {
    let targets = crate::request::distinct_targets(given);
    if !(2..=MAX_CONTENDERS).contains(&targets.len()) {
        return Err(ServiceError::usage(format!(
            "--race takes 2 to {MAX_CONTENDERS} different targets, comma-separated (e.g. --race opencode,codex), or a count of the configured chain; got {}",
            targets.len()
        )));
    }
    Ok(targets)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contender(run: &str, state: RunState, verify: Option<bool>, lines: u64) -> Contender {
        Contender {
            run: run.into(),
            worker: format!("opencode:{run}"),
            state,
            verify,
            verdict: None,
            review: None,
            files: usize::from(lines > 0),
            diff_lines: lines,
            duration_ms: Some(1000),
        }
    }

    fn verdict(approved: bool, important: u32) -> Verdict {
        Verdict {
            spec_pass: true,
            approved,
            critical: 0,
            important,
            minor: 0,
        }
    }

    #[test]
    fn only_a_finished_contender_with_changes_and_a_passing_check_may_win() {
        let race = Race::rank(
            "race-1",
            vec![
                contender("a", RunState::Failed, Some(false), 3),
                contender("b", RunState::Done, Some(true), 40),
                contender("c", RunState::Done, None, 0),
            ],
        );
        assert_eq!(race.winner.as_deref(), Some("b"));
        assert!(
            race.why.starts_with("the only contender that finished"),
            "{}",
            race.why
        );
        let none = Race::rank(
            "race-2",
            vec![contender("a", RunState::Failed, Some(false), 3)],
        );
        assert_eq!(none.winner, None);
    }

    #[test]
    fn the_review_verdict_then_the_issues_then_the_diff_then_the_time_decide() {
        let mut clean = contender("a", RunState::Done, Some(true), 50);
        clean.verdict = Some(verdict(true, 0));
        let mut fixes = contender("b", RunState::Done, Some(true), 5);
        fixes.verdict = Some(verdict(false, 1));
        let race = Race::rank("r", vec![fixes.clone(), clean.clone()]);
        assert_eq!(race.winner.as_deref(), Some("a"));
        assert_eq!(race.why, "its review was cleaner");

        let mut fewer = fixes.clone();
        fewer.run = "c".into();
        fewer.verdict = Some(verdict(false, 0));
        let race = Race::rank("r", vec![fixes.clone(), fewer]);
        assert_eq!(race.winner.as_deref(), Some("c"));
        assert!(race.why.starts_with("fewer review issues"), "{}", race.why);

        let small = contender("d", RunState::Done, Some(true), 4);
        let large = contender("e", RunState::Done, Some(true), 9);
        let race = Race::rank("r", vec![large, small]);
        assert_eq!(race.winner.as_deref(), Some("d"));
        assert_eq!(race.why, "the smaller diff (4 lines against 9)");

        let mut slow = contender("f", RunState::Done, None, 4);
        slow.duration_ms = Some(9000);
        let fast = contender("g", RunState::Done, None, 4);
        let race = Race::rank("r", vec![slow, fast]);
        assert_eq!(race.winner.as_deref(), Some("g"));
    }
}
