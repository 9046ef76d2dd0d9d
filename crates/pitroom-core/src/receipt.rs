//! Receipts: what the worker burned, what came back, what it saved.

use std::collections::BTreeMap;

use pitroom_workers::Usage;
use serde_json::Value;

use crate::config::Config;
use crate::record::{Receipt, RunRecord, Tally};

/// List prices in USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Price {
    pub input: f64,
    pub output: f64,
    pub cached: f64,
}

/// A named primary model and its price.
#[derive(Debug, Clone, PartialEq)]
pub struct Primary {
    pub label: String,
    pub price: Price,
}

/// Presets for the primary agent's model (list prices, USD per million tokens).
fn preset(name: &str) -> Option<Primary> {
    let (label, input, output, cached) = match name.to_ascii_lowercase().as_str() {
        "sonnet" => ("Claude Sonnet", 3.0, 15.0, 0.30),
        "opus" => ("Claude Opus", 5.0, 25.0, 0.50),
        "haiku" => ("Claude Haiku", 1.0, 5.0, 0.10),
        "gpt-5" | "gpt5" => ("GPT-5", 1.25, 10.0, 0.125),
        _ => return None,
    };
    Some(Primary {
        label: label.into(),
        price: Price {
            input,
            output,
            cached,
        },
    })
}

/// The primary's price: a custom `in,out[,cached]` (`price`) wins over the preset name
/// (`primary`). Unknown names fall back to Sonnet with a warning.
#[expect(
    clippy::expect_used,
    reason = "the sonnet preset is in the table; a test looks it up"
)]
pub fn resolve_primary(primary: &str, price: Option<&str>) -> (Primary, Option<String>) {
    if let Some(custom) = price.and_then(parse_custom) {
        return (
            Primary {
                label: format!("custom price {}", price.unwrap_or_default()),
                price: custom,
            },
            None,
        );
    }
    let mut warning =
        price.map(|p| format!("price `{p}` is not `in,out[,cached]`; using the {primary} preset"));
    let found = preset(primary).unwrap_or_else(|| {
        warning = Some(format!(
            "unknown primary `{primary}` (known: sonnet, opus, haiku, gpt-5); estimating against sonnet"
        ));
        preset("sonnet").expect("sonnet preset exists")
    });
    (found, warning)
}

fn parse_custom(text: &str) -> Option<Price> {
    let parts: Vec<f64> = text
        .split(',')
        .map(|p| p.trim().parse::<f64>())
        .collect::<Result<_, _>>()
        .ok()?;
    match parts.as_slice() {
        [i, o] => Some(Price {
            input: *i,
            output: *o,
            cached: *i / 10.0,
        }),
        [i, o, c] => Some(Price {
            input: *i,
            output: *o,
            cached: *c,
        }),
        _ => None,
    }
    .filter(|p| p.input >= 0.0 && p.output >= 0.0 && p.cached >= 0.0)
}

/// What the primary would have paid to process `usage` itself.
pub fn primary_cost(usage: &Usage, price: &Price) -> f64 {
    // In f64: the counts are whatever the CLI reported, and their u64 sum may overflow.
    let fresh_in = usage.input as f64 + usage.cache_write as f64;
    let out = usage.output as f64 + usage.reasoning as f64;
    (fresh_in * price.input + out * price.output + usage.cache_read as f64 * price.cached) / 1e6
}

/// Tokens the primary reads: the report's size at about four characters a token.
pub fn returned_tokens(report: &str) -> u64 {
    (report.chars().count() as u64).div_ceil(4).max(1)
}

/// Builds the receipt. The saving is an estimate: the primary's price for the worker's tokens,
/// minus the worker's cost, minus the primary reading the report.
pub fn receipt(tally: &Tally, report: &str, primary: &Primary) -> Receipt {
    let worker_tokens = tally.usage.total();
    let returned = returned_tokens(report);
    Receipt {
        worker_tokens,
        returned_tokens: returned,
        compression: worker_tokens as f64 / returned as f64,
        cost: tally.cost,
        primary: primary.label.clone(),
        saved: estimated_saving(&tally.usage, returned, tally.cost, primary),
    }
}

