//! Configuration: TOML file, `PITROOM_*` environment, flags. Precedence flag > environment >
//! file > built-in default (which, for the model, means the worker CLI's own default). Unknown
//! keys and wrong types are warnings; only a file that is not TOML at all is an error.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::duration::parse_duration;

/// Where an effective value came from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", content = "name", rename_all = "lowercase")]
pub enum Source {
    Default,
    File(String),
    Env(String),
    Flag(String),
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Default => write!(f, "default"),
            Source::File(p) => write!(f, "file {p}"),
            Source::Env(v) => write!(f, "env {v}"),
            Source::Flag(n) => write!(f, "flag {n}"),
        }
    }
}

/// The shape a key's value must have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Text,
    TextList,
    Duration,
    Bool,
    Count,
    TextMap,
    Table,
}

/// Every key Pitroom reads: name, kind, environment variable, default.
const KEYS: &[(&str, Kind, Option<&str>, Option<&str>)] = &[
    (
        "worker",
        Kind::Text,
        Some(pitroom_env::PITROOM_WORKER),
        Some("opencode"),
    ),
    ("model", Kind::Text, Some(pitroom_env::PITROOM_MODEL), None),
    (
        "fallback",
        Kind::TextList,
        Some(pitroom_env::PITROOM_FALLBACK),
        None,
    ),
    ("models", Kind::TextMap, None, None),
    ("tiers", Kind::TextMap, None, None),
    ("costs", Kind::Table, None, None),
    ("worker_prices", Kind::Table, None, None),
    ("budget", Kind::Table, None, None),
    ("workers", Kind::Table, None, None),
    (
        "timeout",
        Kind::Duration,
        Some(pitroom_env::PITROOM_TIMEOUT),
        Some("30m"),
    ),
    (
        "watchdog",
        Kind::Duration,
        Some(pitroom_env::PITROOM_WATCHDOG),
        Some("60s"),
    ),
    (
        "primary",
        Kind::Text,
        Some(pitroom_env::PITROOM_PRIMARY),
        Some("sonnet"),
    ),
    ("price", Kind::Text, Some(pitroom_env::PITROOM_PRICE), None),
    ("link", Kind::TextList, None, None),
    (
        "sandbox_writable",
        Kind::TextList,
        Some(pitroom_env::PITROOM_SANDBOX_WRITABLE),
        None,
    ),
    ("verify_timeout", Kind::Duration, None, Some("15m")),
    ("max_hold", Kind::Duration, None, Some("30m")),
    ("attempts", Kind::Count, None, Some("1")),
    ("web", Kind::Bool, None, Some("false")),
    ("notify", Kind::Bool, None, Some("false")),
    ("review_gate", Kind::Bool, None, Some("false")),
    ("review_gate_max_rounds", Kind::Count, None, Some("3")),
    (
        "max_parallel",
        Kind::Count,
        Some(pitroom_env::PITROOM_MAX_PARALLEL),
        Some("20"),
    ),
    ("max_parallel_per", Kind::Table, None, None),
];

/// A key's effective value and its source.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Entry {
    pub key: String,
    pub value: Value,
    pub source: Source,
}

/// The config file could not be used at all.
#[derive(Debug, thiserror::Error)]
#[error(
    "config file {path} is not valid TOML: {message}; fix it or point PITROOM_CONFIG elsewhere"
)]
pub struct ConfigError {
    pub path: String,
    pub message: String,
}

/// The effective configuration.
#[derive(Debug, Clone, Default)]
pub struct Config {
    entries: BTreeMap<String, Entry>,
    pub file: Option<PathBuf>,
    pub warnings: Vec<String>,
}

/// Values given on the command line, by config key.
#[derive(Debug, Clone, Default)]
pub struct FlagValues {
    pub values: Vec<(&'static str, &'static str, String)>,
}

impl FlagValues {
    /// Records `--flag` setting `key` to `value`.
    pub fn set(&mut self, key: &'static str, flag: &'static str, value: impl Into<String>) {
        self.values.push((key, flag, value.into()));
    }
}

