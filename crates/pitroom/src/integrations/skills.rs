//! The skills Pitroom ships (repository root `skills/<name>/SKILL.md`, Agent Skills format),
//! carried in the binary so `install` and the session-start hook work wherever the binary went.
//!
//! The front-matter checker follows the Agent Skills spec as its strict reference validator
//! reads it (`skills-ref`): only the six spec fields, so every host and validator accepts the
//! files. It reads the small YAML subset the skills use (scalars, one string map) and rejects
//! anything else rather than guess what a full YAML parser would make of it.

use std::fmt;

/// One shipped skill: its name (= its folder) and its `SKILL.md`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Skill {
    pub name: &'static str,
    pub text: &'static str,
}

macro_rules! skill {
    ($name:literal) => {
        Skill {
            name: $name,
            text: include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../skills/",
                $name,
                "/SKILL.md"
            )),
        }
    };
}

/// Every skill, the introduction first. A test fails when this list and `skills/` differ.
pub(crate) const SKILLS: &[Skill] = &[
    skill!("using-pitroom"),
    skill!("pitroom-research"),
    skill!("pitroom-crew"),
    skill!("pitroom-isolated-change"),
    skill!("pitroom-review"),
    skill!("pitroom-workflow"),
    skill!("pitroom-shape-task"),
    skill!("pitroom-write-plan"),
    skill!("pitroom-execute-plan"),
    skill!("pitroom-test-first"),
    skill!("pitroom-debug"),
    skill!("pitroom-receive-review"),
    skill!("pitroom-verify-before-done"),
    skill!("pitroom-land-change"),
];

/// The skill the session-start hook injects.
pub(crate) const INTRODUCTION: &str = "using-pitroom";

#[cfg(test)]
/// The spec's front-matter fields; anything else is rejected by strict validators.
pub(crate) const ALLOWED_FIELDS: &[&str] = &[
    "name",
    "description",
    "license",
    "compatibility",
    "metadata",
    "allowed-tools",
];

#[cfg(test)]
pub(crate) const MAX_NAME: usize = 64;
#[cfg(test)]
pub(crate) const MAX_DESCRIPTION: usize = 1024;
#[cfg(test)]
pub(crate) const MAX_COMPATIBILITY: usize = 500;

/// A front-matter value: a scalar, or (for `metadata`) a map of strings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Value {
    Scalar(String),
    Map(Vec<(String, String)>),
}

/// A parsed `SKILL.md`: its fields in order and its Markdown body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Parsed<'a> {
    pub fields: Vec<(String, Value)>,
    pub body: &'a str,
}

#[cfg(test)]
impl Parsed<'_> {
    pub(crate) fn scalar(&self, key: &str) -> Option<&str> {
        self.fields.iter().find_map(|(k, v)| match v {
            Value::Scalar(s) if k == key => Some(s.as_str()),
            _ => None,
        })
    }
}

/// Why a `SKILL.md` is not valid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FrontMatterError {
    pub line: usize,
    pub message: String,
}

impl fmt::Display for FrontMatterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "front matter line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for FrontMatterError {}

fn error(line: usize, message: impl Into<String>) -> FrontMatterError {
    FrontMatterError {
        line,
        message: message.into(),
    }
}

/// Splits a `SKILL.md` into its front matter (between the first two `---` lines) and body.
pub(crate) fn parse(text: &str) -> Result<Parsed<'_>, FrontMatterError> {
    let rest = text
        .strip_prefix("---\n")
        .ok_or_else(|| error(1, "SKILL.md must start with a `---` line"))?;
    let end = rest
        .find("\n---\n")
        .ok_or_else(|| error(1, "no closing `---` line after the front matter"))?;
    let fields = parse_fields(&rest[..end])?;
    Ok(Parsed {
        fields,
        body: &rest[end + "\n---\n".len()..],
    })
}

fn parse_fields(block: &str) -> Result<Vec<(String, Value)>, FrontMatterError> {
    let mut fields: Vec<(String, Value)> = Vec::new();
    for (i, line) in block.lines().enumerate() {
        let n = i + 2; // line 1 is the opening `---`
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        if let Some(entry) = line.strip_prefix("  ") {
            let (k, v) = key_value(entry, n)?;
            match fields.last_mut() {
                Some((_, Value::Map(map))) => map.push((k, scalar(v, n)?)),
                _ => return Err(error(n, "an indented line outside a map")),
            }
            continue;
        }
        let (key, value) = key_value(line, n)?;
        if fields.iter().any(|(k, _)| *k == key) {
            return Err(error(n, format!("`{key}` appears twice")));
        }
        let value = if value.is_empty() {
            Value::Map(Vec::new())
        } else {
            Value::Scalar(scalar(value, n)?)
        };
        fields.push((key, value));
    }
    Ok(fields)
}

