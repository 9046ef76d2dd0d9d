//! Citation checking (PRODUCT.md §10): find the `path:line` references in a worker's answer and
//! check each one on disk before the answer reaches the primary agent.
//!
//! [`find_citations`] is a pure, hand-written scanner. [`verify`] resolves every citation against
//! the project (directly, or through a lazily built index of the project's files for bare and
//! partial names), checks the line range, and — when a backticked identifier is cited next to
//! the reference — checks that the identifier is near the range or defined above it.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::Read;
use std::path::{Component, Path, PathBuf};
use std::rc::Rc;

use serde::{Deserialize, Serialize};

/// One reference found in an answer.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Citation {
    /// The reference as written, without its wrapping (`src/a.rs:12:5`, `a.rs#L3-L9`).
    pub text: String,
    /// The path as written, cleaned of wrapping punctuation and of the line suffix.
    pub path: String,
    /// First cited line (1-based; 0 when the answer wrote 0).
    pub start: u32,
    /// Last cited line (equal to `start` for a single line).
    pub end: u32,
    /// The backticked identifier cited next to the reference, if any (`Session::new`).
    pub symbol: Option<String>,
}

/// What checking one citation on disk found.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Verdict {
    /// The file exists, the range lies inside it, and the cited identifier (if any) is there.
    Verified {
        /// The file, relative to the project root, with `/` separators.
        file: String,
    },
    /// No such file in the project.
    Missing,
    /// A bare or partial name that matches several files.
    Ambiguous {
        /// Every matching project-relative path, sorted.
        candidates: Vec<String>,
    },
    /// Line 0, a reversed range, or a line past the end of the file.
    OutOfRange {
        /// How many lines the file has.
        lines: u32,
    },
    /// The cited identifier is neither near the range nor defined above it.
    SymbolNotFound {
        /// The identifier as cited.
        symbol: String,
    },
    /// An absolute path (or `~`, or `..`) that leads outside the project.
    OutsideProject,
}

/// A citation and its verdict.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct CheckedCitation {
    pub citation: Citation,
    pub verdict: Verdict,
}

impl CheckedCitation {
    /// Whether the citation checked out.
    pub fn is_verified(&self) -> bool {
        matches!(self.verdict, Verdict::Verified { .. })
    }

    /// One short line, e.g. `src/a.rs:90 — file has 40 lines`.
    pub fn reason(&self) -> String {
        let c = &self.citation;
        let what = match &self.verdict {
            Verdict::Verified { file } if *file == c.path => "ok".to_string(),
            Verdict::Verified { file } => format!("ok ({file})"),
            Verdict::Missing => "no such file in the project".to_string(),
            Verdict::Ambiguous { candidates } => {
                let name = c.path.trim_start_matches("./");
                let mut listed = candidates
                    .iter()
                    .take(3)
                    .map(String::as_str)
                    .collect::<Vec<_>>()
                    .join(", ");
                if candidates.len() > 3 {
                    listed.push_str(", …");
                }
                format!(
                    "ambiguous: {} files named {name} ({listed})",
                    candidates.len()
                )
            }
            Verdict::OutOfRange { .. } if c.start == 0 => {
                "line 0 does not exist (lines start at 1)".to_string()
            }
            Verdict::OutOfRange { .. } if c.start > c.end => {
                format!("range {}-{} is reversed", c.start, c.end)
            }
            Verdict::OutOfRange { lines: 1 } => "file has 1 line".to_string(),
            Verdict::OutOfRange { lines } => format!("file has {lines} lines"),
            Verdict::SymbolNotFound { symbol } if c.start == c.end => {
                format!("`{symbol}` not found near line {}", c.start)
            }
            Verdict::SymbolNotFound { symbol } => {
                format!("`{symbol}` not found near lines {}-{}", c.start, c.end)
            }
            Verdict::OutsideProject => "outside the project".to_string(),
        };
        format!("{} — {what}", c.text)
    }
}

/// Every citation of an answer, checked.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct RefReport {
    /// How many citations checked out.
    pub verified: u32,
    /// How many distinct citations the answer holds.
    pub total: u32,
    /// Each distinct citation, in the order of the answer.
    pub checked: Vec<CheckedCitation>,
}

impl RefReport {
    /// The citations that did not check out.
    pub fn bad(&self) -> impl Iterator<Item = &CheckedCitation> {
        self.checked.iter().filter(|c| !c.is_verified())
    }
}

/// Finds citations in `answer` (pure, no I/O).
pub fn find_citations(answer: &str) -> Vec<Citation> {
    let cs: Vec<(usize, char)> = answer.char_indices().collect();
    let mut found = scan_refs(answer, &cs);
    attach_symbols(answer, &cs, &mut found);
    found.into_iter().map(|f| f.citation).collect()
}

/// Finds and checks every citation against the project at `root` (absolute paths must lie inside
/// `root`; other absolute paths are OutsideProject). De-duplicates identical citations.
pub fn verify(answer: &str, root: &Path) -> RefReport {
    Verifier::new(root).run(answer)
}

// ---------------------------------------------------------------------------------------------
// Vocabulary

/// File extensions that make a bare `name.ext:12` a citation (compared in lower case).
#[rustfmt::skip]
const KNOWN_EXTENSIONS: &[&str] = &[
    "rs", "ts", "tsx", "mts", "cts", "js", "jsx", "mjs", "cjs", "py", "pyi", "pyx", "go", "java",
    "kt", "kts", "rb", "php", "c", "h", "cc", "cpp", "cxx", "hpp", "hh", "hxx", "cs", "fs", "fsx",
    "swift", "m", "mm", "scala", "sc", "sh", "bash", "zsh", "fish", "ps1", "psm1", "bat", "cmd",
    "sql", "html", "htm", "css", "scss", "sass", "less", "vue", "svelte", "astro", "json", "json5",
    "jsonc", "yaml", "yml", "toml", "ini", "cfg", "conf", "xml", "xsd", "plist", "md", "mdx",
    "markdown", "rst", "adoc", "txt", "lock", "gradle", "properties", "proto", "graphql", "gql",
    "tf", "tfvars", "hcl", "lua", "dart", "ex", "exs", "erl", "hrl", "hs", "lhs", "ml", "mli",
    "nix", "zig", "r", "jl", "pl", "pm", "rkt", "clj", "cljs", "cljc", "edn", "el", "elm", "nim",
    "cr", "sol", "asm", "wat", "cmake", "mk", "bazel", "bzl", "gn", "gni", "ipynb", "csv", "tsv",
    "diff", "patch", "pug", "hbs", "ejs", "erb", "j2", "jinja", "twig", "liquid", "tmpl", "tpl",
    "mustache", "groovy", "vb", "xaml", "csproj", "sln", "fsproj", "vcxproj", "cu", "cuh", "metal",
    "glsl", "hlsl", "wgsl", "frag", "vert", "prisma", "svg",
];

/// File names cited as they are, without a known extension (also as `Name.suffix`).
#[rustfmt::skip]
const KNOWN_NAMES: &[&str] = &[
    "go.mod", "go.sum", "go.work", "Makefile", "makefile", "GNUmakefile", "Dockerfile",
    "Containerfile", "Rakefile", "Gemfile", "Procfile", "Justfile", "justfile", "Vagrantfile",
    "Brewfile", "Podfile", "Jenkinsfile", "Caddyfile", "Earthfile", "Tiltfile", "Pipfile",
    "Snakefile", "Guardfile", "Capfile", "Berksfile", "Fastfile", "Dangerfile", "BUILD",
    "WORKSPACE", "LICENSE", "LICENCE", "README", "CHANGELOG", "CONTRIBUTING", "AUTHORS", "NOTICE",
    "COPYING", "CODEOWNERS", "OWNERS", "VERSION",
];

/// Dot files cited by name (`.env:3`, `.gitignore:2`, `.env.local:1`), without the dot.
#[rustfmt::skip]
const DOT_FILES: &[&str] = &[
    "env", "envrc", "gitignore", "gitattributes", "gitmodules", "dockerignore", "editorconfig",
    "npmrc", "nvmrc", "yarnrc", "prettierrc", "eslintrc", "babelrc", "stylelintrc",
    "browserslistrc", "mocharc", "swcrc", "bashrc", "zshrc", "profile", "bash_profile", "vimrc",
    "htaccess", "tool-versions", "python-version", "node-version", "ruby-version", "clang-format",
    "clang-tidy",
];

