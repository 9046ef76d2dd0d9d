//! Aliases: where definitions come from, and how git splits them.

use crate::env;
use crate::globals::{env_get, push_parameter};
use crate::{Context, SIMILARITY_FLOOR};

/// The config the guard can see: alias definitions, plus whether `help.autocorrect` or an
/// include was set in argv or the environment.
#[derive(Clone, Default)]
pub(super) struct Aliases {
    /// In definition order; later ones win.
    pub(super) defs: Vec<AliasDef>,
    pub(super) autocorrect: bool,
    /// `include.path` or `includeIf.*.path`: a file that may define anything, aliases included.
    pub(super) includes: bool,
}

#[derive(Clone)]
pub(super) struct AliasDef {
    pub(super) name: String,
    /// `[alias "Name"] command = …` names are case-sensitive; `alias.name` ones are not.
    pub(super) exact: bool,
    pub(super) expansion: String,
}

impl Aliases {
    pub(super) fn from_context(ctx: &Context<'_>) -> Self {
        let mut aliases = Self::default();
        for (name, expansion) in ctx.aliases {
            let parsed = match name.get(..6) {
                Some(prefix) if prefix.eq_ignore_ascii_case("alias.") => parse_alias_key(name),
                _ => alias_name(name),
            };
            if let Some((name, exact)) = parsed {
                aliases.push(name, exact, expansion);
            }
        }
        if let Some(count) = env_get(ctx.env, env::GIT_CONFIG_COUNT).and_then(parse_count) {
            for n in 0..count {
                let key = env_get(ctx.env, &env::git_config_key(n));
                let value = env_get(ctx.env, &env::git_config_value(n));
                // git gives up on the first missing pair.
                let (Some(key), Some(value)) = (key, value) else {
                    break;
                };
                aliases.push_config(key, Some(value));
            }
        }
        if let Some(parameters) = env_get(ctx.env, env::GIT_CONFIG_PARAMETERS) {
            parse_config_parameters(parameters, &mut |key, value| {
                aliases.push_config(key, value)
            });
        }
        aliases
    }

    pub(super) fn push(&mut self, name: String, exact: bool, expansion: &str) {
        self.defs.push(AliasDef {
            name,
            exact,
            expansion: expansion.to_string(),
        });
    }

    /// A config entry; only `alias.*` keys with a value define aliases.
    pub(super) fn push_config(&mut self, key: &str, value: Option<&str>) {
        let lower = key.to_ascii_lowercase();
        if lower == "help.autocorrect" {
            self.autocorrect = true;
        }
        if lower == "include.path" || (lower.starts_with("includeif.") && lower.ends_with(".path"))
        {
            self.includes = true;
        }
        if let (Some((name, exact)), Some(value)) = (parse_alias_key(key), value) {
            self.push(name, exact, value);
        }
    }

    pub(super) fn lookup(&self, name: &str) -> Option<&str> {
        self.defs
            .iter()
            .rev()
            .find(|def| {
                if def.exact {
                    def.name == name
                } else {
                    def.name.eq_ignore_ascii_case(name)
                }
            })
            .map(|def| def.expansion.as_str())
    }

    pub(super) fn names(&self) -> impl Iterator<Item = &str> {
        self.defs.iter().map(|def| def.name.as_str())
    }
}

/// `alias.<name>` or `alias.<name>.command` (section name case-insensitive).
pub(super) fn parse_alias_key(key: &str) -> Option<(String, bool)> {
    let (section, rest) = key.split_once('.')?;
    if !section.eq_ignore_ascii_case("alias") {
        return None;
    }
    alias_name(rest)
}

/// The alias named by the part of a key after `alias.`, and whether it is case-sensitive.
pub(super) fn alias_name(rest: &str) -> Option<(String, bool)> {
    if rest.is_empty() {
        return None;
    }
    if let Some((subsection, variable)) = rest.rsplit_once('.') {
        if variable.eq_ignore_ascii_case("command") {
            // `[alias ""] command = …` is the plain alias named "command".
            if subsection.is_empty() {
                return Some(("command".to_string(), false));
            }
            return Some((subsection.to_string(), true));
        }
    }
    Some((rest.to_string(), false))
}