/// What the primary would have paid for the worker's tokens, minus the worker's cost (unknown
/// counts as $0, which overstates the saving), minus the primary reading the report. `None`
/// when the worker used no tokens: nothing was offloaded.
fn estimated_saving(
    usage: &Usage,
    returned: u64,
    worker_cost: Option<f64>,
    primary: &Primary,
) -> Option<f64> {
    (usage.total() > 0).then(|| {
        let reading = returned as f64 * primary.price.input / 1e6;
        primary_cost(usage, &primary.price) - worker_cost.unwrap_or(0.0) - reading
    })
}

/// The user's `worker_prices`: USD per million tokens for worker CLIs that report no cost,
/// keyed `backend:model` or `backend`.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct WorkerPrices {
    prices: BTreeMap<String, Price>,
}

impl WorkerPrices {
    /// Reads the config's `worker_prices` table, e.g.
    /// `worker_prices = { "opencode:foo/bar" = { input = 0.5, output = 1.5, cached = 0.05 } }`
    /// (`cached` defaults to a tenth of `input`). Entries that are not such a table are
    /// warnings and left out.
    pub fn from_config(config: &Config) -> (WorkerPrices, Vec<String>) {
        config
            .entries()
            .into_iter()
            .find(|e| e.key == "worker_prices")
            .map(|e| WorkerPrices::from_value(&e.value))
            .unwrap_or_default()
    }

    pub fn from_value(value: &Value) -> (WorkerPrices, Vec<String>) {
        let mut prices = BTreeMap::new();
        let mut warnings = Vec::new();
        let Some(table) = value.as_object() else {
            return (WorkerPrices { prices }, warnings);
        };
        for (key, entry) in table {
            match price_entry(entry) {
                Some(p) => {
                    prices.insert(key.clone(), p);
                }
                None => warnings.push(format!(
                    "worker_prices.\"{key}\" ignored: expected {{ input = N, output = N[, cached = N] }} in USD per million tokens"
                )),
            }
        }
        (WorkerPrices { prices }, warnings)
    }

    /// The price for `backend` running `model`: `backend:model` first, then `backend`.
    pub fn lookup(&self, backend: &str, model: Option<&str>) -> Option<(&str, Price)> {
        let exact = model.and_then(|m| self.prices.get_key_value(&format!("{backend}:{m}")));
        exact
            .or_else(|| self.prices.get_key_value(backend))
            .map(|(k, p)| (k.as_str(), *p))
    }

    pub fn is_empty(&self) -> bool {
        self.prices.is_empty()
    }
}

fn price_entry(entry: &Value) -> Option<Price> {
    let number = |k: &str| entry.get(k).and_then(Value::as_f64);
    let input = number("input")?;
    let output = number("output")?;
    let cached = match entry.get("cached") {
        None => input / 10.0,
        Some(v) => v.as_f64()?,
    };
    let price = Price {
        input,
        output,
        cached,
    };
    [input, output, cached]
        .iter()
        .all(|v| v.is_finite() && *v >= 0.0)
        .then_some(price)
}

/// Fills in the cost of a finished run whose worker CLI reported none, from `worker_prices`,
/// and re-estimates the saving with it. The CLI's own figure always wins. Returns whether the
/// receipt changed. A cost the CLI did not report is an estimate: `Tally::cost` stays `None`,
/// so `tally.cost.is_none() && receipt.cost.is_some()` tells an estimated cost from a reported one.
pub fn apply_worker_prices(record: &mut RunRecord, prices: &WorkerPrices) -> bool {
    if record.tally.cost.is_some() || record.tally.usage.is_zero() {
        return false;
    }
    let Some((_, price)) = prices.lookup(record.backend(), record.model_ran()) else {
        return false;
    };
    // Already priced (by an earlier call): nothing to do, so calling this twice is harmless.
    let Some(receipt) = record.receipt.as_mut().filter(|r| r.cost.is_none()) else {
        return false;
    };
    let cost = primary_cost(&record.tally.usage, &price);
    let (primary, _) = resolve_primary(&record.spec.primary, record.spec.price.as_deref());
    receipt.cost = Some(cost);
    receipt.saved = estimated_saving(
        &record.tally.usage,
        receipt.returned_tokens,
        Some(cost),
        &primary,
    );
    true
}

