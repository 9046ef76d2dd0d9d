//! Tests of citation scanning and checking; the checks build small projects in temp dirs.

use std::fs;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};

use super::*;

mod clues;
mod scan;
mod verify;

/// A unique project directory under the system temp dir, removed on drop.
pub(super) struct Project {
    pub(super) root: PathBuf,
}

impl Project {
    pub(super) fn new() -> Project {
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

    /// A new project holding one file.
    pub(super) fn with(rel: &str, content: &str) -> Project {
        let p = Project::new();
        p.file(rel, content);
        p
    }

    /// The report on `answer` checked in this project.
    pub(super) fn report(&self, answer: &str) -> RefReport {
        verify(answer, &self.root)
    }

    pub(super) fn file(&self, rel: &str, content: &str) -> &Project {
        self.bytes(rel, content.as_bytes())
    }

    pub(super) fn bytes(&self, rel: &str, content: &[u8]) -> &Project {
        let path = self.root.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, content).unwrap();
        self
    }

    pub(super) fn verdicts(&self, answer: &str) -> Vec<CitationCheck> {
        verdicts_in(&self.report(answer))
    }

    /// Every citation in `answer` checks out, in `files` (in order).
    pub(super) fn assert_verified(&self, answer: &str, files: &[&str]) {
        let want: Vec<CitationCheck> = files.iter().map(|f| verified(f)).collect();
        assert_eq!(self.verdicts(answer), want, "{answer}");
    }

    pub(super) fn verdict(&self, answer: &str) -> CitationCheck {
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

/// Checks the first citation of `report`: its verdict, and the reason given for it.
pub(super) fn assert_first(report: &RefReport, verdict: CitationCheck, reason: &str) {
    let first = &report.checked[0];
    assert_eq!(first.verdict, verdict);
    assert_eq!(first.reason(), reason);
}

/// The verdict of each citation in `report`, in order.
pub(super) fn verdicts_in(report: &RefReport) -> Vec<CitationCheck> {
    report.checked.iter().map(|c| c.verdict.clone()).collect()
}

pub(super) fn verified(file: &str) -> CitationCheck {
    CitationCheck::Verified {
        file: file.to_string(),
    }
}

pub(super) fn lines(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}
