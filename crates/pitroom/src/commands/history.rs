//! `history`, `history stats`, `history import`, `savings`, `clean`, and the usage columns of
//! `models`. The ledger lives in `pitroom-store`; the run
//! directories stay the source of truth.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use pitroom_core::budget::dollars;
use pitroom_core::duration::format_duration;
use pitroom_service::clean::Cleaning;
use pitroom_service::ledger::{last_days, savings_card};
use pitroom_service::report::human_count;
use pitroom_service::{Exit, Filter, History, Hit, ModelInfo, Savings, Since, WorkerStats};
use serde_json::json;

use super::Outcome;
use crate::error::CliError;
use crate::output;
use crate::output::say;

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct HistoryArgs {
    #[command(subcommand)]
    pub command: Option<HistoryCommand>,
    /// Words to find in tasks, answers and steps (each a prefix; all must match).
    pub text: Vec<String>,
    /// Only runs of this model, worker (backend:model) or backend.
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    /// Only runs that ended in this state: done, failed, timeout, stopped.
    #[arg(long, value_name = "STATE")]
    pub state: Option<String>,
    /// Only runs started in this period: 7d, 30d, 12h, 2w, all, or a date (2026-11-01).
    #[arg(long, value_name = "PERIOD")]
    pub since: Option<String>,
    /// At most this many runs.
    #[arg(short = 'n', long, default_value_t = 20)]
    pub limit: usize,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum HistoryCommand {
    /// Per worker and model: runs, success rate, median time, tokens, cost and saving.
    Stats(StatsArgs),
    /// Rebuild the history from the run directories.
    Import(ImportArgs),
}

#[derive(Debug, Args)]
pub(crate) struct StatsArgs {
    /// 7d, 30d, 12h, 2w, all (default), or a date.
    #[arg(long, value_name = "PERIOD")]
    pub since: Option<String>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct ImportArgs {
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct SavingsArgs {
    /// One period (7d, 30d, all, a date); without it: the last 7 days, 30 days and all time.
    #[arg(long, value_name = "PERIOD")]
    pub since: Option<String>,
    /// A row per worker and model.
    #[arg(long)]
    pub models: bool,
    /// Write a self-contained SVG card of the period (default: all time) to FILE.
    #[arg(long, value_name = "FILE.svg")]
    pub card: Option<PathBuf>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct CleanArgs {
    /// Remove runs that ended more than this many days ago.
    #[arg(long, default_value_t = 30)]
    pub days: u32,
    /// Really remove them (without it, only list what would go).
    #[arg(long)]
    pub yes: bool,
    #[arg(long)]
    pub json: bool,
}

/// Opens the history for a reading command, importing what it lacks; prints its notes.
fn open() -> Result<History, CliError> {
    let (history, notes) = super::service()?.history()?;
    for n in notes {
        output::warning(n);
    }
    Ok(history)
}

fn since(given: Option<&str>, default: Since) -> Result<Since, CliError> {
    match given {
        None => Ok(default),
        Some(text) => pitroom_service::ledger::since(text).map_err(CliError::usage),
    }
}

pub(crate) fn history(args: HistoryArgs) -> Outcome {
    match args.command {
        Some(HistoryCommand::Stats(a)) => stats(a),
        Some(HistoryCommand::Import(a)) => import(a),
        None => search(args),
    }
}

fn search(args: HistoryArgs) -> Outcome {
    let since = since(args.since.as_deref(), Since::all())?;
    let store = open()?;
    let filter = Filter {
        text: (!args.text.is_empty()).then(|| args.text.join(" ")),
        model: args.model,
        state: args.state,
        since,
        limit: args.limit,
    };
    let hits = store.search(&filter)?;
    if args.json {
        output::json(&json!({"runs": hits}));
    } else {
        print_hits(&hits, filter.text.is_some());
    }
    Ok(Exit::Ok)
}

fn money(usd: Option<f64>, estimated: bool) -> String {
    match usd {
        Some(c) if estimated => format!("~${c:.3}"),
        Some(c) => format!("${c:.3}"),
        None => "n/a".into(),
    }
}

fn seconds(ms: Option<i64>) -> String {
    ms.and_then(|ms| u64::try_from(ms).ok())
        .map(|ms| format_duration(std::time::Duration::from_millis(ms)))
        .unwrap_or_else(|| "-".into())
}

fn one_line(text: &str, width: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= width {
        return flat;
    }
    let cut: String = flat.chars().take(width.saturating_sub(1)).collect();
    format!("{cut}…")
}

fn print_hits(hits: &[Hit], searched: bool) {
    if hits.is_empty() {
        say!("no runs match");
        return;
    }
    for h in hits {
        let pruned = if h.pruned { " (cleaned)" } else { "" };
        say!(
            "{}  {:<7} {:<7} {:>5}  {:>6} tok  {:>8}  {}{pruned}",
            h.id,
            h.state,
            h.mode,
            seconds(h.duration_ms),
            human_count(u64::try_from(h.tokens).unwrap_or(0)),
            money(h.cost, h.cost_estimated),
            h.worker
        );
        say!("    {}", one_line(&h.task, 100));
        if let (true, Some(s)) = (searched, &h.snippet) {
            say!("    … {}", one_line(s, 100));
        }
    }
}

fn stats(args: StatsArgs) -> Outcome {
    let since = since(args.since.as_deref(), Since::all())?;
    let store = open()?;
    let rows = store.stats(&since)?;
    if args.json {
        output::json(&json!({"since": since, "workers": rows}));
    } else {
        print_stats(&rows, &since);
    }
    Ok(Exit::Ok)
}

fn percent(rate: Option<f64>) -> String {
    rate.map(|r| format!("{:.0}%", r * 100.0))
        .unwrap_or_else(|| "-".into())
}

fn print_stats(rows: &[WorkerStats], since: &Since) {
    if rows.is_empty() {
        say!("no finished runs (since {})", since.label);
        return;
    }
    say!(
        "{:<40} {:>5} {:>7} {:>6} {:>7} {:>8} {:>9} {:>9}",
        "worker",
        "runs",
        "success",
        "429s",
        "median",
        "tokens",
        "cost",
        "est.saved"
    );
    for s in rows {
        let mut cost = format!("${:.3}", s.cost);
        if s.cost_estimated_runs > 0 {
            cost.insert(0, '~');
        }
        if s.cost_unknown_runs > 0 {
            cost.push('+');
        }
        say!(
            "{:<40} {:>5} {:>7} {:>6} {:>7} {:>8} {:>9} {:>9}",
            one_line(&s.worker, 40),
            s.runs,
            percent(s.success_rate),
            s.rate_limited,
            seconds(s.median_ms.and_then(|m| i64::try_from(m).ok())),
            human_count(s.tokens),
            cost,
            format!("${:.3}", s.saved)
        );
    }
    let mut legend = vec!["success and median leave rate-limited runs (429s) out"];
    if rows.iter().any(|s| s.cost_estimated_runs > 0) {
        legend.push("~ cost partly estimated from worker_prices");
    }
    if rows.iter().any(|s| s.cost_unknown_runs > 0) {
        legend.push("+ some runs had no cost (n/a)");
    }
    legend.push("savings are estimates");
    say!("{}", legend.join(" · "));
}

fn import(args: ImportArgs) -> Outcome {
    let imported = super::service()?.import_history()?;
    for n in &imported.notes {
        output::warning(n);
    }
    let (path, report) = (imported.database, imported.report);
    if args.json {
        output::json(&json!({"database": path, "import": report}));
    } else {
        say!(
            "imported {} run{} into {}{}",
            report.imported,
            if report.imported == 1 { "" } else { "s" },
            path.display(),
            if report.active > 0 {
                format!(" ({} still running, added when they end)", report.active)
            } else {
                String::new()
            }
        );
        for u in &report.unreadable {
            output::warning(format!("not imported: {u}"));
        }
    }
    Ok(Exit::Ok)
}

pub(crate) fn savings(args: SavingsArgs) -> Outcome {
    let periods = match &args.since {
        Some(text) => vec![since(Some(text), Since::all())?],
        None => vec![last_days(7), last_days(30), Since::all()],
    };
    let store = open()?;
    // Today's spend against the daily cap, when there is one; a bad cap is the config's
    // warning, not a reason to fail the report.
    let daily = super::service()?.daily_budget().unwrap_or_else(|e| {
        output::warning(e.to_string());
        None
    });
    let totals = periods
        .iter()
        .map(|p| store.savings(p))
        .collect::<Result<Vec<_>, _>>()?;
    // The card and the per-model rows are for the period asked, else all time (the last).
    let Some(main) = totals.last() else {
        return Ok(Exit::Ok);
    };
    if let Some(file) = &args.card {
        write_card(file, main)?;
    }
    if args.json {
        let periods: Vec<serde_json::Value> = totals
            .iter()
            .map(|s| {
                let mut v = json!(s);
                if !args.models {
                    v["per_model"] = json!(null);
                }
                v
            })
            .collect();
        output::json(&json!({
            "periods": periods,
            "estimate": "saved = the primary's list price for the worker's tokens − the worker's cost − reading the report; unknown worker costs count as $0",
            "card": args.card,
            "budget": daily,
        }));
        return Ok(Exit::Ok);
    }
    print_savings(&totals, args.models.then_some(main));
    if let Some(d) = daily {
        say!(
            "budget: {} spent today (UTC) of {} a day (budget.daily_usd)",
            dollars(d.spent_today_usd),
            dollars(d.daily_usd)
        );
    }
    if let Some(file) = &args.card {
        say!("card written to {}", file.display());
    }
    Ok(Exit::Ok)
}

fn write_card(file: &Path, savings: &Savings) -> Result<(), CliError> {
    std::fs::write(file, savings_card(savings))
        .map_err(|e| CliError::refused(format!("--card {}: {e}", file.display())))
}

fn print_savings(totals: &[Savings], per_model: Option<&Savings>) {
    say!(
        "{:<12} {:>6} {:>9} {:>9} {:>11} {:>10} {:>10}",
        "period",
        "runs",
        "tokens",
        "returned",
        "compression",
        "cost",
        "est.saved"
    );
    for s in totals {
        say!(
            "{:<12} {:>6} {:>9} {:>9} {:>11} {:>10} {:>10}",
            s.since,
            s.runs,
            human_count(s.tokens),
            human_count(s.returned_tokens),
            s.compression
                .map(|c| format!("{c:.0}×"))
                .unwrap_or_else(|| "-".into()),
            format!("${:.3}", s.worker_cost),
            format!("${:.3}", s.saved)
        );
    }
    if let Some(s) = per_model {
        say!();
        say!(
            "{:<40} {:>6} {:>9} {:>10} {:>10}",
            format!("worker ({})", s.since),
            "runs",
            "tokens",
            "cost",
            "est.saved"
        );
        for m in &s.per_model {
            say!(
                "{:<40} {:>6} {:>9} {:>10} {:>10}",
                one_line(&m.worker, 40),
                m.runs,
                human_count(m.tokens),
                format!("${:.3}", m.worker_cost),
                format!("${:.3}", m.saved)
            );
        }
    }
    if let Some(s) = totals.last() {
        let against = if s.primaries.is_empty() {
            "your primary's".to_string()
        } else {
            s.primaries.join(", ")
        };
        let mut note = format!("estimates against {against} list prices");
        if s.cost_estimated_runs > 0 {
            note.push_str(&format!(
                "; {} run(s) priced from your worker_prices",
                s.cost_estimated_runs
            ));
        }
        if s.cost_unknown_runs > 0 {
            note.push_str(&format!(
                "; {} run(s) with unknown worker cost counted as $0 (set worker_prices)",
                s.cost_unknown_runs
            ));
        }
        say!("{note}");
    }
}

pub(crate) fn clean(args: CleanArgs) -> Outcome {
    let service = super::service()?;
    let cleaning = service.clean(args.days, args.yes);
    for w in &cleaning.warnings {
        output::warning(w);
    }
    if args.json {
        output::json(&json!({
            "dry_run": !args.yes,
            "days": args.days,
            "would_remove": if args.yes { Vec::new() } else { cleaning.doomed.clone() },
            "removed": cleaning.removed,
            "kept_unapplied_patches": cleaning.kept_unapplied_patches,
            "failed": cleaning.failed,
            "would_remove_gate_sessions": if args.yes { Vec::new() } else { cleaning.idle_gate_sessions.clone() },
            "removed_gate_sessions": cleaning.removed_gate_sessions,
        }));
    } else {
        let kept: Vec<&str> = cleaning
            .kept_unapplied_patches
            .iter()
            .map(String::as_str)
            .collect();
        print_clean(&args, &cleaning, &kept);
        print_gate_sessions(&args, &cleaning);
    }
    // Directories that could not be removed are named in the warnings above.
    Ok(if cleaning.failed.is_empty() {
        Exit::Ok
    } else {
        Exit::Refused
    })
}

fn print_clean(args: &CleanArgs, cleaning: &Cleaning, kept_patches: &[&str]) {
    let (doomed, removed) = (&cleaning.doomed, &cleaning.removed);
    if args.yes {
        say!(
            "removed {} run director{} that ended more than {} days ago",
            removed.len(),
            if removed.len() == 1 { "y" } else { "ies" },
            args.days
        );
    } else if doomed.is_empty() {
        say!(
            "{}no run ended more than {} days ago",
            if cleaning.idle_gate_sessions.is_empty() {
                "nothing to clean: "
            } else {
                ""
            },
            args.days
        );
    } else {
        say!(
            "would remove {} run director{} that ended more than {} days ago (dry run; add --yes):",
            doomed.len(),
            if doomed.len() == 1 { "y" } else { "ies" },
            args.days
        );
        for id in doomed {
            say!("  {id}");
        }
    }
    if !kept_patches.is_empty() {
        say!(
            "kept {} isolated run(s) whose patch was never applied: {} (apply or discard them; clean never removes them)",
            kept_patches.len(),
            kept_patches.join(", ")
        );
    }
    for f in &cleaning.failed {
        output::warning(format!("could not remove {f}"));
    }
}

/// The review gate's idle session states, when there are any: removed, or what would be.
fn print_gate_sessions(args: &CleanArgs, cleaning: &Cleaning) {
    let (verb, count) = if args.yes {
        ("removed", cleaning.removed_gate_sessions.len())
    } else {
        ("would remove", cleaning.idle_gate_sessions.len())
    };
    if count > 0 {
        say!(
            "{verb} the review gate's state of {count} session{} idle for more than {} days",
            if count == 1 { "" } else { "s" },
            args.days
        );
    }
}

/// The ledger's figures per model of `backend`, for `models`; empty without a history.
fn model_usage(backend: &str) -> BTreeMap<Option<String>, WorkerStats> {
    super::service()
        .map(|s| s.model_usage(backend))
        .unwrap_or_default()
}

/// Prints `models` with the ledger's usage columns (runs, success, tokens, cost).
pub(crate) fn print_models(backend: &str, models: &[ModelInfo], as_json: bool) {
    if as_json {
        output::json(&models_value(backend, models));
        return;
    }
    let usage = model_usage(backend);
    say!(
        "{backend}: {} model{}",
        models.len(),
        if models.len() == 1 { "" } else { "s" }
    );
    let width = models.iter().map(|m| m.id.len()).max().unwrap_or(0).min(60);
    if !usage.is_empty() {
        say!(
            "  {:<width$}  {:>5} {:>7} {:>8} {:>9}",
            "model",
            "runs",
            "success",
            "tokens",
            "cost"
        );
    }
    for m in models {
        match usage.get(&Some(m.id.clone())) {
            Some(s) => say!("  {:<width$}  {}", m.id, usage_columns(s)),
            None => say!("  {}", m.id),
        }
    }
    if let Some(s) = usage.get(&None) {
        say!("  {:<width$}  {}", "(CLI default)", usage_columns(s));
    }
}

/// One backend's models with each one's usage from the ledger, as `models --json` prints it.
pub(crate) fn models_value(backend: &str, models: &[ModelInfo]) -> serde_json::Value {
    let usage = model_usage(backend);
    let rows: Vec<serde_json::Value> = models
        .iter()
        .map(|m| {
            let mut v = json!(m);
            v["usage"] = json!(usage.get(&Some(m.id.clone())));
            v
        })
        .collect();
    json!({"worker": backend, "models": rows, "default_model_usage": usage.get(&None)})
}

fn usage_columns(s: &WorkerStats) -> String {
    let mut cost = format!("${:.3}", s.cost);
    if s.cost_estimated_runs > 0 {
        cost.insert(0, '~');
    }
    if s.cost > 0.0 || s.cost_unknown_runs == 0 {
        format!(
            "{:>5} {:>7} {:>8} {:>9}",
            s.runs,
            percent(s.success_rate),
            human_count(s.tokens),
            cost
        )
    } else {
        format!(
            "{:>5} {:>7} {:>8} {:>9}",
            s.runs,
            percent(s.success_rate),
            human_count(s.tokens),
            "n/a"
        )
    }
}