/// Names that look like files but are products (`Node.js:20` is a version, not a line).
#[rustfmt::skip]
const PRODUCT_NAMES: &[&str] = &[
    "node.js", "next.js", "nuxt.js", "vue.js", "react.js", "express.js", "three.js", "d3.js",
    "chart.js", "ember.js", "backbone.js", "angular.js", "socket.io", "deno.js", "bun.js",
];

/// Top-level domains that mark a first path segment as a host (`example.com/a.rs:3`).
#[rustfmt::skip]
const HOST_SUFFIXES: &[&str] = &[
    "com", "org", "net", "io", "dev", "app", "ai", "co", "gov", "edu", "info", "biz", "me", "us",
    "uk", "de", "fr", "jp", "cn", "ru", "xyz", "cloud", "local", "localhost", "internal",
];

/// Directories the index never enters (besides every hidden directory).
#[rustfmt::skip]
const SKIPPED_DIRS: &[&str] = &[
    ".git", "node_modules", "target", "dist", "build", "out", "vendor", ".venv", "venv",
    "__pycache__", ".next", ".cache",
];

/// Words that, right before a name, make the line a definition of it.
#[rustfmt::skip]
const DEF_KEYWORDS: &[&str] = &[
    "fn", "def", "function", "function*", "func", "fun", "class", "struct", "enum", "trait", "impl",
    "interface", "type", "typealias", "const", "let", "var", "val", "mod", "module", "macro_rules!",
    "union", "protocol", "object", "record", "namespace", "sub", "defmodule", "defp", "defmacro",
    "static", "extension", "actor",
];

/// Words that may precede the name inside a backticked identifier (`pub fn parse`).
#[rustfmt::skip]
const SYMBOL_PREFIX_WORDS: &[&str] = &[
    "pub", "async", "unsafe", "extern", "export", "default", "public", "private", "protected",
    "internal", "abstract", "final", "override", "virtual", "inline", "static", "fn", "def",
    "function", "func", "fun", "class", "struct", "enum", "trait", "impl", "interface", "type",
    "const", "let", "var", "val", "mod", "module", "macro", "union", "protocol", "object", "record",
    "namespace", "sub",
];

/// First words of lines that call rather than define (`return parse(x)`).
const CONTROL_WORDS: &[&str] = &[
    "return", "if", "else", "elif", "while", "for", "await", "yield", "throw", "raise", "new",
    "case", "print", "echo", "assert", "del", "not", "and", "or", "match", "when", "unless",
    "until", "with", "do", "go", "defer",
];

/// Words that, ending the gap between an identifier and the next reference, tie them together
/// (`parse` at src/a.rs:3).
const LINKING_WORDS: &[&str] = &["at", "in", "on", "from", "see"];

/// How far back (in chars) the URL check looks for the start of a reference's word.
const MAX_WORD_LOOKBACK: usize = 2048;
/// How many words may separate an identifier from its reference.
const MAX_GAP_WORDS: usize = 4;
/// How far (in lines) around the range an identifier may appear.
const SYMBOL_SLACK: u32 = 3;
/// How far above the range a definition may enclose it.
const DEFINITION_REACH: u32 = 200;
/// Stop indexing after this many files.
const MAX_INDEXED_FILES: usize = 200_000;
/// Files larger than this only get their lines counted, by streaming.
const STREAM_ABOVE_BYTES: u64 = 20 * 1024 * 1024;

// ---------------------------------------------------------------------------------------------
// Scanning references

/// A reference and where it sits, in char indices `[from, to)`.
struct Found {
    citation: Citation,
    from: usize,
    to: usize,
}

fn ch(cs: &[(usize, char)], i: usize) -> Option<char> {
    cs.get(i).map(|&(_, c)| c)
}

fn byte_at(s: &str, cs: &[(usize, char)], i: usize) -> usize {
    cs.get(i).map_or(s.len(), |&(b, _)| b)
}

fn is_path_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | '@' | '+' | '~')
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

fn scan_refs(s: &str, cs: &[(usize, char)]) -> Vec<Found> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < cs.len() {
        match try_ref(s, cs, i) {
            Some(found) => {
                i = found.to.max(i + 1);
                out.push(found);
            }
            None => i += 1,
        }
    }
    out
}

/// A reference whose path ends right before `i` (a `:` or the `#` of `#L`), if there is one.
fn try_ref(s: &str, cs: &[(usize, char)], i: usize) -> Option<Found> {
    let (start, end, to) = match ch(cs, i)? {
        ':' => colon_lines(cs, i + 1)?,
        '#' => hash_lines(cs, i + 1)?,
        _ => return None,
    };
    if !ends_cleanly(cs, to) {
        return None;
    }
    let mut from = i;
    while from > 0 && is_path_char(cs[from - 1].1) {
        from -= 1;
    }
    while from < i && cs[from].1 == '-' {
        from += 1;
    }
    if from == i {
        return None;
    }
    // Anything with `://` before it in the same word is a URL.
    let mut word = from;
    while word > 0 && from - word < MAX_WORD_LOOKBACK && !cs[word - 1].1.is_whitespace() {
        word -= 1;
    }
    if s[byte_at(s, cs, word)..byte_at(s, cs, i)].contains("://") {
        return None;
    }
    let path = &s[byte_at(s, cs, from)..byte_at(s, cs, i)];
    if !plausible_path(path) {
        return None;
    }
    Some(Found {
        citation: Citation {
            text: s[byte_at(s, cs, from)..byte_at(s, cs, to)].to_string(),
            path: path.to_string(),
            start,
            end,
            symbol: None,
        },
        from,
        to,
    })
}

/// 1 to 9 ASCII digits at `k`: their value and the index after them.
fn digits(cs: &[(usize, char)], k: usize) -> Option<(u32, usize)> {
    let mut m = k;
    let mut value: u32 = 0;
    while let Some(c) = ch(cs, m).filter(char::is_ascii_digit) {
        if m - k == 9 {
            return None;
        }
        value = value * 10 + c.to_digit(10).unwrap_or(0);
        m += 1;
    }
    (m > k).then_some((value, m))
}

/// `-20`, `–20` or `-L20` after a start line.
fn range_end(cs: &[(usize, char)], k: usize) -> Option<(u32, usize)> {
    if !matches!(ch(cs, k), Some('-' | '–')) {
        return None;
    }
    let m = if ch(cs, k + 1) == Some('L') {
        k + 2
    } else {
        k + 1
    };
    digits(cs, m)
}

/// After `:`: `12`, `12-20`, `12:5` (column ignored), `L12`, `L12-L20`.
fn colon_lines(cs: &[(usize, char)], k: usize) -> Option<(u32, u32, usize)> {
    let l_prefix = ch(cs, k) == Some('L');
    let (start, k) = digits(cs, if l_prefix { k + 1 } else { k })?;
    if let Some((end, k)) = range_end(cs, k) {
        return Some((start, end, k));
    }
    if !l_prefix && ch(cs, k) == Some(':') {
        if let Some((_column, k)) = digits(cs, k + 1) {
            // `12:5-14:2`: a range of line:column positions.
            if let Some((end, k)) = range_end(cs, k) {
                let k = match ch(cs, k) {
                    Some(':') => digits(cs, k + 1).map_or(k, |(_, m)| m),
                    _ => k,
                };
                return Some((start, end, k));
            }
            return Some((start, start, k));
        }
    }
    Some((start, start, k))
}

/// After `#`: `L12`, `L12-L20`, `L12-20`, with optional GitHub columns (`L12C3-L20C9`).
fn hash_lines(cs: &[(usize, char)], k: usize) -> Option<(u32, u32, usize)> {
    if ch(cs, k) != Some('L') {
        return None;
    }
    let skip_column = |k: usize| match ch(cs, k) {
        Some('C') => digits(cs, k + 1).map_or(k, |(_, m)| m),
        _ => k,
    };
    let (start, k) = digits(cs, k + 1)?;
    let k = skip_column(k);
    match range_end(cs, k) {
        Some((end, k)) => Some((start, end, skip_column(k))),
        None => Some((start, start, k)),
    }
}

/// Whether the reference may end at `k`: end of text, space or closing punctuation — not the
/// middle of a longer token (`1.2.3:4.5`, `a.rs:12abc`, `a.rs:12/x`).
fn ends_cleanly(cs: &[(usize, char)], k: usize) -> bool {
    let Some(c) = ch(cs, k) else {
        return true;
    };
    if c.is_alphanumeric()
        || matches!(
            c,
            '_' | '/' | '\\' | '@' | '#' | '%' | '$' | '~' | '+' | '=' | '&'
        )
    {
        return false;
    }
    if matches!(c, '.' | ':' | '-' | '–') {
        return !ch(cs, k + 1).is_some_and(char::is_alphanumeric);
    }
    true
}

