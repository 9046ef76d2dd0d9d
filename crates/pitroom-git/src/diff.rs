//! Exact diffs between two snapshot trees, and reversing them.

use std::path::Path;

use crate::command::{Git, GitError};

/// How one path changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeStatus {
    Added,
    Modified,
    Deleted,
    /// The file type changed (file ↔ symlink) or only the mode did.
    TypeChanged,
}

impl ChangeStatus {
    pub fn letter(self) -> char {
        match self {
            ChangeStatus::Added => 'A',
            ChangeStatus::Modified => 'M',
            ChangeStatus::Deleted => 'D',
            ChangeStatus::TypeChanged => 'T',
        }
    }

    fn from_letter(c: u8) -> Option<ChangeStatus> {
        match c {
            b'A' => Some(ChangeStatus::Added),
            b'M' => Some(ChangeStatus::Modified),
            b'D' => Some(ChangeStatus::Deleted),
            b'T' => Some(ChangeStatus::TypeChanged),
            _ => None,
        }
    }
}

/// One changed path with its line counts (`None` for binary files).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    pub status: ChangeStatus,
    pub path: String,
    pub added: Option<u64>,
    pub deleted: Option<u64>,
}

/// The difference between two trees: a patch `git apply` can take, and the file list.
#[derive(Debug, Clone, Default)]
pub struct Changes {
    pub patch: Vec<u8>,
    pub files: Vec<FileChange>,
}

impl Changes {
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

/// Diffs tree `from` against tree `to` in the repository at `git_dir`. The patch is binary-safe
/// and carries full blob ids, so it applies (and reverses) byte for byte.
pub fn diff_trees(git_dir: &Path, from: &str, to: &str) -> Result<Changes, GitError> {
    if from == to {
        return Ok(Changes::default());
    }
    let git = Git {
        git_dir: Some(git_dir.to_path_buf()),
        ..Git::default()
    };
    let plumbing = [
        "diff-tree",
        "-r",
        "--no-renames",
        "--no-ext-diff",
        "--no-textconv",
    ];
    let status = git.run(
        plumbing
            .iter()
            .copied()
            .chain(["--name-status", "-z", from, to]),
    )?;
    let numstat = git.run(
        plumbing
            .iter()
            .copied()
            .chain(["--numstat", "-z", from, to]),
    )?;
    let patch =
        git.run(
            plumbing
                .iter()
                .copied()
                .chain(["-p", "--binary", "--full-index", from, to]),
        )?;
    let mut files = parse_name_status(&status)?;
    apply_numstat(&mut files, &numstat);
    Ok(Changes { patch, files })
}

/// `--name-status -z`: `STATUS\0PATH\0` pairs.
fn parse_name_status(raw: &[u8]) -> Result<Vec<FileChange>, GitError> {
    let mut fields = raw.split(|b| *b == 0).filter(|f| !f.is_empty());
    let mut files = Vec::new();
    while let Some(code) = fields.next() {
        let status = code
            .first()
            .copied()
            .and_then(ChangeStatus::from_letter)
            .ok_or_else(|| GitError::Parse(String::from_utf8_lossy(code).into_owned()))?;
        let path = fields
            .next()
            .ok_or_else(|| GitError::Parse("a status without a path".into()))?;
        files.push(FileChange {
            status,
            path: String::from_utf8_lossy(path).into_owned(),
            added: None,
            deleted: None,
        });
    }
    Ok(files)
}

/// `--numstat -z`: `ADDED\tDELETED\tPATH\0`, with `-` for binary files.
fn apply_numstat(files: &mut [FileChange], raw: &[u8]) {
    for record in raw.split(|b| *b == 0).filter(|r| !r.is_empty()) {
        let text = String::from_utf8_lossy(record);
        let mut parts = text.splitn(3, '\t');
        let (Some(a), Some(d), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        if let Some(f) = files.iter_mut().find(|f| f.path == path) {
            f.added = a.parse().ok();
            f.deleted = d.parse().ok();
        }
    }
}

/// Whether a patch reverses cleanly on the current work tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReverseCheck {
    Clean,
    /// It does not: git's explanation (which files changed since).
    Conflict(String),
}

/// Reverse-applies `patch` to the work tree at `toplevel` (never the index). With
/// `check_only` nothing is written. The check always runs first, so a failure changes nothing.
pub fn reverse_apply(
    toplevel: &Path,
    patch: &Path,
    check_only: bool,
) -> Result<ReverseCheck, GitError> {
    let git = Git::in_dir(toplevel);
    let check = git.output(
        [
            "apply".as_ref(),
            "--check".as_ref(),
            "-R".as_ref(),
            "--whitespace=nowarn".as_ref(),
            patch.as_os_str(),
        ],
        None,
    )?;
    if check.code != 0 {
        return Ok(ReverseCheck::Conflict(check.stderr.trim().to_string()));
    }
    if !check_only {
        git.run([
            "apply".as_ref(),
            "-R".as_ref(),
            "--whitespace=nowarn".as_ref(),
            patch.as_os_str(),
        ])?;
    }
    Ok(ReverseCheck::Clean)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_status_with_spaces_and_unicode() {
        let raw = b"M\0src/a b.rs\0A\0d\xc3\xa9j\xc3\xa0.txt\0D\0old\0";
        let files = parse_name_status(raw).unwrap();
        assert_eq!(files.len(), 3);
        assert_eq!(files[0].path, "src/a b.rs");
        assert_eq!(files[1].path, "déjà.txt");
        assert_eq!(files[2].status, ChangeStatus::Deleted);
    }

    #[test]
    fn numstat_marks_binary_files_as_unknown_counts() {
        let mut files = parse_name_status(b"M\0a.txt\0A\0img.png\0").unwrap();
        apply_numstat(&mut files, b"3\t1\ta.txt\0-\t-\timg.png\0");
        assert_eq!((files[0].added, files[0].deleted), (Some(3), Some(1)));
        assert_eq!((files[1].added, files[1].deleted), (None, None));
    }
}
