//! Spend: what a run has spent against its budget (`crate::budget`, docs/budgets.md), and what
//! the others its caps span have — its crew's runs and today's other runs, read from their
//! records (every run with a budget keeps its spend there as it goes). The stream
//! (`stream.rs`) asks after every event; the life cycle asks once before the worker starts.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::stream::Stream;
use super::Engine;
use crate::budget::{self, Spend};
use crate::record::{RunRecord, Tally};

/// How often a run reads what the others its caps span have spent.
const OTHERS_EVERY: Duration = Duration::from_millis(500);

/// A run's spend as its budget counts it, one attempt at a time: what earlier attempts spent
/// is settled at their targets' prices, and this attempt's tokens are priced at its own.
pub(super) struct Meter {
    settled: Spend,
    settled_tally: Tally,
    /// What the run's crew's other runs had spent when last read.
    group: Spend,
    /// What today's other runs had spent when last read.
    today: Today,
    others_read: Option<Instant>,
}

impl Meter {
    pub(super) fn new(settled: Spend, settled_tally: Tally) -> Meter {
        Meter {
            settled,
            settled_tally,
            group: Spend::default(),
            today: Today::default(),
            others_read: None,
        }
    }

    /// The meter of an attempt about to start: what the run spent before it is settled, and
    /// the attempt's spend is its tally past a baseline — the run's tally so far and, for a CLI
    /// that reports a resumed session's total, what the session had used already.
    pub(super) fn for_attempt(record: &RunRecord, stream: &Stream) -> Meter {
        let mut baseline = stream.tally.clone();
        baseline.usage.add(&stream.session_usage_before);
        Meter::new(record.spend.unwrap_or_default(), baseline)
    }

    /// The run's own spend, with `tally` the run's so far (this attempt's included).
    pub(super) fn own(&self, record: &RunRecord, tally: &Tally) -> Spend {
        let price = record.spec.worker_prices.as_ref().and_then(|prices| {
            prices
                .lookup(record.backend(), record.model_ran())
                .map(|(_, p)| p)
        });
        let this_attempt = budget::tally_since(&self.settled_tally, tally);
        let mut spend = self.settled;
        spend.add(&Spend {
            tokens: this_attempt.usage.total(),
            usd: budget::cost_of(&this_attempt, price.as_ref()),
        });
        spend
    }

    /// Reads what the others the run's caps span have spent, at most every `OTHERS_EVERY`.
    pub(super) fn refresh(&mut self, engine: &Engine, record: &RunRecord) {
        let budget = &record.spec.budget;
        if !(budget.spans_group() || budget.daily_usd.is_some())
            || self.others_read.is_some_and(|t| t.elapsed() < OTHERS_EVERY)
        {
            return;
        }
        self.others_read = Some(Instant::now());
        if let (true, Some(group)) = (budget.spans_group(), &record.spec.group) {
            self.group = group_spend(engine, group, &record.id);
        }
        if budget.daily_usd.is_some() {
            self.today.refresh(engine, &record.id);
        }
    }

    /// The cap the run has reached with `own` spent, if it has. Today's spend is the greater
    /// of the history's when the run was asked for and what today's other runs' records say
    /// now, so runs that go on at the same time count each other.
    pub(super) fn reached(&self, record: &RunRecord, own: &Spend) -> Option<String> {
        let mut caps = record.spec.budget.clone();
        caps.spent_today_usd = caps.spent_today_usd.max(self.today.spent);
        budget::reached(&caps, own, &self.group)
    }
}

/// Today's other runs (by their ids, which start with the UTC date they were made), for
/// `budget.daily_usd`: a finished run's cost is read once, a running run's spend every time.
#[derive(Default)]
struct Today {
    finished: HashMap<String, f64>,
    spent: f64,
}

impl Today {
    fn refresh(&mut self, engine: &Engine, own_id: &str) {
        let prefix = crate::clock::now().strftime("%Y%m%d-").to_string();
        // A state dir that cannot be listed keeps the last figure.
        let Ok(entries) = std::fs::read_dir(engine.home.runs()) else {
            return;
        };
        let mut running = 0.0;
        for entry in entries.flatten() {
            let Some(id) = entry.file_name().to_str().map(str::to_string) else {
                continue;
            };
            if !id.starts_with(&prefix) || id == own_id || self.finished.contains_key(&id) {
                continue;
            }
            // A run without a record yet has spent nothing; one being replaced is read again.
            let Ok(other) = engine.home.load(&id) else {
                continue;
            };
            let usd = spent_usd(&other);
            if other.state.is_active() {
                running += usd;
            } else {
                self.finished.insert(id, usd);
            }
        }
        self.spent = self.finished.values().sum::<f64>() + running;
    }
}

/// What another run has spent in USD, as far as its record tells: the greatest of its
/// receipt's cost, its CLI's own and its budget's count (none is $0).
pub(super) fn spent_usd(record: &RunRecord) -> f64 {
    [
        record.receipt.as_ref().and_then(|r| r.cost),
        record.tally.cost,
        record.spend.and_then(|s| s.usd),
    ]
    .into_iter()
    .flatten()
    .fold(0.0, f64::max)
}

/// What the runs of `group` other than `own_id` have spent, from their records.
pub(super) fn group_spend(engine: &Engine, group: &str, own_id: &str) -> Spend {
    let mut total = Spend::default();
    for id in engine.home.group_ids(group) {
        if id == own_id {
            continue;
        }
        // A record being replaced is read again on the next refresh.
        let Ok(other) = engine.home.load(&id) else {
            continue;
        };
        total.add(
            &other.spend.unwrap_or(Spend {
                tokens: other.tally.usage.total(),
                usd: other
                    .receipt
                    .as_ref()
                    .and_then(|r| r.cost)
                    .or(other.tally.cost),
            }),
        );
    }
    total
}

/// The cap a run with a crew's or the day's budget has reached before its worker started, if
/// it has: its own spend is nothing yet, the others' may be the whole cap.
pub(super) fn budget_spent_before_start(engine: &Engine, record: &mut RunRecord) -> Option<String> {
    if record.spec.budget.is_unset() {
        return None;
    }
    let nothing = Spend {
        tokens: 0,
        usd: record.spec.budget.counts_dollars().then_some(0.0),
    };
    record.spend = Some(nothing);
    let mut meter = Meter::new(nothing, Tally::default());
    meter.refresh(engine, record);
    meter.reached(record, &nothing)
}