fn key_value(line: &str, n: usize) -> Result<(String, &str), FrontMatterError> {
    let (key, value) = line
        .split_once(':')
        .ok_or_else(|| error(n, format!("expected `key: value`, found `{line}`")))?;
    let key = key.trim();
    if key.is_empty()
        || !key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(error(n, format!("`{key}` is not a plain key")));
    }
    Ok((key.to_string(), value.trim()))
}

/// A scalar: a double-quoted string, or a plain one that YAML reads the same way everywhere.
fn scalar(raw: &str, n: usize) -> Result<String, FrontMatterError> {
    if let Some(inner) = raw.strip_prefix('"') {
        let inner = inner
            .strip_suffix('"')
            .ok_or_else(|| error(n, "a quoted value must end with `\"`"))?;
        return unescape(inner, n);
    }
    const INDICATORS: &str = "-?:,[]{}#&*!|>'\"%@`";
    if raw.starts_with(|c| INDICATORS.contains(c)) {
        return Err(error(
            n,
            format!("`{raw}` starts with a YAML indicator; quote it"),
        ));
    }
    if raw.contains(": ") || raw.contains(" #") || raw.ends_with(':') {
        // Some parsers accept this, the spec's validator does not: quote it.
        return Err(error(
            n,
            format!("`{raw}` holds `: ` or ` #`, which YAML reads differently; quote it"),
        ));
    }
    Ok(raw.to_string())
}

fn unescape(inner: &str, n: usize) -> Result<String, FrontMatterError> {
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('"') => out.push('"'),
                Some('\\') => out.push('\\'),
                Some('n') => out.push('\n'),
                other => return Err(error(n, format!("unsupported escape `\\{other:?}`"))),
            },
            '"' => return Err(error(n, "an unescaped `\"` inside a quoted value")),
            c => out.push(c),
        }
    }
    Ok(out)
}

#[cfg(test)]
/// Everything wrong with a skill, by the spec's rules: fields, name format and folder, lengths.
pub(crate) fn problems(folder: &str, text: &str) -> Vec<String> {
    let parsed = match parse(text) {
        Ok(p) => p,
        Err(e) => return vec![e.to_string()],
    };
    let mut out = Vec::new();
    for (key, value) in &parsed.fields {
        if !ALLOWED_FIELDS.contains(&key.as_str()) {
            out.push(format!(
                "unknown field `{key}` (the spec allows {})",
                ALLOWED_FIELDS.join(", ")
            ));
        }
        let is_map = matches!(value, Value::Map(_));
        if is_map != (key == "metadata") {
            out.push(format!("`{key}` has the wrong shape"));
        }
    }
    match parsed.scalar("name") {
        None => out.push("`name` is missing".into()),
        Some(name) => out.extend(name_problems(name, folder)),
    }
    match parsed.scalar("description").map(|d| d.chars().count()) {
        None | Some(0) => out.push("`description` is missing or empty".into()),
        Some(len) if len > MAX_DESCRIPTION => out.push(format!(
            "`description` is {len} characters; at most {MAX_DESCRIPTION}"
        )),
        Some(_) => {}
    }
    if let Some(len) = parsed.scalar("compatibility").map(|c| c.chars().count()) {
        if len == 0 || len > MAX_COMPATIBILITY {
            out.push(format!(
                "`compatibility` is {len} characters; 1 to {MAX_COMPATIBILITY}"
            ));
        }
    }
    out
}

#[cfg(test)]
fn name_problems(name: &str, folder: &str) -> Vec<String> {
    let mut out = Vec::new();
    let len = name.chars().count();
    if len == 0 || len > MAX_NAME {
        out.push(format!("`name` is {len} characters; 1 to {MAX_NAME}"));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        out.push(format!(
            "`name` `{name}` may hold only lowercase letters, digits and `-`"
        ));
    }
    if name.starts_with('-') || name.ends_with('-') || name.contains("--") {
        out.push(format!(
            "`name` `{name}` must not start or end with `-` or hold `--`"
        ));
    }
    if name != folder {
        out.push(format!("`name` `{name}` must match its folder `{folder}`"));
    }
    out
}

