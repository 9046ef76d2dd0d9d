//! Budgets (docs/budgets.md): hard caps on what a run, a crew or a day may spend. The pure part
//! lives here — what a run has spent, which cap it reached, which target has no price — and
//! the run's stream (`run/stream.rs`) applies it after every event of the worker.

use pitroom_workers::Usage;
use serde::{Deserialize, Serialize};

use crate::receipt::{primary_cost, Price, WorkerPrices};
use crate::record::{ChainTarget, Tally};

/// The caps a run is held to. Every cap is reached at `spent >= cap`; `None` is no cap.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Budget {
    /// `--max-usd`: the run's own spend.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_usd: Option<f64>,
    /// `--max-tokens`: the run's own tokens, every kind its CLI counts (input, output,
    /// reasoning, cache reads and writes), as the receipt's worker tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// `crew --max-usd`: the spend of every run of the run's group together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_max_usd: Option<f64>,
    /// `crew --max-tokens`: the tokens of every run of the run's group together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_max_tokens: Option<u64>,
    /// Config `budget.daily_usd`: today's recorded spend (UTC) plus this run's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daily_usd: Option<f64>,
    /// Today's spend in the history when the run was asked for (with `daily_usd`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub spent_today_usd: f64,
}

fn is_zero(n: &f64) -> bool {
    *n == 0.0
}

impl Budget {
    /// No cap at all (the record leaves the budget out).
    pub fn is_unset(&self) -> bool {
        self.max_usd.is_none()
            && self.max_tokens.is_none()
            && self.group_max_usd.is_none()
            && self.group_max_tokens.is_none()
            && self.daily_usd.is_none()
    }

    /// Whether a cap is in dollars, so every target the run may use needs a known price.
    pub fn counts_dollars(&self) -> bool {
        self.max_usd.is_some() || self.group_max_usd.is_some() || self.daily_usd.is_some()
    }

    /// Whether a cap spans the run's group.
    pub fn spans_group(&self) -> bool {
        self.group_max_usd.is_some() || self.group_max_tokens.is_some()
    }
}

/// What a run has spent so far: its worker's tokens and, where a price is known, dollars.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Spend {
    pub tokens: u64,
    /// USD; `None` when no price was known (a run without a dollar cap, no configured price).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usd: Option<f64>,
}

impl Spend {
    /// Adds another run's spend (a crew's runs together); dollars stay unknown only when
    /// neither knows them.
    pub fn add(&mut self, other: &Spend) {
        self.tokens = self.tokens.saturating_add(other.tokens);
        if let Some(usd) = other.usd {
            *self.usd.get_or_insert(0.0) += usd;
        }
    }
}

/// What `tally` cost in USD: the greater of what the CLI reported and its usage at `price`.
/// The greater, so a CLI that reports $0 for a model it does not know (OpenCode does) never
/// counts as free, and a CLI whose own figure is higher than the configured price is believed.
/// `None` when neither figure exists.
pub fn cost_of(tally: &Tally, price: Option<&Price>) -> Option<f64> {
    let priced = price.map(|p| primary_cost(&tally.usage, p));
    match (tally.cost, priced) {
        (Some(reported), Some(priced)) => Some(reported.max(priced)),
        (reported, priced) => reported.or(priced),
    }
}

/// `now` less `before`, for the part of a run's tally one attempt added.
pub fn tally_since(before: &Tally, now: &Tally) -> Tally {
    let minus = |a: u64, b: u64| a.saturating_sub(b);
    Tally {
        usage: Usage {
            input: minus(now.usage.input, before.usage.input),
            output: minus(now.usage.output, before.usage.output),
            reasoning: minus(now.usage.reasoning, before.usage.reasoning),
            cache_read: minus(now.usage.cache_read, before.usage.cache_read),
            cache_write: minus(now.usage.cache_write, before.usage.cache_write),
        },
        steps: now.steps.saturating_sub(before.steps),
        tool_calls: now.tool_calls.saturating_sub(before.tool_calls),
        failed_calls: now.failed_calls.saturating_sub(before.failed_calls),
        denied_calls: now.denied_calls.saturating_sub(before.denied_calls),
        cost: match (now.cost, before.cost) {
            (Some(n), Some(b)) => Some((n - b).max(0.0)),
            (n, _) => n,
        },
    }
}