/// `GIT_CONFIG_COUNT` as git's strtoul reads it; `None` when git would reject it.
pub(super) fn parse_count(text: &str) -> Option<u64> {
    let trimmed = text.trim_start_matches(|c: char| c.is_ascii() && c_isspace(c as u8));
    let digits = trimmed.strip_prefix('+').unwrap_or(trimmed);
    if text.is_empty() {
        return Some(0);
    }
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Parses `GIT_CONFIG_PARAMETERS`: space-separated `'key=value'` (old style) or
/// `'key'='value'` / `'key'=` (new style) items, shell-single-quoted. Stops where git would
/// report a bogus format.
pub(super) fn parse_config_parameters(text: &str, config: &mut dyn FnMut(&str, Option<&str>)) {
    let bytes = text.as_bytes();
    let mut pos = 0;
    while pos < bytes.len() {
        let Some((key, next)) = sq_dequote_step(bytes, pos) else {
            return;
        };
        let key = String::from_utf8_lossy(&key);
        match next {
            None => {
                push_parameter(&key, config);
                return;
            }
            Some(at) if bytes.get(at).is_some_and(|b| c_isspace(*b)) => {
                push_parameter(&key, config);
                pos = at;
            }
            Some(at) if bytes.get(at) == Some(&b'=') => {
                let at = at + 1;
                match bytes.get(at) {
                    Some(b'\'') => {
                        let Some((value, after)) = sq_dequote_step(bytes, at) else {
                            return;
                        };
                        if let Some(after) = after {
                            if !bytes.get(after).is_some_and(|b| c_isspace(*b)) {
                                return;
                            }
                        }
                        config(&key, Some(&String::from_utf8_lossy(&value)));
                        match after {
                            Some(after) => pos = after,
                            None => return,
                        }
                    }
                    None => {
                        config(&key, None);
                        return;
                    }
                    Some(b) if c_isspace(*b) => {
                        config(&key, None);
                        pos = at;
                    }
                    Some(_) => return,
                }
            }
            Some(_) => return,
        }
        while bytes.get(pos).is_some_and(|b| c_isspace(*b)) {
            pos += 1;
        }
    }
}

/// git's `sq_dequote_step`: one single-quoted word starting at `start` (where `\'` and `\!`
/// may appear between quoted parts). Returns the word and where parsing continues (`None` at
/// the end of the text).
pub(super) fn sq_dequote_step(bytes: &[u8], start: usize) -> Option<(Vec<u8>, Option<usize>)> {
    if bytes.get(start) != Some(&b'\'') {
        return None;
    }
    let mut out = Vec::new();
    let mut src = start;
    loop {
        src += 1;
        let c = *bytes.get(src)?;
        if c != b'\'' {
            out.push(c);
            continue;
        }
        src += 1;
        match bytes.get(src) {
            None => return Some((out, None)),
            Some(b'\\') => {
                let escaped = bytes.get(src + 1).copied();
                if matches!(escaped, Some(b'\'' | b'!')) && bytes.get(src + 2) == Some(&b'\'') {
                    out.extend(escaped);
                    src += 2;
                    continue;
                }
                return Some((out, Some(src)));
            }
            Some(_) => return Some((out, Some(src))),
        }
    }
}

/// git's `split_cmdline`: whitespace separates words; single and double quotes group;
/// backslash escapes outside single quotes. `None` for an unclosed quote or a trailing
/// backslash (git refuses such an alias).
pub(super) fn split_cmdline(text: &str) -> Option<Vec<String>> {
    let bytes = text.as_bytes();
    let mut words = Vec::new();
    let mut word = Vec::new();
    let mut quote = 0u8;
    let mut i = 0;
    while let Some(&c) = bytes.get(i) {
        if quote == 0 && c_isspace(c) {
            words.push(std::mem::take(&mut word));
            i += 1;
            while bytes.get(i).is_some_and(|b| c_isspace(*b)) {
                i += 1;
            }
        } else if quote == 0 && (c == b'\'' || c == b'"') {
            quote = c;
            i += 1;
        } else if quote != 0 && c == quote {
            quote = 0;
            i += 1;
        } else {
            let mut c = c;
            if c == b'\\' && quote != b'\'' {
                i += 1;
                c = *bytes.get(i)?;
            }
            word.push(c);
            i += 1;
        }
    }
    if quote != 0 {
        return None;
    }
    words.push(word);
    Some(
        words
            .into_iter()
            .map(|w| String::from_utf8_lossy(&w).into_owned())
            .collect(),
    )
}

/// C's `isspace` in the "C" locale.
pub(super) fn c_isspace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// git's autocorrection score for `candidate` when `cmd` was typed, if it is below the floor.
pub(super) fn similarity(cmd: &str, candidate: &str) -> Option<usize> {
    // Each extra typed byte costs a deletion (3), each missing one an insertion (1): skip the
    // quadratic computation when the lengths alone put the score over the floor.
    let (typed, wanted) = (cmd.len(), candidate.len());
    if typed > wanted + 1 || wanted > typed + SIMILARITY_FLOOR {
        return None;
    }
    let score = levenshtein(cmd.as_bytes(), candidate.as_bytes()) + 1;
    (score < SIMILARITY_FLOOR).then_some(score)
}

/// git's weighted Damerau-Levenshtein distance as used for autocorrection: swap 0,
/// substitution 2, insertion 1, deletion 3 (from `typed` to `candidate`).
pub(super) fn levenshtein(typed: &[u8], candidate: &[u8]) -> usize {
    const SWAP: usize = 0;
    const SUBSTITUTE: usize = 2;
    const INSERT: usize = 1;
    const DELETE: usize = 3;
    let len2 = candidate.len();
    let mut row0 = vec![0usize; len2 + 1];
    let mut row1: Vec<usize> = (0..=len2).map(|j| j * INSERT).collect();
    let mut row2 = vec![0usize; len2 + 1];
    for (i, &a) in typed.iter().enumerate() {
        row2[0] = (i + 1) * DELETE;
        for (j, &b) in candidate.iter().enumerate() {
            let mut cost = row1[j] + if a == b { 0 } else { SUBSTITUTE };
            if i > 0 && j > 0 && typed[i - 1] == b && a == candidate[j - 1] {
                cost = cost.min(row0[j - 1] + SWAP);
            }
            cost = cost.min(row1[j + 1] + DELETE);
            cost = cost.min(row2[j] + INSERT);
            row2[j + 1] = cost;
        }
        std::mem::swap(&mut row0, &mut row1);
        std::mem::swap(&mut row1, &mut row2);
    }
    row1[len2]
}
