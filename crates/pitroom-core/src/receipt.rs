//! Receipts: what the worker burned, what came back, what it saved (PRODUCT.md §11).

use pitroom_workers::Usage;

use crate::record::{Receipt, Tally};

/// List prices in USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
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
    let fresh_in = (usage.input + usage.cache_write) as f64;
    let out = (usage.output + usage.reasoning) as f64;
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
    let saved = (worker_tokens > 0).then(|| {
        let reading = returned as f64 * primary.price.input / 1e6;
        primary_cost(&tally.usage, &primary.price) - tally.cost.unwrap_or(0.0) - reading
    });
    Receipt {
        worker_tokens,
        returned_tokens: returned,
        compression: worker_tokens as f64 / returned as f64,
        cost: tally.cost,
        primary: primary.label.clone(),
        saved,
    }
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
}
