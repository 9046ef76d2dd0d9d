//! Paths a person reads are project paths: a worker in a read copy names files
//! under the copy, and this turns them back into the project's, in its steps, its answer and
//! its citations. Also where the answer's `path:line` citations are checked.

use std::path::{Path, PathBuf};

use super::stream::Stream;
use super::tree::TreeSetup;
use crate::record::RunRecord;

/// Takes the worker's answer into the record, redacted and in project paths, with its
/// citations checked against the tree the worker saw (its copy, for a read run). This comes
/// before the "after" snapshot, which removes a read copy the worker wrote into.
///
/// Returns the files the verified citations name (project paths), for the claims check.
pub(super) fn take_answer(
    record: &mut RunRecord,
    tree: &TreeSetup,
    stream: &Stream,
) -> Vec<String> {
    let raw_answer = stream.answer();
    let mut cited = Vec::new();
    if let Some(answer) = &raw_answer {
        let root = tree
            .copy
            .clone()
            .or_else(|| tree.repo.as_ref().map(|r| r.toplevel.clone()))
            .unwrap_or_else(|| tree.workdir.clone());
        let report = crate::citations::verify(answer, &root);
        cited = verified_files(&report);
        record.refs = Some(check_refs(&report, tree));
    }
    record.answer = raw_answer.map(|a| match (&tree.copy, &tree.repo) {
        (Some(copy), Some(repo)) => stream.redact(&rewrite_paths(&a, copy, &repo.toplevel)),
        _ => stream.redact(&a),
    });
    cited
}

/// The files the verified citations name, relative to the root they were checked under. A
/// citation that did not check out is already reported as bad; it is not a claim of reading.
fn verified_files(report: &crate::citations::RefReport) -> Vec<String> {
    report
        .checked
        .iter()
        .filter_map(|c| match &c.verdict {
            crate::citations::CitationCheck::Verified { file } => Some(file.clone()),
            _ => None,
        })
        .collect()
}

/// Words the citations that did not check out in project paths.
fn check_refs(report: &crate::citations::RefReport, tree: &TreeSetup) -> crate::record::Refs {
    let bad = report
        .bad()
        .take(20)
        .map(|c| match (&tree.copy, &tree.repo) {
            (Some(copy), Some(repo)) => rewrite_paths(&c.reason(), copy, &repo.toplevel),
            _ => c.reason(),
        })
        .collect();
    crate::record::Refs {
        verified: report.verified,
        total: report.total,
        bad,
    }
}

/// Rewrites the read copy's paths in an answer to the project's own.
pub(super) fn rewrite_paths(answer: &str, copy: &Path, project: &Path) -> String {
    let copy_s = copy.display().to_string();
    let project_s = project.display().to_string();
    let mut out = answer.replace(&copy_s, &project_s);
    if let Ok(real) = copy.canonicalize() {
        out = out.replace(&real.display().to_string(), &project_s);
    }
    out
}

/// The prefixes a step's text is shown relative to: the read copy (as given and resolved), the
/// project's top directory and the worker's directory, each ending in `/`, longest first.
pub(super) fn display_roots(tree: &TreeSetup) -> Vec<String> {
    let mut roots: Vec<PathBuf> = Vec::new();
    if let Some(copy) = &tree.copy {
        roots.push(copy.clone());
        roots.extend(copy.canonicalize().ok());
    }
    if let Some(repo) = &tree.repo {
        roots.push(repo.toplevel.clone());
    }
    roots.push(tree.workdir.clone());
    let mut roots: Vec<String> = roots
        .into_iter()
        .map(|r| format!("{}/", r.display().to_string().trim_end_matches('/')))
        .filter(|r| r.len() > 1)
        .collect();
    roots.sort_by_key(|r| std::cmp::Reverse(r.len()));
    roots.dedup();
    roots
}

/// `read /state/snapshots/d4ae…/src/calc.py` → `read src/calc.py` (paths a person
/// reads are project paths).
pub(super) fn project_relative(text: &str, roots: &[String]) -> String {
    let mut out = text.to_string();
    for root in roots {
        out = out.replace(root.as_str(), "");
        // The root itself, named without a trailing slash, is the project: `.`.
        let bare = root.trim_end_matches('/');
        if out.ends_with(bare) && out.len() > bare.len() {
            let cut = out.len() - bare.len();
            if out[..cut].ends_with(' ') {
                out.replace_range(cut.., ".");
            }
        }
    }
    out
}

/// `path` relative to `root`, or as it is when it lies elsewhere.
pub(super) fn relative_to(path: &str, root: &Path) -> String {
    Path::new(path)
        .strip_prefix(root)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| path.to_string())
}