/// Whether a would-be path (the text before `:12`) names a file rather than a method call,
/// a host, a version, a time or a ratio.
fn plausible_path(path: &str) -> bool {
    if !path.chars().any(char::is_alphabetic) || path.ends_with('/') || path.contains("//") {
        return false;
    }
    if is_version(path) {
        return false;
    }
    let name = path.rsplit('/').next().unwrap_or(path);
    if name.is_empty() || name == "." || name == ".." {
        return false;
    }
    match path.split_once('/') {
        Some((first, _)) => !is_host(first),
        None => is_known_file_name(name),
    }
}

/// `v1.2.3`, `1.2`, `V2.0.1-rc1`.
fn is_version(s: &str) -> bool {
    let s = s.strip_prefix(['v', 'V']).unwrap_or(s);
    let parts: Vec<&str> = s.split('.').collect();
    parts.len() >= 2
        && parts
            .iter()
            .all(|p| p.chars().next().is_some_and(|c| c.is_ascii_digit()))
}

/// `localhost`, `example.com`, `127.0.0.1` as the first segment of a path.
fn is_host(segment: &str) -> bool {
    if segment == "localhost" {
        return true;
    }
    if segment.starts_with('.') || !segment.contains('.') {
        return false;
    }
    if segment.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return true;
    }
    let tld = segment
        .rsplit('.')
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    HOST_SUFFIXES.contains(&tld.as_str())
}

fn has_known_extension(name: &str) -> bool {
    match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() && !stem.ends_with('.') => {
            KNOWN_EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str())
        }
        _ => false,
    }
}

/// A file name without `/` that is cited on its own: known extension, known extension-less
/// name (or `Name.suffix`), or known dot file — but not a product name (`Node.js:20`).
fn is_known_file_name(name: &str) -> bool {
    if PRODUCT_NAMES.contains(&name.to_ascii_lowercase().as_str()) {
        return false;
    }
    if let Some(rest) = name.strip_prefix('.') {
        let first = rest.split('.').next().unwrap_or("");
        if DOT_FILES.contains(&first) {
            return true;
        }
    }
    let stem = name.split('.').next().unwrap_or("");
    KNOWN_NAMES.contains(&name) || KNOWN_NAMES.contains(&stem) || has_known_extension(name)
}

// ---------------------------------------------------------------------------------------------
// Identifiers cited next to references

/// An inline code span holding an identifier, in char indices `[from, to)` (backticks included).
struct Span {
    from: usize,
    to: usize,
    ident: String,
}

fn code_spans(cs: &[(usize, char)]) -> Vec<Span> {
    let run_at = |k: usize| cs[k..].iter().take_while(|&&(_, c)| c == '`').count();
    let mut out = Vec::new();
    let mut i = 0;
    while i < cs.len() {
        if cs[i].1 != '`' {
            i += 1;
            continue;
        }
        let run = run_at(i);
        let open_end = i + run;
        let inline = run <= 2;
        let mut j = open_end;
        let mut close = None;
        while j < cs.len() {
            match cs[j].1 {
                '`' => {
                    let r = run_at(j);
                    if r == run {
                        close = Some(j);
                        break;
                    }
                    j += r;
                }
                '\n' if inline => break,
                _ => j += 1,
            }
        }
        match close {
            Some(j) => {
                if inline {
                    let content: String = cs[open_end..j].iter().map(|&(_, c)| c).collect();
                    if let Some(ident) = normalize_symbol(&content) {
                        out.push(Span {
                            from: i,
                            to: j + run,
                            ident,
                        });
                    }
                }
                i = j + run;
            }
            None => i = open_end,
        }
    }
    out
}

/// The identifier a code span names (`parse_config`, `Session::new`, `fn load` → `load`,
/// `run()` → `run`), or `None` for code that is not one identifier (paths, file names,
/// expressions).
fn normalize_symbol(content: &str) -> Option<String> {
    // Drop argument lists and generics.
    let mut called = false;
    let mut depth = 0usize;
    let mut flat = String::new();
    for c in content.trim().replace("->", ".").chars() {
        match c {
            '(' | '<' => {
                called |= c == '(';
                depth += 1;
            }
            ')' | '>' if depth > 0 => depth -= 1,
            _ if depth == 0 => flat.push(c),
            _ => {}
        }
    }
    if depth > 0 {
        return None; // `a < b`: an expression, not a name
    }
    let words: Vec<&str> = flat.split_whitespace().collect();
    let (last, prefix) = words.split_last()?;
    if !prefix.iter().all(|w| SYMBOL_PREFIX_WORDS.contains(w)) {
        return None;
    }
    let token = last
        .trim_end_matches(['!', '?'])
        .trim_start_matches(['&', '*']);
    let segments: Vec<&str> = token
        .split("::")
        .flat_map(|s| s.split(['.', '#']))
        .collect();
    let is_ident = |s: &str| {
        let mut chars = s.chars();
        chars
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_' || c == '$')
            && chars.all(is_ident_char)
    };
    if !segments.iter().all(|s| is_ident(s)) {
        return None;
    }
    if !called && (has_known_extension(token) || KNOWN_NAMES.contains(&token)) {
        return None;
    }
    Some(token.to_string())
}

/// Whether `gap` crosses a line or sentence boundary.
fn crosses_sentence(gap: &str) -> bool {
    let mut chars = gap.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\n' {
            return true;
        }
        if matches!(c, '.' | '!' | '?' | ';') && chars.peek().is_some_and(|n| n.is_whitespace()) {
            return true;
        }
    }
    false
}

fn gap_words(gap: &str) -> Vec<String> {
    gap.chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '_' || c == '\'' {
                c.to_ascii_lowercase()
            } else {
                ' '
            }
        })
        .collect::<String>()
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// Gives each reference the nearest adjacent backticked identifier of its sentence.
///
/// An identifier between two references goes to the nearer one, unless the words between it
/// and the next reference end with "at", "in", "on"… (`parse` at a.rs:3): then it goes to that
/// one. A reference with several identifiers keeps the nearest.
fn attach_symbols(s: &str, cs: &[(usize, char)], found: &mut [Found]) {
    if found.is_empty() {
        return;
    }
    let text = |from: usize, to: usize| &s[byte_at(s, cs, from)..byte_at(s, cs, to)];
    let adjacent = |gap: &str| !crosses_sentence(gap) && gap_words(gap).len() <= MAX_GAP_WORDS;
    // Per reference: the nearest identifier claimed so far and its distance.
    let mut best: Vec<Option<(usize, String)>> = vec![None; found.len()];
    for span in code_spans(cs) {
        // `found` is sorted and disjoint: references ending by the span start come first.
        let split = found.partition_point(|f| f.to <= span.from);
        if found.get(split).is_some_and(|f| f.from < span.to) {
            continue; // the span overlaps a reference
        }
        let prev = split.checked_sub(1).and_then(|p| {
            let gap = text(found[p].to, span.from);
            adjacent(gap).then_some((p, span.from - found[p].to))
        });
        let next = found.get(split).and_then(|f| {
            let gap = text(span.to, f.from);
            let linked = gap_words(gap)
                .last()
                .is_some_and(|w| LINKING_WORDS.contains(&w.as_str()));
            adjacent(gap).then_some((split, f.from - span.to, linked))
        });
        let choice = match (prev, next) {
            (_, Some((n, d, true))) => Some((n, d)),
            (Some((p, dp)), Some((n, dn, false))) => Some(if dn < dp { (n, dn) } else { (p, dp) }),
            (Some(p), None) => Some(p),
            (None, Some((n, d, false))) => Some((n, d)),
            (None, None) => None,
        };
        if let Some((r, d)) = choice {
            if best[r].as_ref().is_none_or(|(bd, _)| d < *bd) {
                best[r] = Some((d, span.ident));
            }
        }
    }
    for (f, b) in found.iter_mut().zip(best) {
        f.citation.symbol = b.map(|(_, ident)| ident);
    }
}

// ---------------------------------------------------------------------------------------------
// Checking on disk