/// The cap a run reached, in the words its report uses: which cap, what was spent against it.
/// `own` is the run's spend; `group` its group's other runs' together (zero outside a crew).
pub fn reached(budget: &Budget, own: &Spend, group: &Spend) -> Option<String> {
    let usd = own.usd.unwrap_or(0.0);
    if let Some(cap) = budget.max_usd.filter(|cap| usd >= *cap) {
        return Some(format!(
            "spent {} of its {} cap",
            dollars(usd),
            dollars(cap)
        ));
    }
    if let Some(cap) = budget.max_tokens.filter(|cap| own.tokens >= *cap) {
        return Some(format!("used {} tokens of its {} cap", own.tokens, cap));
    }
    let mut crew = *group;
    crew.add(own);
    let crew_usd = crew.usd.unwrap_or(0.0);
    if let Some(cap) = budget.group_max_usd.filter(|cap| crew_usd >= *cap) {
        return Some(format!(
            "its crew spent {} of the crew's {} cap (this run {})",
            dollars(crew_usd),
            dollars(cap),
            dollars(usd)
        ));
    }
    if let Some(cap) = budget.group_max_tokens.filter(|cap| crew.tokens >= *cap) {
        return Some(format!(
            "its crew used {} tokens of the crew's {} cap (this run {})",
            crew.tokens, cap, own.tokens
        ));
    }
    let today = budget.spent_today_usd + usd;
    if let Some(cap) = budget.daily_usd.filter(|cap| today >= *cap) {
        return Some(format!(
            "today's spend reached {} of the daily {} cap (budget.daily_usd; this run {})",
            dollars(today),
            dollars(cap),
            dollars(usd)
        ));
    }
    None
}

/// Dollars as budgets show them: four decimals below a dollar, where worker runs mostly are.
pub fn dollars(usd: f64) -> String {
    if usd.abs() < 1.0 {
        format!("${usd:.4}")
    } else {
        format!("${usd:.2}")
    }
}

/// The targets of a run's chain that have no price in `prices`, each as the one config line
/// that prices it. A budget in dollars cannot count a run whose target has none: unknown cost
/// is never $0.
pub fn unpriced_targets(chain: &[ChainTarget], prices: &WorkerPrices) -> Vec<String> {
    chain
        .iter()
        .filter(|t| prices.lookup(&t.backend, t.model.as_deref()).is_none())
        .map(|t| price_line(&t.backend, t.model.as_deref()))
        .collect()
}

