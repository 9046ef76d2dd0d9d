//! `pitroom_info`: the read-only facts an agent may want before or after delegating.

use pitroom_core::config::FlagValues;
use pitroom_core::cooldown::Cooldowns;
use pitroom_core::report;
use pitroom_core::target::Target;
use pitroom_service::{Service, ServiceError};
use pitroom_store::{Filter, Since};
use serde_json::{json, Value};

use crate::render::RunView;
use crate::server::InfoArgs;

/// The structured value and the text of one topic.
pub fn answer(s: &Service, args: &InfoArgs) -> Result<(Value, String), ServiceError> {
    let limit = args.limit.unwrap_or(20).clamp(1, 200);
    match args.topic.as_str() {
        "runs" => {
            let records = s.list(None, false, limit);
            let text = if records.is_empty() {
                "no runs yet".to_string()
            } else {
                records
                    .iter()
                    .map(report::brief)
                    .collect::<Vec<_>>()
                    .join("\n")
            };
            let views: Vec<RunView> = records.iter().map(RunView::of).collect();
            Ok((json!({"runs": views}), text))
        }
        "history" => {
            let (store, _) = s.history_store()?;
            let filter = Filter {
                text: args.query.clone().filter(|q| !q.trim().is_empty()),
                limit,
                ..Filter::default()
            };
            let hits = store
                .search(&filter)
                .map_err(|e| ServiceError::refused(e.to_string()))?;
            let text = hits
                .iter()
                .map(|h| {
                    format!(
                        "{} {} {} {}: {}",
                        h.id,
                        h.state,
                        h.mode,
                        h.worker,
                        h.snippet.as_deref().unwrap_or(&h.task)
                    )
                })
                .collect::<Vec<_>>()
                .join("\n");
            Ok((
                json!({"hits": hits}),
                if text.is_empty() {
                    "no matching runs".into()
                } else {
                    text
                },
            ))
        }
        "stats" => {
            let (store, _) = s.history_store()?;
            let stats = store
                .stats(&Since::all())
                .map_err(|e| ServiceError::refused(e.to_string()))?;
            let text = stats
                .iter()
                .map(|w| {
                    format!(
                        "{}: {} runs, {} done, success {}, {} tokens, est. saved ${:.3}",
                        w.worker,
                        w.runs,
                        w.done,
                        w.success_rate
                            .map(|r| format!("{:.0}%", r * 100.0))
                            .unwrap_or_else(|| "n/a".into()),
                        w.tokens,
                        w.saved
                    )
                })
                .collect::<Vec<_>>()
                .join("\n");
            Ok((
                json!({"workers": stats}),
                if text.is_empty() {
                    "no finished runs yet".into()
                } else {
                    text
                },
            ))
        }
        "savings" => {
            let (store, _) = s.history_store()?;
            let savings = store
                .savings(&Since::all())
                .map_err(|e| ServiceError::refused(e.to_string()))?;
            let text = format!(
                "all time: {} delegated runs, {} worker tokens, {} returned, est. saved ${:.3} (an estimate), worker cost ${:.3}",
                savings.runs, savings.tokens, savings.returned_tokens, savings.saved, savings.worker_cost
            );
            Ok((json!(savings), text))
        }
        "cooldown" => {
            let cooldowns = Cooldowns::load(s.home());
            let text = if cooldowns.entries.is_empty() {
                "no target is cooling down".to_string()
            } else {
                cooldowns
                    .entries
                    .iter()
                    .map(|(target, c)| format!("{target} until {}: {}", c.until_short(), c.reason))
                    .collect::<Vec<_>>()
                    .join("\n")
            };
            Ok((json!(cooldowns), text))
        }
        "config" => {
            let config = s.config(&FlagValues::default())?;
            let entries = config.entries();
            let text = entries
                .iter()
                .map(|e| format!("{} = {} ({:?})", e.key, e.value, e.source))
                .collect::<Vec<_>>()
                .join("\n");
            Ok((
                json!({"entries": entries, "warnings": config.warnings}),
                text,
            ))
        }
        "models" => {
            let config = s.config(&FlagValues::default())?;
            let worker = args
                .worker
                .clone()
                .or_else(|| config.text("worker"))
                .unwrap_or_else(|| pitroom_service::request::DEFAULT_BACKEND.into());
            let backend = Target::parse(&worker, pitroom_service::request::DEFAULT_BACKEND)
                .map_err(|e| ServiceError::usage(e.to_string()))?
                .backend;
            let models = s.engine().list_models(&backend)?;
            let text = models
                .iter()
                .map(|m| {
                    if m.efforts.is_empty() {
                        m.id.clone()
                    } else {
                        format!("{} (effort: {})", m.id, m.efforts.join(", "))
                    }
                })
                .collect::<Vec<_>>()
                .join("\n");
            let listed: Vec<Value> = models
                .iter()
                .map(|m| json!({"id": m.id, "efforts": m.efforts}))
                .collect();
            Ok((json!({"worker": backend, "models": listed}), text))
        }
        "doctor" => {
            let checks = s.doctor();
            let text = checks
                .iter()
                .map(|c| {
                    let mark = match (c.ok, c.essential) {
                        (true, _) => "ok",
                        (false, true) => "FAILED",
                        (false, false) => "warning",
                    };
                    format!("{mark} {}: {}", c.name, c.detail)
                })
                .collect::<Vec<_>>()
                .join("\n");
            let healthy = pitroom_service::doctor::healthy(&checks);
            Ok((json!({"healthy": healthy, "checks": checks}), text))
        }
        other => Err(ServiceError::usage(format!(
            "topic `{other}` is not one of runs, history, stats, savings, cooldown, config, models, doctor"
        ))),
    }
}