/// The project's files, for bare and partial names.
struct FileIndex {
    /// Project-relative paths with `/` separators, sorted.
    paths: Vec<String>,
    /// File name → indices into `paths`.
    by_name: HashMap<String, Vec<usize>>,
    /// The walk stopped at the file limit.
    truncated: bool,
}

impl FileIndex {
    fn build(root: &Path, max_files: usize) -> FileIndex {
        let mut paths = Vec::new();
        let mut truncated = false;
        let mut stack = vec![String::new()];
        'walk: while let Some(dir) = stack.pop() {
            let Ok(entries) = fs::read_dir(root.join(&dir)) else {
                continue;
            };
            for entry in entries.flatten() {
                let name = entry.file_name();
                let Some(name) = name.to_str() else {
                    continue;
                };
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                let rel = if dir.is_empty() {
                    name.to_string()
                } else {
                    format!("{dir}/{name}")
                };
                if kind.is_dir() {
                    if !name.starts_with('.') && !SKIPPED_DIRS.contains(&name) {
                        stack.push(rel);
                    }
                    continue;
                }
                let is_file = kind.is_file()
                    || (kind.is_symlink() && fs::metadata(entry.path()).is_ok_and(|m| m.is_file()));
                if !is_file {
                    continue;
                }
                if paths.len() >= max_files {
                    truncated = true;
                    break 'walk;
                }
                paths.push(rel);
            }
        }
        paths.sort();
        let mut by_name: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, p) in paths.iter().enumerate() {
            let name = p.rsplit('/').next().unwrap_or(p);
            by_name.entry(name.to_string()).or_default().push(i);
        }
        FileIndex {
            paths,
            by_name,
            truncated,
        }
    }

    /// Indexed paths equal to `name` or ending with `/name`, sorted.
    fn lookup(&self, name: &str) -> Vec<String> {
        let file = name.rsplit('/').next().unwrap_or(name);
        let suffix = format!("/{name}");
        self.by_name
            .get(file)
            .into_iter()
            .flatten()
            .map(|&i| &self.paths[i])
            .filter(|p| *p == name || p.ends_with(&suffix))
            .cloned()
            .collect()
    }
}

/// A file's lines, read once.
enum FileData {
    /// The whole (lossily decoded) text and the byte offset where each line starts.
    Text {
        text: String,
        starts: Vec<usize>,
    },
    /// A file too large to hold: only its line count.
    Counted(u32),
    Unreadable,
}

impl FileData {
    fn read(path: &Path, stream_above: u64) -> FileData {
        let Ok(meta) = fs::metadata(path) else {
            return FileData::Unreadable;
        };
        if meta.len() > stream_above {
            return count_lines(path).map_or(FileData::Unreadable, FileData::Counted);
        }
        let Ok(bytes) = fs::read(path) else {
            return FileData::Unreadable;
        };
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let mut starts = Vec::new();
        if !text.is_empty() {
            starts.push(0);
            starts.extend(
                text.match_indices('\n')
                    .map(|(i, _)| i + 1)
                    .filter(|&i| i < text.len()),
            );
        }
        FileData::Text { text, starts }
    }

    fn line_count(&self) -> Option<u32> {
        match self {
            FileData::Text { starts, .. } => Some(u32::try_from(starts.len()).unwrap_or(u32::MAX)),
            FileData::Counted(n) => Some(*n),
            FileData::Unreadable => None,
        }
    }

    /// Line `n` (1-based) without its line ending.
    fn line(&self, n: u32) -> &str {
        let FileData::Text { text, starts } = self else {
            return "";
        };
        let Some(&from) = (n as usize).checked_sub(1).and_then(|i| starts.get(i)) else {
            return "";
        };
        let to = starts.get(n as usize).copied().unwrap_or(text.len());
        text.get(from..to)
            .unwrap_or("")
            .trim_end_matches(['\n', '\r'])
    }
}

/// Counts lines by streaming: newlines, plus a last line without one.
fn count_lines(path: &Path) -> Option<u32> {
    let mut file = fs::File::open(path).ok()?;
    let mut buf = vec![0u8; 64 * 1024];
    let mut newlines: u64 = 0;
    let mut last = None;
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return None,
        };
        newlines += buf[..n].iter().filter(|&&b| b == b'\n').count() as u64;
        last = Some(buf[n - 1]);
    }
    let lines = newlines + u64::from(last.is_some_and(|b| b != b'\n'));
    Some(u32::try_from(lines).unwrap_or(u32::MAX))
}

/// What the verifier did, for tests and diagnostics.
#[derive(Debug, Default, Clone, PartialEq)]
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) struct VerifyStats {
    /// How many times the file index was built (0 or 1 per verification).
    pub(crate) index_builds: u32,
    /// The index stopped at the file limit.
    pub(crate) index_truncated: bool,
    /// How many files were read (each at most once).
    pub(crate) file_reads: u32,
}

/// One verification: the project root, the lazily built index and the file cache.
pub(crate) struct Verifier {
    root: PathBuf,
    root_canonical: Option<PathBuf>,
    pub(crate) max_files: usize,
    pub(crate) stream_above: u64,
    pub(crate) stats: VerifyStats,
    index: Option<Rc<FileIndex>>,
    files: HashMap<String, Rc<FileData>>,
    resolved: HashMap<String, Result<String, Verdict>>,
}

impl Verifier {
    pub(crate) fn new(root: &Path) -> Verifier {
        let absolute = if root.is_absolute() {
            root.to_path_buf()
        } else {
            std::env::current_dir()
                .map(|d| d.join(root))
                .unwrap_or_else(|_| root.to_path_buf())
        };
        let root = normalize_lexically(&absolute);
        Verifier {
            root_canonical: fs::canonicalize(&root).ok(),
            root,
            max_files: MAX_INDEXED_FILES,
            stream_above: STREAM_ABOVE_BYTES,
            stats: VerifyStats::default(),
            index: None,
            files: HashMap::new(),
            resolved: HashMap::new(),
        }
    }

    pub(crate) fn run(&mut self, answer: &str) -> RefReport {
        let mut seen = HashSet::new();
        let mut checked = Vec::new();
        for citation in find_citations(answer) {
            let key = (
                citation.path.clone(),
                citation.start,
                citation.end,
                citation.symbol.clone(),
            );
            if !seen.insert(key) {
                continue;
            }
            let verdict = self.check(&citation);
            checked.push(CheckedCitation { citation, verdict });
        }
        let verified = checked.iter().filter(|c| c.is_verified()).count();
        RefReport {
            verified: u32::try_from(verified).unwrap_or(u32::MAX),
            total: u32::try_from(checked.len()).unwrap_or(u32::MAX),
            checked,
        }
    }

    fn check(&mut self, citation: &Citation) -> Verdict {
        let file = match self.resolve(&citation.path) {
            Ok(file) => file,
            Err(verdict) => return verdict,
        };
        let data = self.load(&file);
        let Some(lines) = data.line_count() else {
            return Verdict::Missing;
        };
        if citation.start == 0 || citation.start > citation.end || citation.end > lines {
            return Verdict::OutOfRange { lines };
        }
        if let Some(symbol) = &citation.symbol {
            if matches!(*data, FileData::Text { .. })
                && !symbol_near(&data, symbol, citation.start, citation.end)
            {
                return Verdict::SymbolNotFound {
                    symbol: symbol.clone(),
                };
            }
        }
        Verdict::Verified { file }
    }

    fn load(&mut self, file: &str) -> Rc<FileData> {
        if let Some(data) = self.files.get(file) {
            return Rc::clone(data);
        }
        self.stats.file_reads += 1;
        let data = Rc::new(FileData::read(&self.root.join(file), self.stream_above));
        self.files.insert(file.to_string(), Rc::clone(&data));
        data
    }

    fn index(&mut self) -> Rc<FileIndex> {
        if let Some(index) = &self.index {
            return Rc::clone(index);
        }
        let index = Rc::new(FileIndex::build(&self.root, self.max_files));
        self.stats.index_builds += 1;
        self.stats.index_truncated = index.truncated;
        self.index = Some(Rc::clone(&index));
        index
    }

    /// The project-relative file a cited path names, or why there is none.
    fn resolve(&mut self, path: &str) -> Result<String, Verdict> {
        if let Some(known) = self.resolved.get(path) {
            return known.clone();
        }
        let resolution = self.resolve_uncached(path);
        self.resolved.insert(path.to_string(), resolution.clone());
        resolution
    }