impl Config {
    /// Loads the file (`$PITROOM_CONFIG` or `$XDG_CONFIG_HOME/pitroom/config.toml`), then the
    /// environment, then `flags`.
    pub fn load(
        env: &dyn Fn(&str) -> Option<String>,
        flags: &FlagValues,
    ) -> Result<Config, ConfigError> {
        let mut config = Config::default();
        for (key, kind, _, default) in KEYS {
            if let Some(d) = default {
                if let Ok(v) = convert(*kind, &Value::String((*d).to_string())) {
                    config.put(key, v, Source::Default);
                }
            }
        }
        if let Some(path) = config_path(env) {
            config.load_file(&path)?;
        }
        for (key, kind, var, _) in KEYS {
            let Some(var) = var else { continue };
            let Some(raw) = env(var).filter(|v| !v.trim().is_empty()) else {
                continue;
            };
            match convert(*kind, &Value::String(raw.clone())) {
                Ok(v) => config.put(key, v, Source::Env(var.to_string())),
                Err(why) => config.warnings.push(format!("{var}={raw} ignored: {why}")),
            }
        }
        for (key, flag, raw) in &flags.values {
            let kind = KEYS
                .iter()
                .find(|(k, ..)| k == key)
                .map(|(_, kind, ..)| *kind)
                .unwrap_or(Kind::Text);
            match convert(kind, &Value::String(raw.clone())) {
                Ok(v) => config.put(key, v, Source::Flag(flag.to_string())),
                Err(why) => config.warnings.push(format!("{flag} {raw} ignored: {why}")),
            }
        }
        Ok(config)
    }

    fn put(&mut self, key: &str, value: Value, source: Source) {
        self.entries.insert(
            key.to_string(),
            Entry {
                key: key.to_string(),
                value,
                source,
            },
        );
    }

