//! `pitroom_info`: the read-only facts an agent may want before or after delegating.

use pitroom_service::{report, Filter, Service, ServiceError, Since};
use serde_json::{json, Value};

use crate::render::RunView;
use crate::server::InfoArgs;

/// The structured value and the text of one topic.
pub fn answer(s: &Service, args: &InfoArgs) -> Result<(Value, String), ServiceError> {
    let limit = args.limit.unwrap_or(20).clamp(1, 200);
    match args.topic.as_str() {
        "runs" => {
            let records = s.list(None, false, limit);
            let text = lines_or(&records, "no runs yet", report::brief);
            let views: Vec<RunView> = records.iter().map(RunView::of).collect();
            Ok((json!({"runs": views}), text))
        }
        "history" => {
            let filter = Filter {
                text: args.query.clone().filter(|q| !q.trim().is_empty()),
                limit,
                ..Filter::default()
            };
            let hits = history(s)?.search(&filter)?;
            let text = lines_or(&hits, "no matching runs", |h| {
                format!(
                    "{} {} {} {}: {}",
                    h.id,
                    h.state,
                    h.mode,
                    h.worker,
                    h.snippet.as_deref().unwrap_or(&h.task)
                )
            });
            Ok((json!({"hits": hits}), text))
        }
        "stats" => {
            let stats = history(s)?.stats(&Since::all())?;
            let text = lines_or(&stats, "no finished runs yet", |w| {
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
            });
            Ok((json!({"workers": stats}), text))
        }
        "savings" => {
            let savings = history(s)?.savings(&Since::all())?;
            let text = format!(
                "all time: {} delegated runs, {} worker tokens, {} returned, est. saved ${:.3} (an estimate), worker cost ${:.3}",
                savings.runs, savings.tokens, savings.returned_tokens, savings.saved, savings.worker_cost
            );
            Ok((json!(savings), text))
        }
        "cooldown" => {
            let cooldowns = s.cooldowns();
            let text = lines_or(&cooldowns.entries, "no target is cooling down", |(target, c)| {
                format!("{target} until {}: {}", c.until_short(), c.reason)
            });
            Ok((json!(cooldowns), text))
        }
        "config" => {
            let settings = s.settings()?;
            let entries = settings.entries;
            let text = lines(&entries, |e| format!("{} = {} ({:?})", e.key, e.value, e.source));
            Ok((
                json!({"entries": entries, "warnings": settings.warnings}),
                text,
            ))
        }
        "models" => {
            let listed = s.models(args.worker.as_deref())?;
            let (backend, models) = (listed.backend, listed.models);
            let text = lines(&models, |m| {
                if m.efforts.is_empty() {
                    m.id.clone()
                } else {
                    format!("{} (effort: {})", m.id, m.efforts.join(", "))
                }
            });
            let listed: Vec<Value> = models
                .iter()
                .map(|m| json!({"id": m.id, "efforts": m.efforts}))
                .collect();
            Ok((json!({"worker": backend, "models": listed}), text))
        }
        "doctor" => {
            let checks = s.doctor();
            let text = lines(&checks, |c| {
                let mark = match (c.ok, c.essential) {
                    (true, _) => "ok",
                    (false, true) => "FAILED",
                    (false, false) => "warning",
                };
                format!("{mark} {}: {}", c.name, c.detail)
            });
            let healthy = pitroom_service::doctor::healthy(&checks);
            Ok((json!({"healthy": healthy, "checks": checks}), text))
        }
        "probe" => {
            // One real, read-only round trip per worker: a minute or more, in the blocking pool.
            let named: Vec<String> = args.worker.iter().cloned().collect();
            let mut watch = pitroom_service::probe::Notes::default();
            let probes = s.probe(&named, &mut watch).map_err(ServiceError::usage)?;
            let text = lines(&probes, |p| match &p.error {
                None => format!("ok {}: answered in {:.1} s ({})", p.worker, p.seconds, p.model),
                Some(e) => format!("FAILED {}: {e}", p.worker),
            });
            let healthy = probes.iter().all(|p| p.ok || !p.essential);
            Ok((
                json!({"healthy": healthy, "probes": probes, "notes": watch.notes}),
                text,
            ))
        }
        other => Err(ServiceError::usage(format!(
            "topic `{other}` is not one of runs, history, stats, savings, cooldown, config, models, doctor, probe"
        ))),
    }
}

/// The history (opened and brought up to date).
fn history(s: &Service) -> Result<pitroom_service::History, ServiceError> {
    s.history().map(|(history, _)| history)
}

/// One line per item.
fn lines<T>(items: impl IntoIterator<Item = T>, line: impl FnMut(T) -> String) -> String {
    items.into_iter().map(line).collect::<Vec<_>>().join("\n")
}

/// One line per item, or `none` when there are no items.
fn lines_or<T>(
    items: impl IntoIterator<Item = T>,
    none: &str,
    line: impl FnMut(T) -> String,
) -> String {
    let mut items = items.into_iter().peekable();
    if items.peek().is_none() {
        none.into()
    } else {
        lines(items, line)
    }
}