    fn resolve_uncached(&mut self, path: &str) -> Result<String, Verdict> {
        if path.starts_with('~') {
            return Err(Verdict::OutsideProject);
        }
        if path.starts_with('/') {
            let rel = self
                .inside_root(&normalize_lexically(Path::new(path)))
                .ok_or(Verdict::OutsideProject)?;
            return if !rel.is_empty() && self.root.join(&rel).is_file() {
                Ok(rel)
            } else {
                Err(Verdict::Missing)
            };
        }
        // `@src/a.rs` (a mention) may mean `src/a.rs`; `@scope/pkg/...` is a real path.
        let mut rels = vec![normalize_relative(path).ok_or(Verdict::OutsideProject)?];
        if let Some(rel) = path.strip_prefix('@').and_then(normalize_relative) {
            rels.push(rel);
        }
        rels.retain(|r| !r.is_empty());
        if let Some(direct) = rels.iter().find(|r| self.root.join(r).is_file()) {
            return Ok(direct.clone());
        }
        if rels.is_empty() {
            return Err(Verdict::Missing);
        }
        let index = self.index();
        for rel in &rels {
            let mut candidates = index.lookup(rel);
            match candidates.len() {
                0 => continue,
                1 => return Ok(candidates.remove(0)),
                _ => return Err(Verdict::Ambiguous { candidates }),
            }
        }
        Err(Verdict::Missing)
    }

    /// `path` relative to the root (with `/`), when it lies inside it.
    fn inside_root(&self, path: &Path) -> Option<String> {
        if let Ok(rel) = path.strip_prefix(&self.root) {
            return Some(slash_path(rel));
        }
        let canonical_root = self.root_canonical.as_ref()?;
        if let Ok(rel) = path.strip_prefix(canonical_root) {
            return Some(slash_path(rel));
        }
        let canonical = fs::canonicalize(path).ok()?;
        canonical.strip_prefix(canonical_root).ok().map(slash_path)
    }
}

/// Resolves `.` and `..` without touching the disk.
fn normalize_lexically(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// `./src/../a.rs` → `a.rs`; `None` when `..` climbs out of the project.
fn normalize_relative(path: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            other => parts.push(other),
        }
    }
    Some(parts.join("/"))
}

fn slash_path(path: &Path) -> String {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(part) => Some(part.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// The name checked for `symbol`: the last segment of `A::b`, `a.b`, `A#b`.
fn last_segment(symbol: &str) -> &str {
    symbol
        .rsplit([':', '.', '#'])
        .find(|s| !s.is_empty())
        .unwrap_or(symbol)
}

/// Byte offsets where `name` occurs in `line` as a whole word.
fn word_positions<'a>(line: &'a str, name: &'a str) -> impl Iterator<Item = usize> + 'a {
    line.match_indices(name).map(|(p, _)| p).filter(move |&p| {
        let before = line[..p].chars().next_back();
        let after = line[p + name.len()..].chars().next();
        !before.is_some_and(is_ident_char) && !after.is_some_and(is_ident_char)
    })
}

/// Whether `symbol` appears within a few lines of the range, or is defined on a line above it
/// that may enclose it.
fn symbol_near(data: &FileData, symbol: &str, start: u32, end: u32) -> bool {
    let name = last_segment(symbol);
    if name.is_empty() {
        return true;
    }
    let lines = data.line_count().unwrap_or(0);
    let low = start.saturating_sub(SYMBOL_SLACK).max(1);
    let high = end.saturating_add(SYMBOL_SLACK).min(lines);
    if (low..=high).any(|n| word_positions(data.line(n), name).next().is_some()) {
        return true;
    }
    let floor = start.saturating_sub(DEFINITION_REACH).max(1);
    (floor..start).rev().any(|n| defines(data.line(n), name))
}

/// `impl<T: Clone>` → `impl`: drops a trailing generic parameter list.
fn strip_generics(text: &str) -> &str {
    if !text.ends_with('>') {
        return text;
    }
    let mut depth = 0usize;
    for (i, c) in text.char_indices().rev() {
        match c {
            '>' if !text[..i].ends_with('-') => depth += 1,
            '<' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return text[..i].trim_end();
                }
            }
            _ => {}
        }
    }
    text
}

/// Whether `line` defines `name`: `fn name`, `class name`, `impl X for name`, `name(…) {`,
/// `name = function`, `name: (…) =>` and the like.
fn defines(line: &str, name: &str) -> bool {
    let trimmed = line.trim();
    let first_word = trimmed.split_whitespace().next().unwrap_or("");
    for p in word_positions(line, name) {
        let before = line[..p].trim_end();
        let after = line[p + name.len()..].trim_start();
        let last_word = strip_generics(before)
            .rsplit(char::is_whitespace)
            .next()
            .unwrap_or("");
        let keyword = last_word.trim_end_matches(['*', '&']);
        if DEF_KEYWORDS.contains(&keyword)
            || (keyword == "for" && before.split_whitespace().any(|w| w.starts_with("impl")))
        {
            return true;
        }
        if after.starts_with('(') {
            let prev = before.chars().next_back();
            let prev_ok =
                prev.is_none_or(|c| is_ident_char(c) || matches!(c, ')' | '*' | '&' | '>' | ']'));
            let no_expression =
                !before.contains('=') && (!before.contains('(') || first_word == "func");
            if prev_ok
                && no_expression
                && !CONTROL_WORDS.contains(&first_word)
                && !trimmed.ends_with([';', ','])
            {
                return true;
            }
        }
        let assigned =
            (after.starts_with('=') && !after.starts_with("==") && !after.starts_with("=>"))
                || (after.starts_with(':') && !after.starts_with("::"));
        if assigned {
            let value = &after[1..];
            if ["function", "=>", "lambda", "fn", "|"]
                .iter()
                .any(|marker| value.contains(marker))
            {
                return true;
            }
        }
    }
    false
}