/// The config line that prices `backend` running `model` (the backend alone when no model is
/// pinned: the CLI's default model is not known before it runs).
pub fn price_line(backend: &str, model: Option<&str>) -> String {
    let key = match model {
        Some(m) => format!("{backend}:{m}"),
        None => backend.to_string(),
    };
    format!("worker_prices.\"{key}\" = {{ input = IN, output = OUT }}   # USD per million tokens")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tally(input: u64, output: u64, cost: Option<f64>) -> Tally {
        Tally {
            usage: Usage {
                input,
                output,
                ..Usage::default()
            },
            cost,
            ..Tally::default()
        }
    }

    const PRICE: Price = Price {
        input: 1.0,
        output: 4.0,
        cached: 0.1,
    };

    #[test]
    fn cost_of_usage_is_the_greater_of_the_clis_figure_and_the_configured_price() {
        // 1M input at $1 and 0.5M output at $4: $3.
        let t = tally(1_000_000, 500_000, None);
        assert_eq!(cost_of(&t, Some(&PRICE)), Some(3.0));
        // A CLI that says $0 (a model it cannot price) is not believed over the price.
        assert_eq!(
            cost_of(&tally(1_000_000, 500_000, Some(0.0)), Some(&PRICE)),
            Some(3.0)
        );
        // A CLI that says more is.
        assert_eq!(
            cost_of(&tally(1_000_000, 500_000, Some(5.0)), Some(&PRICE)),
            Some(5.0)
        );
        assert_eq!(cost_of(&tally(10, 10, Some(0.2)), None), Some(0.2));
        assert_eq!(cost_of(&t, None), None);
    }

    #[test]
    fn a_cap_is_reached_at_the_cap_not_only_past_it() {
        let budget = Budget {
            max_tokens: Some(100),
            ..Budget::default()
        };
        let none = Spend::default();
        let under = Spend {
            tokens: 99,
            usd: None,
        };
        assert_eq!(reached(&budget, &under, &none), None);
        let at = Spend {
            tokens: 100,
            usd: None,
        };
        assert_eq!(
            reached(&budget, &at, &none).as_deref(),
            Some("used 100 tokens of its 100 cap")
        );
        let dollars_only = Budget {
            max_usd: Some(0.01),
            ..Budget::default()
        };
        let spent = Spend {
            tokens: 5,
            usd: Some(0.0125),
        };
        assert_eq!(
            reached(&dollars_only, &spent, &none).as_deref(),
            Some("spent $0.0125 of its $0.0100 cap")
        );
        assert_eq!(reached(&Budget::default(), &spent, &none), None);
    }

    #[test]
    fn a_crew_cap_counts_the_other_runs_and_a_daily_cap_counts_today() {
        let crew = Budget {
            group_max_usd: Some(1.0),
            ..Budget::default()
        };
        let own = Spend {
            tokens: 10,
            usd: Some(0.4),
        };
        let others = Spend {
            tokens: 30,
            usd: Some(0.5),
        };
        assert_eq!(reached(&crew, &own, &others), None);
        let more = Spend {
            tokens: 40,
            usd: Some(0.6),
        };
        assert_eq!(
            reached(&crew, &own, &more).as_deref(),
            Some("its crew spent $1.00 of the crew's $1.00 cap (this run $0.4000)")
        );
        let daily = Budget {
            daily_usd: Some(2.0),
            spent_today_usd: 1.7,
            ..Budget::default()
        };
        assert_eq!(
            reached(&daily, &own, &Spend::default()).map(|_| ()),
            Some(())
        );
        let earlier = Budget {
            spent_today_usd: 1.5,
            ..daily
        };
        assert_eq!(reached(&earlier, &own, &Spend::default()), None);
    }

    #[test]
    fn an_unpriced_target_is_named_by_the_config_line_that_prices_it() {
        let (prices, _) = WorkerPrices::from_value(&serde_json::json!({
            "opencode:a/b": {"input": 1.0, "output": 2.0},
            "codex": {"input": 1.0, "output": 2.0},
        }));
        let target = |backend: &str, model: Option<&str>| ChainTarget {
            backend: backend.into(),
            model: model.map(str::to_string),
        };
        let chain = vec![
            target("opencode", Some("a/b")),
            target("codex", Some("gpt-x")),
            target("opencode", Some("c/d")),
            target("gemini", None),
        ];
        assert_eq!(
            unpriced_targets(&chain, &prices),
            [
                "worker_prices.\"opencode:c/d\" = { input = IN, output = OUT }   # USD per million tokens",
                "worker_prices.\"gemini\" = { input = IN, output = OUT }   # USD per million tokens",
            ]
        );
    }

    #[test]
    fn the_part_of_a_tally_an_attempt_added() {
        let before = tally(100, 10, Some(0.5));
        let now = tally(250, 30, Some(0.75));
        let added = tally_since(&before, &now);
        assert_eq!((added.usage.input, added.usage.output), (150, 20));
        assert_eq!(added.cost, Some(0.25));
    }
}