/// The shipped skill called `name`.
pub(crate) fn find(name: &str) -> Option<&'static Skill> {
    SKILLS.iter().find(|s| s.name == name)
}

#[cfg(test)]
/// A skill's description, for listings.
pub(crate) fn description(skill: &Skill) -> String {
    parse(skill.text)
        .ok()
        .and_then(|p| p.scalar("description").map(str::to_string))
        .unwrap_or_default()
}

/// A skill's Markdown body, without its front matter.
pub(crate) fn body(skill: &Skill) -> &'static str {
    match parse(skill.text) {
        Ok(p) => p.body,
        Err(_) => skill.text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_skill_meets_the_agent_skills_front_matter_rules() {
        for skill in SKILLS {
            let problems = problems(skill.name, skill.text);
            assert!(problems.is_empty(), "{}: {problems:#?}", skill.name);
        }
    }

    #[test]
    fn the_fourteen_skills_are_exactly_the_folders_under_skills() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../skills");
        let mut folders: Vec<String> = std::fs::read_dir(&dir)
            .expect("skills/ exists")
            .flatten()
            .filter(|e| e.path().join("SKILL.md").is_file())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        folders.sort();
        let mut shipped: Vec<String> = SKILLS.iter().map(|s| s.name.to_string()).collect();
        shipped.sort();
        assert_eq!(folders, shipped);
        assert_eq!(shipped.len(), 14);
    }

    #[test]
    fn all_skill_listings_fit_codex_budget_for_an_unknown_context_window() {
        // Codex lists skills within ~2% of the context window, or 8,000 characters when it does
        // not know the window; every shipped skill should fit even then.
        let total: usize = SKILLS
            .iter()
            .map(|s| s.name.len() + description(s).chars().count())
            .sum();
        assert!(total <= 8_000, "{total} characters");
    }

    #[test]
    fn skill_bodies_stay_under_the_specs_500_lines() {
        for skill in SKILLS {
            let lines = skill.text.lines().count();
            assert!(lines < 500, "{}: {lines} lines", skill.name);
        }
    }

    #[test]
    fn an_unknown_field_is_rejected() {
        let text = "---\nname: demo\ndescription: Does a thing.\nwhen_to_use: always\n---\nbody\n";
        let p = problems("demo", text);
        assert!(
            p.iter().any(|m| m.contains("unknown field `when_to_use`")),
            "{p:?}"
        );
    }

    #[test]
    fn names_follow_the_spec_format_and_match_the_folder() {
        let check = |name: &str, folder: &str| {
            problems(folder, &format!("---\nname: {name}\ndescription: x\n---\n"))
        };
        assert!(check("good-name-2", "good-name-2").is_empty());
        assert!(!check("Bad", "Bad").is_empty());
        assert!(!check("\"-lead\"", "-lead").is_empty());
        assert!(!check("double--dash", "double--dash").is_empty());
        assert!(!check("tail-", "tail-").is_empty());
        assert!(!check("other", "folder").is_empty());
        let long = "a".repeat(65);
        assert!(!check(&long, &long).is_empty());
    }

    #[test]
    fn a_description_over_1024_characters_or_empty_is_rejected() {
        let long = format!("---\nname: x\ndescription: {}\n---\n", "a".repeat(1025));
        assert!(!problems("x", &long).is_empty());
        let empty = "---\nname: x\ndescription: \"\"\n---\n";
        assert!(!problems("x", empty).is_empty());
    }

    #[test]
    fn an_unquoted_colon_in_a_value_is_rejected_and_a_quoted_one_accepted() {
        let bare = "---\nname: x\ndescription: Use when: always\n---\n";
        assert!(!problems("x", bare).is_empty());
        let quoted = "---\nname: x\ndescription: \"Use when: always\"\n---\n";
        assert!(
            problems("x", quoted).is_empty(),
            "{:?}",
            problems("x", quoted)
        );
    }

    #[test]
    fn metadata_is_a_map_of_strings() {
        let text = "---\nname: x\ndescription: y\nmetadata:\n  version: \"1.0\"\n---\nbody";
        let parsed = parse(text).expect("parses");
        assert_eq!(
            parsed.fields[2],
            (
                "metadata".into(),
                Value::Map(vec![("version".into(), "1.0".into())])
            )
        );
        assert!(problems("x", text).is_empty());
        assert_eq!(parsed.body, "body");
    }
}