// ---------------------------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    type Expected<'a> = (&'a str, u32, u32, Option<&'a str>);

    fn found(answer: &str) -> Vec<(String, u32, u32, Option<String>)> {
        find_citations(answer)
            .into_iter()
            .map(|c| (c.path, c.start, c.end, c.symbol))
            .collect()
    }

    #[test]
    fn find_citations_table() {
        let cases: Vec<(&str, Vec<Expected>)> = vec![
            // Plain forms.
            ("see src/a.rs:12", vec![("src/a.rs", 12, 12, None)]),
            ("src/a.rs:12-20", vec![("src/a.rs", 12, 20, None)]),
            ("src/a.rs:12–20", vec![("src/a.rs", 12, 20, None)]),
            (
                "in /abs/project/src/a.rs:12",
                vec![("/abs/project/src/a.rs", 12, 12, None)],
            ),
            ("./src/a.rs:3", vec![("./src/a.rs", 3, 3, None)]),
            ("../lib/b.py:7", vec![("../lib/b.py", 7, 7, None)]),
            ("ipc.ts:218", vec![("ipc.ts", 218, 218, None)]),
            (
                "auth/session.ts:40",
                vec![("auth/session.ts", 40, 40, None)],
            ),
            ("Makefile:3", vec![("Makefile", 3, 3, None)]),
            ("Dockerfile:10", vec![("Dockerfile", 10, 10, None)]),
            (
                "Containerfile:2 and Justfile:7",
                vec![("Containerfile", 2, 2, None), ("Justfile", 7, 7, None)],
            ),
            ("LICENSE:1", vec![("LICENSE", 1, 1, None)]),
            ("Dockerfile.dev:4", vec![("Dockerfile.dev", 4, 4, None)]),
            ("CMakeLists.txt:9", vec![("CMakeLists.txt", 9, 9, None)]),
            (".env:2", vec![(".env", 2, 2, None)]),
            (
                ".github/workflows/ci.yml:10",
                vec![(".github/workflows/ci.yml", 10, 10, None)],
            ),
            ("go.mod:3", vec![("go.mod", 3, 3, None)]),
            ("src/foo.test.ts:8", vec![("src/foo.test.ts", 8, 8, None)]),
            ("lib/tool:7", vec![("lib/tool", 7, 7, None)]),
            ("+page.svelte:3", vec![("+page.svelte", 3, 3, None)]),
            (
                "@/components/Button.vue:12",
                vec![("@/components/Button.vue", 12, 12, None)],
            ),
            (
                "node_modules/@scope/pkg/index.js:1",
                vec![("node_modules/@scope/pkg/index.js", 1, 1, None)],
            ),
            ("src/a.rs:0", vec![("src/a.rs", 0, 0, None)]),
            ("src/a.rs:20-10", vec![("src/a.rs", 20, 10, None)]),
            // `#L` forms, line:column.
            ("src/a.rs#L12", vec![("src/a.rs", 12, 12, None)]),
            ("src/a.rs#L12-L20", vec![("src/a.rs", 12, 20, None)]),
            ("src/a.rs#L12-20", vec![("src/a.rs", 12, 20, None)]),
            ("src/a.rs#L5C3-L9C1", vec![("src/a.rs", 5, 9, None)]),
            ("src/a.rs:L12-L14", vec![("src/a.rs", 12, 14, None)]),
            ("src/main.rs:12:5", vec![("src/main.rs", 12, 12, None)]),
            ("src/main.rs:12:5-14:2", vec![("src/main.rs", 12, 14, None)]),
            ("requires Node.js:20 or newer", vec![]),
            ("--> src/main.rs:2:9", vec![("src/main.rs", 2, 2, None)]),
            ("at Foo.bar(Foo.java:42)", vec![("Foo.java", 42, 42, None)]),
            // Wrapping and punctuation.
            ("`src/a.rs:12`", vec![("src/a.rs", 12, 12, None)]),
            ("(src/a.rs:12)", vec![("src/a.rs", 12, 12, None)]),
            ("[src/a.rs:12]", vec![("src/a.rs", 12, 12, None)]),
            ("<src/a.rs:12>", vec![("src/a.rs", 12, 12, None)]),
            ("**src/a.rs:12**", vec![("src/a.rs", 12, 12, None)]),
            (
                "'src/a.rs:12' and \"b.go:3\"",
                vec![("src/a.rs", 12, 12, None), ("b.go", 3, 3, None)],
            ),
            ("src/a.rs:12, then", vec![("src/a.rs", 12, 12, None)]),
            ("ends at src/a.rs:12.", vec![("src/a.rs", 12, 12, None)]),
            ("src/a.rs:12; more", vec![("src/a.rs", 12, 12, None)]),
            (
                "see src/a.rs:12: the loop",
                vec![("src/a.rs", 12, 12, None)],
            ),
            ("src/a.rs:12-20:", vec![("src/a.rs", 12, 20, None)]),
            ("| src/a.rs:3 | ok |", vec![("src/a.rs", 3, 3, None)]),
            // Markdown links.
            (
                "[the parser](src/parse.rs:40-52)",
                vec![("src/parse.rs", 40, 52, None)],
            ),
            (
                "[a.rs:3](src/a.rs#L3)",
                vec![("a.rs", 3, 3, None), ("src/a.rs", 3, 3, None)],
            ),
            // Several per line.
            (
                "See a.rs:1, b.rs:2 and c.rs:3-4.",
                vec![
                    ("a.rs", 1, 1, None),
                    ("b.rs", 2, 2, None),
                    ("c.rs", 3, 4, None),
                ],
            ),
            (
                "C++: src/x.cpp:7, header include/x.hpp:2",
                vec![("src/x.cpp", 7, 7, None), ("include/x.hpp", 2, 2, None)],
            ),
            (
                "Schema.parse:432 and src/schema.ts:10",
                vec![("src/schema.ts", 10, 10, None)],
            ),
            // Not references.
            ("Schema.parse:432", vec![]),
            ("foo.bar:12", vec![]),
            ("process.env:3", vec![]),
            ("localhost:3000", vec![]),
            ("http://localhost:3000/api", vec![]),
            ("127.0.0.1:8080", vec![]),
            ("example.com:443", vec![]),
            ("user@example.com:22", vec![]),
            ("example.com/src/a.rs:3", vec![]),
            ("https://x.y/a.rs:3", vec![]),
            ("https://github.com/o/r/blob/main/src/a.rs#L12", vec![]),
            ("file:///home/x/a.rs:3", vec![]),
            ("v1.2.3:4", vec![]),
            ("1.2.3:4", vec![]),
            ("12:30", vec![]),
            ("at 10:30:00, or 12:30pm", vec![]),
            ("a ratio of 16:9 or 3:1 or 1/2:3", vec![]),
            ("std::fmt::Display:3", vec![]),
            ("port:8080 and \"key\": 12", vec![]),
            ("a.rs:12.5", vec![]),
            ("a.rs:12abc", vec![]),
            ("src/a.rs:1234567890", vec![]),
            ("src/a.rs:", vec![]),
            ("src/:12", vec![]),
            ("e.g. `x` in a.rs", vec![]),
            // Identifiers cited next to a reference.
            (
                "`parse_config` at src/config.rs:40",
                vec![("src/config.rs", 40, 40, Some("parse_config"))],
            ),
            (
                "src/config.rs:40 (`parse_config`)",
                vec![("src/config.rs", 40, 40, Some("parse_config"))],
            ),
            (
                "the `Session::new` function in session.rs:12-30",
                vec![("session.rs", 12, 30, Some("Session::new"))],
            ),
            (
                "src/a.rs:1 (`foo`), src/b.rs:2 (`bar`)",
                vec![
                    ("src/a.rs", 1, 1, Some("foo")),
                    ("src/b.rs", 2, 2, Some("bar")),
                ],
            ),
            (
                "src/a.rs:1 calls `helper` in src/b.rs:9",
                vec![("src/a.rs", 1, 1, None), ("src/b.rs", 9, 9, Some("helper"))],
            ),
            (
                "See src/a.rs:3. `foo` is unrelated.",
                vec![("src/a.rs", 3, 3, None)],
            ),
            (
                "src/a.rs:3\n`foo` on the next line",
                vec![("src/a.rs", 3, 3, None)],
            ),
            (
                "parse_config at src/config.rs:40",
                vec![("src/config.rs", 40, 40, None)],
            ),
            (
                "`config.rs` line src/config.rs:4",
                vec![("src/config.rs", 4, 4, None)],
            ),
            (
                "`parse_config()` at src/config.rs:40",
                vec![("src/config.rs", 40, 40, Some("parse_config"))],
            ),
            (
                "the `fn load_config` at config.rs:3",
                vec![("config.rs", 3, 3, Some("load_config"))],
            ),
            (
                "`foo` and `bar` in src/a.rs:3",
                vec![("src/a.rs", 3, 3, Some("bar"))],
            ),
            (
                "crates/x/src/lib.rs:10-12 (`Config::load`)",
                vec![("crates/x/src/lib.rs", 10, 12, Some("Config::load"))],
            ),
            ("src/a.rs:12 `foo`", vec![("src/a.rs", 12, 12, Some("foo"))]),
            (
                "**`run`** in engine.rs:3",
                vec![("engine.rs", 3, 3, Some("run"))],
            ),
            (
                "[`handler`](src/api.ts#L8)",
                vec![("src/api.ts", 8, 8, Some("handler"))],
            ),
            (
                "`self.store.get` at `store.py:19`",
                vec![("store.py", 19, 19, Some("self.store.get"))],
            ),
            (
                "src/a.rs:3 is where the config loader eventually ends up calling `foo`",
                vec![("src/a.rs", 3, 3, None)],
            ),
            ("`let x = 1` at src/a.rs:3", vec![("src/a.rs", 3, 3, None)]),
            ("`a < b` at src/a.rs:3", vec![("src/a.rs", 3, 3, None)]),
            (
                "`Vec<T>::push` at src/a.rs:3",
                vec![("src/a.rs", 3, 3, Some("Vec::push"))],
            ),
        ];
        assert!(cases.len() >= 60, "only {} cases", cases.len());
        let mut failures = Vec::new();
        for (input, expected) in &cases {
            let expected: Vec<(String, u32, u32, Option<String>)> = expected
                .iter()
                .map(|(p, s, e, sym)| (p.to_string(), *s, *e, sym.map(str::to_string)))
                .collect();
            let got = found(input);
            if got != expected {
                failures.push(format!(
                    "{input:?}\n   expected {expected:?}\n   got      {got:?}"
                ));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn find_citations_keeps_text_as_written() {
        let c = find_citations("at `src/main.rs:12:5`, and (lib.rs#L3-L4).");
        let texts: Vec<&str> = c.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(texts, ["src/main.rs:12:5", "lib.rs#L3-L4"]);
    }

    #[test]
    fn find_citations_never_panics_on_odd_input() {
        let odd = [
            "",
            ":",
            "#",
            "#L",
            ":1",
            "a:",
            "`",
            "``",
            "```",
            "````a.rs:1",
            "`a` `",
            "é.rs:1 ü/ß.py:2-3 日本.ts#L4",
            "a.rs:99999999999999999999",
            "a.rs:4294967295",
            "\u{0}\u{ffff}:1",
            "/:1 //:2 ./:3 ../:4 ~:5 @:6",
            "a.rs:1-\n`x` at b.rs#L",
            "(((([[[[a.rs:1]]]]))))",
        ];
        for input in odd {
            let _ = find_citations(input);
            let _ = verify(input, Path::new("/nonexistent/pitroom/root"));
        }
        let big = "src/a.rs:1 `x` ".repeat(2000);
        assert_eq!(find_citations(&big).len(), 2000);
    }

    // -- verify -------------------------------------------------------------------------------

    /// A unique project directory under the system temp dir, removed on drop.
    struct Project {
        root: PathBuf,
    }

    impl Project {
        fn new() -> Project {
            static NEXT: AtomicU32 = AtomicU32::new(0);
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or(0);
            let root = std::env::temp_dir().join(format!(
                "pitroom-citations-{}-{}-{nanos}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            ));
            fs::create_dir_all(&root).unwrap();
            Project { root }
        }

        fn file(&self, rel: &str, content: &str) -> &Project {
            self.bytes(rel, content.as_bytes())
        }

        fn bytes(&self, rel: &str, content: &[u8]) -> &Project {
            let path = self.root.join(rel);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, content).unwrap();
            self
        }

        fn verdicts(&self, answer: &str) -> Vec<Verdict> {
            verify(answer, &self.root)
                .checked
                .into_iter()
                .map(|c| c.verdict)
                .collect()
        }

        fn verdict(&self, answer: &str) -> Verdict {
            let mut v = self.verdicts(answer);
            assert_eq!(v.len(), 1, "expected one citation in {answer:?}: {v:?}");
            v.remove(0)
        }
    }

    impl Drop for Project {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.root);
        }
    }

    fn verified(file: &str) -> Verdict {
        Verdict::Verified {
            file: file.to_string(),
        }
    }

    fn lines(n: usize) -> String {
        (1..=n).map(|i| format!("line {i}\n")).collect()
    }

    #[test]
    fn verify_accepts_relative_path() {
        let p = Project::new();
        p.file("src/a.rs", &lines(40));
        assert_eq!(p.verdict("see src/a.rs:12-20"), verified("src/a.rs"));
    }

    #[test]
    fn verify_accepts_absolute_path_inside_project() {
        let p = Project::new();
        p.file("src/a.rs", &lines(40));
        let answer = format!("see {}/src/a.rs:12", p.root.display());
        assert_eq!(p.verdict(&answer), verified("src/a.rs"));
    }

    #[test]
    fn verify_accepts_dot_slash_path() {
        let p = Project::new();
        p.file("src/a.rs", &lines(5));
        assert_eq!(p.verdict("./src/a.rs:5"), verified("src/a.rs"));
    }

    #[test]
    fn verify_resolves_bare_name_through_index() {
        let p = Project::new();
        p.file("app/main/ipc.ts", &lines(300));
        let report = verify("ipc.ts:218", &p.root);
        assert_eq!(report.checked[0].verdict, verified("app/main/ipc.ts"));
        assert_eq!(
            report.checked[0].reason(),
            "ipc.ts:218 — ok (app/main/ipc.ts)"
        );
    }

    #[test]
    fn verify_resolves_partial_path_through_index() {
        let p = Project::new();
        p.file("src/auth/session.ts", &lines(50));
        p.file("src/other/session.ts", &lines(50));
        assert_eq!(
            p.verdict("auth/session.ts:40"),
            verified("src/auth/session.ts")
        );
    }

    #[test]
    fn verify_resolves_extensionless_names() {
        let p = Project::new();
        p.file("Makefile", "all:\n\tcargo build\n\tcargo test\n");
        p.file("docker/Dockerfile", &lines(12));
        assert_eq!(
            p.verdicts("Makefile:3 and Dockerfile:10"),
            [verified("Makefile"), verified("docker/Dockerfile")]
        );
    }

    #[test]
    fn verify_reports_ambiguous_bare_name_with_candidates() {
        let p = Project::new();
        for dir in ["a", "b", "c", "d"] {
            p.file(&format!("{dir}/util.ts"), &lines(10));
        }
        let report = verify("util.ts:3", &p.root);
        let checked = &report.checked[0];
        assert_eq!(
            checked.verdict,
            Verdict::Ambiguous {
                candidates: vec![
                    "a/util.ts".into(),
                    "b/util.ts".into(),
                    "c/util.ts".into(),
                    "d/util.ts".into()
                ]
            }
        );
        assert_eq!(
            checked.reason(),
            "util.ts:3 — ambiguous: 4 files named util.ts (a/util.ts, b/util.ts, c/util.ts, …)"
        );
    }

    #[test]
    fn verify_reports_missing_file() {
        let p = Project::new();
        p.file("src/a.rs", &lines(3));
        let report = verify("src/nope.rs:1 and nope.py:2", &p.root);
        assert_eq!(report.total, 2);
        assert_eq!(report.verified, 0);
        assert!(report.checked.iter().all(|c| c.verdict == Verdict::Missing));
        assert_eq!(
            report.checked[0].reason(),
            "src/nope.rs:1 — no such file in the project"
        );
    }

    #[test]
    fn verify_reports_line_past_end() {
        let p = Project::new();
        p.file("src/a.rs", &lines(40));
        let report = verify("src/a.rs:90 and src/a.rs:30-41", &p.root);
        assert_eq!(
            report
                .checked
                .iter()
                .map(|c| c.verdict.clone())
                .collect::<Vec<_>>(),
            [
                Verdict::OutOfRange { lines: 40 },
                Verdict::OutOfRange { lines: 40 }
            ]
        );
        assert_eq!(
            report.checked[0].reason(),
            "src/a.rs:90 — file has 40 lines"
        );
    }

    #[test]
    fn verify_rejects_line_zero_and_reversed_range() {
        let p = Project::new();
        p.file("src/a.rs", &lines(40));
        let report = verify("src/a.rs:0 and src/a.rs:20-10", &p.root);
        assert!(report
            .checked
            .iter()
            .all(|c| c.verdict == Verdict::OutOfRange { lines: 40 }));
        assert_eq!(
            report.checked[0].reason(),
            "src/a.rs:0 — line 0 does not exist (lines start at 1)"
        );
        assert_eq!(
            report.checked[1].reason(),
            "src/a.rs:20-10 — range 20-10 is reversed"
        );
    }

    #[test]
    fn verify_counts_last_line_without_trailing_newline() {
        let p = Project::new();
        p.file("a.txt", "one\ntwo\nthree");
        p.file("b.txt", "one\ntwo\nthree\n");
        p.file("empty.txt", "");
        assert_eq!(
            p.verdicts("a.txt:3 a.txt:4 b.txt:3 b.txt:4 empty.txt:1"),
            [
                verified("a.txt"),
                Verdict::OutOfRange { lines: 3 },
                verified("b.txt"),
                Verdict::OutOfRange { lines: 3 },
                Verdict::OutOfRange { lines: 0 },
            ]
        );
    }

    const SESSION_TS: &str = "\
import { db } from './db';

export class Session {
  private token: string;

  constructor(token: string) {
    this.token = token;
  }

  refresh(): void {
    const next = db.rotate(this.token);
    if (!next) {
      throw new Error('expired');
    }
    this.token = next;
  }
}
";

    #[test]
    fn verify_accepts_symbol_near_the_range() {
        let p = Project::new();
        p.file("src/session.ts", SESSION_TS);
        // `refresh` is on line 10; the range ends 2 lines before it.
        assert_eq!(
            p.verdict("`refresh` at src/session.ts:7-8"),
            verified("src/session.ts")
        );
    }

    #[test]
    fn verify_accepts_symbol_whose_definition_encloses_the_range() {
        let p = Project::new();
        let mut text = String::from(
            "pub struct Config;\n\nimpl Config {\n    pub fn load(path: &str) -> Config {\n",
        );
        text.push_str(&"        step();\n".repeat(30));
        text.push_str("        Config\n    }\n}\n");
        p.file("src/config.rs", &text);
        assert_eq!(
            p.verdicts("`Config::load` at src/config.rs:20-25, `Config` at src/config.rs:30"),
            [verified("src/config.rs"), verified("src/config.rs")]
        );
    }

    #[test]
    fn verify_recognises_definition_forms() {
        let cases = [
            ("pub(crate) fn parse(x: u8) -> u8 {", "parse"),
            ("def parse(self):", "parse"),
            ("export async function parse(x) {", "parse"),
            ("class Parser:", "Parser"),
            ("impl<T: Clone> Parser<T> {", "Parser"),
            ("impl<F: Fn() -> u8> Parser<F> {", "Parser"),
            ("impl Display for Parser {", "Parser"),
            ("func (p *Parser) Parse(b []byte) error {", "Parse"),
            ("  public int parse(String s) {", "parse"),
            ("  parse(input) {", "parse"),
            ("const parse = (x) => x + 1", "parse"),
            ("  parse: function (x) {", "parse"),
            ("type Parser interface {", "Parser"),
        ];
        for (line, name) in cases {
            assert!(defines(line, name), "{line:?} should define {name}");
        }
        let calls = [
            ("    let y = parse(x);", "parse"),
            ("    return parse(x)", "parse"),
            ("    self.parse(x);", "parse"),
            ("    foo(parse(x));", "parse"),
            ("    // parsed later", "parse"),
        ];
        for (line, name) in calls {
            assert!(!defines(line, name), "{line:?} should not define {name}");
        }
    }

    #[test]
    fn verify_reports_absent_symbol() {
        let p = Project::new();
        p.file("src/session.ts", SESSION_TS);
        let report = verify("`logout` at src/session.ts:10-16", &p.root);
        assert_eq!(
            report.checked[0].verdict,
            Verdict::SymbolNotFound {
                symbol: "logout".into()
            }
        );
        assert_eq!(
            report.checked[0].reason(),
            "src/session.ts:10-16 — `logout` not found near lines 10-16"
        );
    }

    #[test]
    fn verify_symbol_far_from_range_without_definition_is_not_found() {
        let p = Project::new();
        let mut text = String::from("fn other() {}\n");
        text.push_str(&"// filler\n".repeat(20));
        text.push_str("fn target() {}\n");
        p.file("src/lib.rs", &text);
        assert_eq!(
            p.verdict("`target` at src/lib.rs:2"),
            Verdict::SymbolNotFound {
                symbol: "target".into()
            }
        );
    }

    #[test]
    fn verify_rejects_absolute_path_outside_project() {
        let p = Project::new();
        let other = Project::new();
        other.file("x.rs", &lines(3));
        let answer = format!("{}/x.rs:1 and /etc/hosts.conf:1", other.root.display());
        let report = verify(&answer, &p.root);
        assert!(report
            .checked
            .iter()
            .all(|c| c.verdict == Verdict::OutsideProject));
        assert_eq!(
            report.checked[1].reason(),
            "/etc/hosts.conf:1 — outside the project"
        );
    }

    #[test]
    fn verify_rejects_relative_path_climbing_out_of_project() {
        let p = Project::new();
        assert_eq!(p.verdict("../elsewhere/x.rs:1"), Verdict::OutsideProject);
        assert_eq!(p.verdict("~/notes.md:1"), Verdict::OutsideProject);
    }

    #[test]
    fn verify_index_skips_ignored_and_hidden_dirs() {
        let p = Project::new();
        p.file("node_modules/lib/only.js", &lines(3));
        p.file("target/debug/gen.rs", &lines(3));
        p.file(".hidden/secret.py", &lines(3));
        p.file("src/.git/conf.toml", &lines(3));
        assert_eq!(
            p.verdicts("only.js:1 gen.rs:1 secret.py:1 conf.toml:1"),
            [
                Verdict::Missing,
                Verdict::Missing,
                Verdict::Missing,
                Verdict::Missing
            ]
        );
        // A direct path into a skipped directory still checks out.
        assert_eq!(
            p.verdict("node_modules/lib/only.js:2"),
            verified("node_modules/lib/only.js")
        );
    }

    #[test]
    fn verify_builds_no_index_when_every_path_is_direct() {
        let p = Project::new();
        p.file("src/a.rs", &lines(10));
        p.file("src/b.rs", &lines(10));
        let mut v = Verifier::new(&p.root);
        let report = v.run("src/a.rs:1, ./src/b.rs:2 and src/a.rs:3");
        assert_eq!(report.verified, 3);
        assert_eq!(v.stats.index_builds, 0);
    }

    #[test]
    fn verify_builds_index_once_for_many_bare_names() {
        let p = Project::new();
        p.file("src/deep/a.rs", &lines(10));
        p.file("src/deep/b.rs", &lines(10));
        let mut v = Verifier::new(&p.root);
        let report = v.run("a.rs:1, b.rs:2, c.rs:3");
        assert_eq!((report.verified, report.total), (2, 3));
        assert_eq!(v.stats.index_builds, 1);
        assert!(!v.stats.index_truncated);
    }

    #[test]
    fn verify_records_truncated_index() {
        let p = Project::new();
        for name in ["a", "b", "c", "d"] {
            p.file(&format!("src/{name}.rs"), &lines(3));
        }
        let mut v = Verifier::new(&p.root);
        v.max_files = 2;
        let _ = v.run("z.rs:1");
        assert!(v.stats.index_truncated);
    }

    #[test]
    fn verify_reads_each_file_once() {
        let p = Project::new();
        p.file("src/a.rs", &lines(10));
        let mut v = Verifier::new(&p.root);
        let report = v.run("src/a.rs:1, a.rs:2, `line` at src/a.rs:3, src/a.rs:99");
        assert_eq!((report.verified, report.total), (3, 4));
        assert_eq!(v.stats.file_reads, 1);
    }

    #[test]
    fn verify_deduplicates_identical_citations() {
        let p = Project::new();
        p.file("src/a.rs", &lines(10));
        let report = verify(
            "src/a.rs:1 then (src/a.rs:1), `src/a.rs:1`, src/a.rs#L1, src/a.rs:1:4; src/a.rs:2",
            &p.root,
        );
        assert_eq!(report.total, 2);
        assert_eq!(report.verified, 2);
        assert_eq!(report.checked[0].citation.text, "src/a.rs:1");
    }

    #[test]
    fn verify_large_file_checks_line_count_only() {
        let p = Project::new();
        p.file("big.log.txt", &lines(500));
        let mut v = Verifier::new(&p.root);
        v.stream_above = 100;
        let report = v.run("`absent` at big.log.txt:500 and big.log.txt:501");
        assert_eq!(
            report
                .checked
                .iter()
                .map(|c| c.verdict.clone())
                .collect::<Vec<_>>(),
            [verified("big.log.txt"), Verdict::OutOfRange { lines: 500 }]
        );
    }

    #[test]
    fn verify_reads_non_utf8_files_lossily() {
        let p = Project::new();
        p.bytes(
            "src/latin1.c",
            b"int caf\xe9;\nint parse(void) {\n  return 0;\n}",
        );
        assert_eq!(
            p.verdict("`parse` at src/latin1.c:2-4"),
            verified("src/latin1.c")
        );
    }

    #[test]
    fn verify_at_mention_prefix_falls_back_to_plain_path() {
        let p = Project::new();
        p.file("src/a.rs", &lines(3));
        assert_eq!(p.verdict("@src/a.rs:2"), verified("src/a.rs"));
    }

    #[test]
    fn verify_with_missing_root_reports_missing() {
        let root = std::env::temp_dir().join("pitroom-citations-no-such-root");
        let report = verify("src/a.rs:1 and a.rs:2", &root);
        assert_eq!(report.total, 2);
        assert!(report.checked.iter().all(|c| c.verdict == Verdict::Missing));
    }

    #[test]
    fn report_bad_lists_unverified_and_round_trips_through_json() {
        let p = Project::new();
        p.file("src/a.rs", &lines(3));
        let report = verify("src/a.rs:1, src/a.rs:9, gone.rs:1", &p.root);
        let bad: Vec<String> = report.bad().map(CheckedCitation::reason).collect();
        assert_eq!(
            bad,
            [
                "src/a.rs:9 — file has 3 lines",
                "gone.rs:1 — no such file in the project"
            ]
        );
        assert_eq!(report.checked[0].reason(), "src/a.rs:1 — ok");
        let json = serde_json::to_string(&report).unwrap();
        assert!(
            json.contains(r#""kind":"out_of_range","lines":3"#),
            "{json}"
        );
        let back: RefReport = serde_json::from_str(&json).unwrap();
        assert_eq!(back, report);
    }
}
