//! `pitroom config`: every effective value and its source.

use pitroom_service::Exit;

use super::Outcome;
use crate::cli::ConfigArgs;
use crate::output;
use crate::output::say;

pub(super) fn config(args: ConfigArgs) -> Outcome {
    let service = super::service()?;
    let settings = service.settings()?;
    for w in &settings.warnings {
        output::warning(w);
    }
    let entries = settings.entries;
    if args.json {
        output::json(&serde_json::json!({
            "file": settings.file,
            "home": service.home().root,
            "entries": entries,
            "warnings": settings.warnings,
        }));
        return Ok(Exit::Ok);
    }
    say!(
        "config file: {}",
        settings
            .file
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "(none)".into())
    );
    say!("state dir:   {}", service.home().root.display());
    for e in entries {
        let value = match &e.value {
            serde_json::Value::Null => "(unset)".to_string(),
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let value = if e.key == "timeout" || e.key == "watchdog" {
            e.value.as_f64().map(|s| format!("{s}s")).unwrap_or(value)
        } else {
            value
        };
        say!("{:<14} {:<28} ({})", e.key, value, e.source);
    }
    Ok(Exit::Ok)
}
