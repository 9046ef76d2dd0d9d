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
            _ => (default_backend.to_string(), Some(body.to_string())),
        };
        Ok(Target {
            backend,
            model,
            effort,
        })
    }

    pub fn display(&self) -> String {
        let mut s = self.backend.clone();
        if let Some(m) = &self.model {
            s.push(':');
            s.push_str(m);
        }
        if let Some(e) = &self.effort {
            s.push('#');
            s.push_str(e);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(x.display(), "opencode:fake/fake-model");
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
