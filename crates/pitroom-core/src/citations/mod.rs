//! Citation checking: find the `path:line` references in a worker's answer and
//! check each one on disk before the answer reaches the primary agent.
//!
//! [`find_citations`] is a pure, hand-written scanner (`scan.rs`, with the identifiers cited
//! beside references in `symbols.rs`). [`verify`] resolves every citation against the project
//! (`verifier.rs`): directly, or through a lazily built index of the project's files
//! (`files.rs`) for bare and partial names, where several files of one name are told apart by
//! every clue the answer gives (`clues.rs`: the line range, the cited identifier, the directories
//! of the other references). It then checks the line range and — when a backticked identifier is
//! cited next to the reference — that the identifier is near the range or defined above it
//! (`definitions.rs`).

use std::path::Path;

use serde::{Deserialize, Serialize};

mod clues;
mod definitions;
mod files;
mod scan;
mod symbols;
mod verifier;
mod vocab;

#[cfg(test)]
mod tests;

use scan::scan_refs;
use symbols::attach_symbols;
use verifier::Verifier;

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
pub enum CitationCheck {
    /// The file exists, the range lies inside it, and the cited identifier (if any) is there.
    Verified {
        /// The file, relative to the project root, with `/` separators.
        file: String,
    },
    /// No such file in the project.
    Missing,
    /// A bare or partial name that matches several files no clue of the answer tells apart.
    Ambiguous {
        /// The matching project-relative paths still tied after every clue, sorted.
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
    pub verdict: CitationCheck,
}

impl CheckedCitation {
    /// Whether the citation checked out.
    pub fn is_verified(&self) -> bool {
        matches!(self.verdict, CitationCheck::Verified { .. })
    }

    /// One short line, e.g. `src/a.rs:90 — file has 40 lines`.
    pub fn reason(&self) -> String {
        let c = &self.citation;
        let what = match &self.verdict {
            CitationCheck::Verified { file } if *file == c.path => "ok".to_string(),
            CitationCheck::Verified { file } => format!("ok ({file})"),
            CitationCheck::Missing => "no such file in the project".to_string(),
            CitationCheck::Ambiguous { candidates } => {
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
            CitationCheck::OutOfRange { .. } if c.start == 0 => {
                "line 0 does not exist (lines start at 1)".to_string()
            }
            CitationCheck::OutOfRange { .. } if c.start > c.end => {
                format!("range {}-{} is reversed", c.start, c.end)
            }
            CitationCheck::OutOfRange { lines: 1 } => "file has 1 line".to_string(),
            CitationCheck::OutOfRange { lines } => format!("file has {lines} lines"),
            CitationCheck::SymbolNotFound { symbol } if c.start == c.end => {
                format!("`{symbol}` not found near line {}", c.start)
            }
            CitationCheck::SymbolNotFound { symbol } => {
                format!("`{symbol}` not found near lines {}-{}", c.start, c.end)
            }
            CitationCheck::OutsideProject => "outside the project".to_string(),
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