    fn load_file(&mut self, path: &Path) -> Result<(), ConfigError> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => {
                self.warnings.push(format!(
                    "config file {} could not be read: {e}",
                    path.display()
                ));
                return Ok(());
            }
        };
        let table: toml::Table = text.parse().map_err(|e: toml::de::Error| ConfigError {
            path: path.display().to_string(),
            message: e.message().to_string(),
        })?;
        self.file = Some(path.to_path_buf());
        let source = Source::File(path.display().to_string());
        for (key, raw) in table {
            let Some((_, kind, ..)) = KEYS.iter().find(|(k, ..)| *k == key) else {
                self.warnings.push(format!(
                    "{}: unknown key `{key}` ignored (known: {})",
                    path.display(),
                    KEYS.iter().map(|k| k.0).collect::<Vec<_>>().join(", ")
                ));
                continue;
            };
            let json = serde_json::to_value(&raw).unwrap_or(Value::Null);
            match convert(*kind, &json) {
                Ok(v) => self.put(&key, v, source.clone()),
                Err(why) => self
                    .warnings
                    .push(format!("{}: `{key}` ignored: {why}", path.display())),
            }
        }
        Ok(())
    }

    /// Every key with its effective value (or null) and source, in key order.
    pub fn entries(&self) -> Vec<Entry> {
        KEYS.iter()
            .map(|(key, ..)| {
                self.entries.get(*key).cloned().unwrap_or(Entry {
                    key: key.to_string(),
                    value: Value::Null,
                    source: Source::Default,
                })
            })
            .collect()
    }

    pub fn text(&self, key: &str) -> Option<String> {
        self.entries.get(key)?.value.as_str().map(str::to_string)
    }

    pub fn source(&self, key: &str) -> Source {
        self.entries
            .get(key)
            .map(|e| e.source.clone())
            .unwrap_or(Source::Default)
    }

    pub fn duration(&self, key: &str) -> Option<Duration> {
        self.entries
            .get(key)?
            .value
            .as_f64()
            .and_then(|s| Duration::try_from_secs_f64(s).ok())
    }

    pub fn flag(&self, key: &str) -> bool {
        self.entries
            .get(key)
            .and_then(|e| e.value.as_bool())
            .unwrap_or(false)
    }

    pub fn count(&self, key: &str) -> Option<u64> {
        self.entries.get(key)?.value.as_u64()
    }

    pub fn list(&self, key: &str) -> Vec<String> {
        self.entries
            .get(key)
            .and_then(|e| e.value.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The raw table of a `Kind::Table` key (empty when unset).
    pub fn table(&self, key: &str) -> serde_json::Map<String, Value> {
        self.entries
            .get(key)
            .and_then(|e| e.value.as_object())
            .cloned()
            .unwrap_or_default()
    }

    pub fn map_value(&self, key: &str, name: &str) -> Option<String> {
        self.entries
            .get(key)?
            .value
            .get(name)?
            .as_str()
            .map(str::to_string)
    }
}

fn config_path(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    if let Some(p) = env(pitroom_env::PITROOM_CONFIG).filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let base = env("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| env("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("pitroom").join("config.toml"))
}

/// Checks and normalises a raw value (from TOML, or a string from env or flags) for `kind`.
fn convert(kind: Kind, raw: &Value) -> Result<Value, String> {
    match (kind, raw) {
        (Kind::Text, Value::String(s)) => Ok(Value::String(s.clone())),
        (Kind::TextList, Value::String(s)) => Ok(Value::Array(
            s.split(',')
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .map(|p| Value::String(p.to_string()))
                .collect(),
        )),
        (Kind::TextList, Value::Array(items)) if items.iter().all(Value::is_string) => {
            Ok(raw.clone())
        }
        (Kind::Duration, Value::String(s)) => parse_duration(s).map(|d| d.as_secs_f64().into()),
        (Kind::Duration, Value::Number(n)) => n
            .as_f64()
            .filter(|f| Duration::try_from_secs_f64(*f).is_ok())
            .map(Value::from)
            .ok_or_else(|| "expected a duration".to_string()),
        (Kind::Bool, Value::Bool(_)) => Ok(raw.clone()),
        (Kind::Bool, Value::String(s)) => match s.as_str() {
            "1" | "true" | "yes" | "on" => Ok(Value::Bool(true)),
            "0" | "false" | "no" | "off" => Ok(Value::Bool(false)),
            _ => Err("expected true or false".into()),
        },
        (Kind::Count, Value::Number(n)) if n.as_u64().is_some() => Ok(raw.clone()),
        (Kind::Count, Value::String(s)) => s
            .trim()
            .parse::<u64>()
            .map(Value::from)
            .map_err(|_| "expected a whole number".into()),
        (Kind::TextMap, Value::Object(m)) if m.values().all(Value::is_string) => Ok(raw.clone()),
        (Kind::Table, Value::Object(_)) => Ok(raw.clone()),
        (kind, _) => Err(format!("expected {}", describe(kind))),
    }
}

fn describe(kind: Kind) -> &'static str {
    match kind {
        Kind::Text => "a string",
        Kind::TextList => "a list of strings",
        Kind::Duration => "a duration such as \"30m\"",
        Kind::Bool => "true or false",
        Kind::Count => "a whole number",
        Kind::TextMap => "a table of strings",
        Kind::Table => "a table",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_from(pairs: Vec<(&'static str, String)>) -> impl Fn(&str) -> Option<String> {
        move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone())
    }

    /// Loads with no config file, the given environment and no flags.
    fn load_without_file(vars: &[(&'static str, &str)]) -> Config {
        let pairs = std::iter::once(("PITROOM_CONFIG", "/nonexistent".to_string()))
            .chain(vars.iter().map(|(k, v)| (*k, v.to_string())))
            .collect();
        Config::load(&env_from(pairs), &FlagValues::default()).unwrap()
    }

    fn write_config(text: &str) -> (tempfile::TempDir, String) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, text).unwrap();
        let p = path.display().to_string();
        (dir, p)
    }

    #[test]
    fn flag_beats_env_beats_file_beats_default() {
        let (_d, path) = write_config("timeout = \"10m\"\nworker = \"opencode:a/b\"\n");
        let env = env_from(vec![
            ("PITROOM_CONFIG", path.clone()),
            ("PITROOM_TIMEOUT", "5m".into()),
        ]);
        let mut flags = FlagValues::default();
        flags.set("timeout", "-t", "90s");
        let c = Config::load(&env, &flags).unwrap();
        assert_eq!(c.duration("timeout"), Some(Duration::from_secs(90)));
        assert_eq!(c.source("timeout"), Source::Flag("-t".into()));
        assert_eq!(c.text("worker").as_deref(), Some("opencode:a/b"));
        assert_eq!(c.source("worker"), Source::File(path));

        let c = Config::load(&env, &FlagValues::default()).unwrap();
        assert_eq!(c.duration("timeout"), Some(Duration::from_secs(300)));
        assert_eq!(c.source("timeout"), Source::Env("PITROOM_TIMEOUT".into()));
        assert_eq!(c.source("primary"), Source::Default);
    }

    #[test]
    fn unknown_keys_and_wrong_types_are_warnings() {
        let (_d, path) = write_config("colour = \"blue\"\nmax_parallel = \"many\"\nweb = true\n");
        let env = env_from(vec![("PITROOM_CONFIG", path)]);
        let c = Config::load(&env, &FlagValues::default()).unwrap();
        assert_eq!(c.warnings.len(), 2, "{:?}", c.warnings);
        assert!(c.warnings.iter().any(|w| w.contains("colour")));
        assert!(c.warnings.iter().any(|w| w.contains("max_parallel")));
        assert_eq!(c.count("max_parallel"), Some(20), "default stays");
        assert!(c.flag("web"));
    }

    #[test]
    fn unparsable_file_is_an_error_naming_the_file() {
        let (_d, path) = write_config("worker = \n");
        let env = env_from(vec![("PITROOM_CONFIG", path.clone())]);
        let err = Config::load(&env, &FlagValues::default()).unwrap_err();
        assert!(err.to_string().contains(&path));
    }

    #[test]
    fn missing_file_is_fine_and_everything_is_default() {
        let env = env_from(vec![("PITROOM_CONFIG", "/nonexistent/c.toml".into())]);
        let c = Config::load(&env, &FlagValues::default()).unwrap();
        assert!(c.warnings.is_empty());
        assert_eq!(c.text("worker").as_deref(), Some("opencode"));
        assert_eq!(c.entries().len(), KEYS.len());
    }

    #[test]
    fn env_lists_are_comma_separated() {
        let c = load_without_file(&[("PITROOM_FALLBACK", "opencode:a/b, codex")]);
        assert_eq!(c.list("fallback"), vec!["opencode:a/b", "codex"]);
    }

    /// Found by fuzzing: `timeout = 1e300` (or `-t 99999999999999999999d`) loaded, then
    /// panicked when read as a `Duration`.
    #[test]
    fn a_duration_too_long_to_hold_is_a_warning_and_the_default_stays() {
        let (_d, path) = write_config("timeout = 1e300\nwatchdog = -1\n");
        let env = env_from(vec![("PITROOM_CONFIG", path)]);
        let mut flags = FlagValues::default();
        flags.set(
            "verify_timeout",
            "--verify-timeout",
            "99999999999999999999d",
        );
        let c = Config::load(&env, &flags).unwrap();
        assert_eq!(c.warnings.len(), 3, "{:?}", c.warnings);
        assert_eq!(c.duration("timeout"), Some(Duration::from_secs(1800)));
        assert_eq!(c.duration("watchdog"), Some(Duration::from_secs(60)));
        assert_eq!(c.duration("verify_timeout"), Some(Duration::from_secs(900)));
    }

    #[test]
    fn bad_env_value_is_a_warning_not_a_failure() {
        let c = load_without_file(&[("PITROOM_TIMEOUT", "soon")]);
        assert_eq!(c.duration("timeout"), Some(Duration::from_secs(1800)));
        assert_eq!(c.warnings.len(), 1);
    }

    #[test]
    fn every_default_in_the_key_table_is_a_usable_value() {
        let c = load_without_file(&[]);
        for (key, _, _, default) in KEYS {
            if default.is_some() {
                assert_eq!(c.source(key), Source::Default, "{key}");
                assert!(
                    c.entries.contains_key(*key),
                    "{key}'s default does not convert"
                );
            }
        }
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    }
}