/// A run held to a budget is charged what its budget counted (`budget::cost_of`) where that is
/// more than its receipt says — a CLI that reports $0 for a model it cannot price — so the
/// report, the history and tomorrow's `budget.daily_usd` agree with the cap that stopped it.
/// Returns whether the receipt changed.
pub fn charge_budget_spend(record: &mut RunRecord) -> bool {
    let Some(spent) = record.spend.and_then(|s| s.usd) else {
        return false;
    };
    let (primary, _) = resolve_primary(&record.spec.primary, record.spec.price.as_deref());
    let usage = record.tally.usage;
    let Some(receipt) = record
        .receipt
        .as_mut()
        .filter(|r| r.cost.is_none_or(|c| c < spent))
    else {
        return false;
    };
    receipt.cost = Some(spent);
    receipt.saved = estimated_saving(&usage, receipt.returned_tokens, Some(spent), &primary);
    true
}

/// Whether the receipt's worker cost is an estimate from `worker_prices` (the CLI reported none).
pub fn cost_is_estimate(record: &RunRecord) -> bool {
    record.tally.cost.is_none() && record.receipt.as_ref().is_some_and(|r| r.cost.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(input: u64, output: u64, cache_read: u64) -> Usage {
        Usage {
            input,
            output,
            reasoning: 0,
            cache_read,
            cache_write: 0,
        }
    }

    /// The stream fuzzing found CLIs may report counts near `u64::MAX`; their sum overflowed.
    #[test]
    fn primary_cost_of_huge_reported_counts_is_a_number_not_an_overflow() {
        let huge = Usage {
            input: u64::MAX,
            output: u64::MAX,
            reasoning: u64::MAX,
            cache_read: 0,
            cache_write: u64::MAX,
        };
        let price = Price {
            input: 3.0,
            output: 15.0,
            cached: 0.3,
        };
        assert!(primary_cost(&huge, &price) > 1e13);
    }

    #[test]
    fn primary_cost_prices_fresh_cached_and_output_tokens() {
        let p = preset("sonnet").unwrap().price;
        // 1M fresh input at $3, 1M cached at $0.30, 0.1M output at $15.
        let c = primary_cost(&usage(1_000_000, 100_000, 1_000_000), &p);
        assert!((c - (3.0 + 0.30 + 1.5)).abs() < 1e-9, "{c}");
    }

    #[test]
    fn saving_subtracts_worker_cost_and_reading_the_report() {
        let tally = Tally {
            usage: usage(100_000, 10_000, 0),
            steps: 3,
            cost: Some(0.05),
            ..Tally::default()
        };
        let report = "x".repeat(4000);
        let primary = preset("sonnet").unwrap();
        let r = receipt(&tally, &report, &primary);
        assert_eq!(r.worker_tokens, 110_000);
        assert_eq!(r.returned_tokens, 1000);
        assert!((r.compression - 110.0).abs() < 1e-9);
        let expected = 0.3 + 0.15 - 0.05 - 0.003;
        assert!((r.saved.unwrap() - expected).abs() < 1e-9, "{:?}", r.saved);
    }

    #[test]
    fn no_tokens_means_no_saving_claimed() {
        let r = receipt(&Tally::default(), "short", &preset("opus").unwrap());
        assert_eq!(r.saved, None);
        assert_eq!(r.cost, None);
    }

    #[test]
    fn custom_price_wins_and_bad_names_warn() {
        let (p, w) = resolve_primary("sonnet", Some("2,8,0.2"));
        assert_eq!(
            p.price,
            Price {
                input: 2.0,
                output: 8.0,
                cached: 0.2
            }
        );
        assert!(w.is_none());
        let (p, w) = resolve_primary("gpt-9", None);
        assert_eq!(p.label, "Claude Sonnet");
        assert!(w.unwrap().contains("gpt-9"));
        let (_, w) = resolve_primary("haiku", Some("cheap"));
        assert!(w.unwrap().contains("cheap"));
    }

    fn priced_record(backend: &str, model: Option<&str>, cost: Option<f64>) -> RunRecord {
        let spec: crate::record::RunSpec = serde_json::from_value(serde_json::json!({
            "task": "t", "mode": "read", "backend": backend, "model": model, "effort": null,
            "web": false, "dir": "/r", "timeout_secs": 1.0, "watchdog_secs": 1.0,
            "background": false, "allow_non_git": false, "parent": null, "primary": "sonnet",
            "price": null,
        }))
        .unwrap();
        let mut r = RunRecord::new(
            "id".into(),
            spec,
            "2026-11-30T00:00:00Z".parse().expect("a stamp"),
        );
        r.tally = Tally {
            usage: usage(1_000_000, 1_000_000, 0),
            steps: 1,
            cost,
            ..Tally::default()
        };
        r.receipt = Some(receipt(
            &r.tally,
            &"x".repeat(4000),
            &preset("sonnet").unwrap(),
        ));
        r
    }

    fn prices() -> WorkerPrices {
        let (p, warnings) = WorkerPrices::from_value(&serde_json::json!({
            "opencode:foo/bar": {"input": 0.5, "output": 1.5},
            "opencode": {"input": 1.0, "output": 2.0, "cached": 0.0},
            "broken": {"input": "cheap"},
            "negative": {"input": -1.0, "output": 1.0},
        }));
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings.iter().any(|w| w.contains("broken")));
        p
    }

    #[test]
    fn worker_prices_match_backend_and_model_before_backend() {
        let p = prices();
        let (key, price) = p.lookup("opencode", Some("foo/bar")).unwrap();
        assert_eq!(key, "opencode:foo/bar");
        assert_eq!(price.cached, 0.05, "cached defaults to a tenth of input");
        assert_eq!(p.lookup("opencode", Some("other")).unwrap().0, "opencode");
        assert_eq!(p.lookup("opencode", None).unwrap().0, "opencode");
        assert!(p.lookup("codex", Some("foo/bar")).is_none());
    }

    #[test]
    fn a_cli_without_cost_gets_an_estimate_and_a_lower_saving() {
        let mut r = priced_record("opencode", Some("foo/bar"), None);
        let before = r.receipt.clone().unwrap();
        assert_eq!(before.cost, None);
        assert!(!cost_is_estimate(&r));
        assert!(apply_worker_prices(&mut r, &prices()));
        let after = r.receipt.clone().unwrap();
        // 1M in at $0.5 + 1M out at $1.5.
        assert!((after.cost.unwrap() - 2.0).abs() < 1e-9, "{after:?}");
        assert!((before.saved.unwrap() - after.saved.unwrap() - 2.0).abs() < 1e-9);
        assert!(cost_is_estimate(&r));
        assert_eq!(r.tally.cost, None, "the tally keeps what the CLI reported");
        assert!(
            !apply_worker_prices(&mut r, &prices()),
            "a second call changes nothing"
        );
        assert_eq!(r.receipt, Some(after));
    }

    #[test]
    fn a_reported_cost_is_never_replaced_by_an_estimate() {
        let mut r = priced_record("opencode", Some("foo/bar"), Some(0.25));
        assert!(!apply_worker_prices(&mut r, &prices()));
        assert_eq!(r.receipt.as_ref().unwrap().cost, Some(0.25));
        assert!(!cost_is_estimate(&r));
        let mut unknown = priced_record("codex", None, None);
        assert!(
            !apply_worker_prices(&mut unknown, &prices()),
            "no price, stays n/a"
        );
        assert_eq!(unknown.receipt.as_ref().unwrap().cost, None);
    }

    #[test]
    fn a_run_held_to_a_budget_is_charged_what_its_budget_counted_when_that_is_more() {
        use crate::budget::Spend;
        // The CLI said $0 (a model it cannot price); the budget counted $2 at worker_prices.
        let mut r = priced_record("opencode", Some("foo/bar"), Some(0.0));
        let before = r.receipt.clone().unwrap();
        r.spend = Some(Spend {
            tokens: 2_000_000,
            usd: Some(2.0),
        });
        assert!(charge_budget_spend(&mut r));
        let after = r.receipt.clone().unwrap();
        assert_eq!(after.cost, Some(2.0));
        assert!((before.saved.unwrap() - after.saved.unwrap() - 2.0).abs() < 1e-9);
        assert!(
            !charge_budget_spend(&mut r),
            "a second call changes nothing"
        );
        // A receipt that says more, or a run without a budget's count, keeps its figure.
        let mut dearer = priced_record("opencode", Some("foo/bar"), Some(3.0));
        dearer.spend = r.spend;
        assert!(!charge_budget_spend(&mut dearer));
        assert_eq!(dearer.receipt.unwrap().cost, Some(3.0));
        let mut unbudgeted = priced_record("opencode", Some("foo/bar"), Some(0.0));
        assert!(!charge_budget_spend(&mut unbudgeted));
        assert_eq!(unbudgeted.receipt.unwrap().cost, Some(0.0));
    }
}
