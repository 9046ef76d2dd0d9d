//! Targets: `backend[:model][#effort]`.

use pitroom_workers::KNOWN_BACKENDS;

/// A worker to run: a backend, optionally a model and an effort level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub backend: String,
    pub model: Option<String>,
    pub effort: Option<String>,
}

impl Target {
    /// Parses a target. A prefix counts as a backend only if it is a known backend id, so
    /// `ollama/qwen3:8b` is a model for `default_backend`.
    pub fn parse(text: &str, default_backend: &str) -> Result<Target, String> {
        Target::parse_known(text, default_backend, &[])
    }

    /// Like [`Target::parse`], with more backend ids: the CLIs described in the config.
    pub fn parse_known(
        text: &str,
        default_backend: &str,
        extra: &[&str],
    ) -> Result<Target, String> {
        let known = |b: &str| KNOWN_BACKENDS.contains(&b) || extra.contains(&b);
        let text = text.trim();
        if text.is_empty() {
            return Err("empty worker target; use backend[:model][#effort], e.g. opencode".into());
        }
        let (body, effort) = match text.rsplit_once('#') {
            Some((body, effort)) if !effort.is_empty() => (body, Some(effort.to_string())),
            Some((body, _)) => (body, None),
            None => (text, None),
        };
        let (backend, model) = match body.split_once(':') {
            Some((prefix, model)) if known(prefix) => (
                prefix.to_string(),
                Some(model.to_string()).filter(|m| !m.is_empty()),
            ),
            _ if known(body) => (body.to_string(), None),
            _ if body.is_empty() => (default_backend.to_string(), None),
            // `provider/model` or `qwen3:8b` is a model for the default backend; a bare word
            // that names no backend is a typo or a model in the wrong place.
            _ if body.contains(['/', ':']) => (default_backend.to_string(), Some(body.to_string())),
            _ => return Err(unknown_backend(body, extra)),
        };
        Ok(Target {
            backend,
            model,
            effort,
        })
    }
}

/// `backend[:model][#effort]`: a chain target's text, and its effort.
impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let chain = crate::record::target_text(&self.backend, self.model.as_deref());
        match &self.effort {
            Some(effort) => write!(f, "{chain}#{effort}"),
            None => write!(f, "{chain}"),
        }
    }
}

/// The error for a word that is neither a backend nor a `provider/model`: a typo of a
/// backend (with the nearest one), or a model given where a worker was expected.
fn unknown_backend(word: &str, extra: &[&str]) -> String {
    let backend = word.split(':').next().unwrap_or(word);
    let names: Vec<&str> = KNOWN_BACKENDS
        .iter()
        .copied()
        .chain(extra.iter().copied())
        .collect();
    let nearest = names
        .iter()
        .map(|n| (edit_distance(backend, n), *n))
        .filter(|(d, _)| *d <= 2)
        .min();
    let mut message = format!("`{word}` is not a worker");
    if let Some((_, name)) = nearest {
        message.push_str(&format!("; did you mean `{name}`?"));
    }
    message.push_str(&format!(
        " Workers: {}. A model goes through -m MODEL or backend:model (e.g. opencode:{backend})",
        names.join(", ")
    ));
    message
}

/// Levenshtein distance over characters (the names are short).
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous + usize::from(ca != *cb);
            previous = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(previous + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mistyped_backend_is_refused_with_the_nearest_name() {
        let err = Target::parse("cdex", "opencode").expect_err("not a backend");
        assert!(err.contains("did you mean `codex`?"), "{err}");
        let err = Target::parse("nosuchcli", "opencode").expect_err("not a backend");
        assert!(err.contains("`nosuchcli` is not a worker"), "{err}");
        assert!(!err.contains("did you mean"), "{err}");
        assert!(err.contains("-m MODEL"), "{err}");
    }

    #[test]
    fn a_configured_worker_is_a_backend_and_its_typo_is_suggested() {
        let extra = ["mycli"];
        assert_eq!(
            Target::parse_known("mycli", "opencode", &extra)
                .unwrap()
                .backend,
            "mycli"
        );
        let err = Target::parse_known("mycl", "opencode", &extra).expect_err("typo");
        assert!(err.contains("did you mean `mycli`?"), "{err}");
    }

    #[test]
    fn a_provider_model_stays_a_model_for_the_default_backend() {
        let t = Target::parse("openrouter/qwen3-coder", "opencode").unwrap();
        assert_eq!(
            (t.backend.as_str(), t.model.as_deref()),
            ("opencode", Some("openrouter/qwen3-coder"))
        );
        let t = Target::parse("ollama/qwen3:8b", "opencode").unwrap();
        assert_eq!(t.model.as_deref(), Some("ollama/qwen3:8b"));
    }

    #[test]
    fn edit_distance_counts_single_edits() {
        for (typed, name, edits) in [
            ("codex", "codex", 0),
            ("cdex", "codex", 1),
            ("claud", "claude", 1),
            ("gemnii", "gemini", 2),
        ] {
            assert_eq!(edit_distance(typed, name), edits, "{typed} ~ {name}");
        }
    }

    fn t(s: &str) -> Target {
        Target::parse(s, "opencode").unwrap()
    }

    #[test]
    fn bare_backend() {
        assert_eq!(t("opencode").model, None);
        assert_eq!(t("codex").backend, "codex");
    }

    #[test]
    fn backend_model_and_effort() {
        let x = t("codex:gpt-5.5#low");
        assert_eq!(x.backend, "codex");
        assert_eq!(x.model.as_deref(), Some("gpt-5.5"));
        assert_eq!(x.effort.as_deref(), Some("low"));
    }

    #[test]
    fn unknown_prefix_stays_part_of_the_model_name() {
        let x = t("ollama/qwen3:8b");
        assert_eq!(x.backend, "opencode");
        assert_eq!(x.model.as_deref(), Some("ollama/qwen3:8b"));
    }

    #[test]
    fn provider_model_for_opencode() {
        let x = t("opencode:fake/fake-model");
        assert_eq!(x.model.as_deref(), Some("fake/fake-model"));
        assert_eq!(x.to_string(), "opencode:fake/fake-model");
    }

    #[test]
    fn effort_only_keeps_no_model() {
        let x = t("codex:#low");
        assert_eq!(x.model, None);
        assert_eq!(x.effort.as_deref(), Some("low"));
    }

    #[test]
    fn empty_target_is_an_error() {
        assert!(Target::parse(" ", "opencode").is_err());
    }

    #[test]
    fn configured_workers_count_as_backends() {
        let x = Target::parse_known("mycli:big#high", "opencode", &["mycli"]).unwrap();
        assert_eq!(
            (x.backend.as_str(), x.model.as_deref()),
            ("mycli", Some("big"))
        );
        assert_eq!(x.effort.as_deref(), Some("high"));
        let y = Target::parse("mycli:big", "opencode").unwrap();
        assert_eq!(y.backend, "opencode", "unknown without the config");
    }
}
