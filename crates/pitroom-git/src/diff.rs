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
    /// Moved (with or without edits); `old_path` says from where.
    Renamed,
}

impl ChangeStatus {
    pub fn letter(self) -> char {
        match self {
            ChangeStatus::Added => 'A',
            ChangeStatus::Modified => 'M',
            ChangeStatus::Deleted => 'D',
            ChangeStatus::TypeChanged => 'T',
            ChangeStatus::Renamed => 'R',
        }
    }

    fn from_letter(c: u8) -> Option<ChangeStatus> {
        match c {
            b'A' => Some(ChangeStatus::Added),
            b'M' => Some(ChangeStatus::Modified),
            b'D' => Some(ChangeStatus::Deleted),
            b'T' => Some(ChangeStatus::TypeChanged),
            b'R' => Some(ChangeStatus::Renamed),
            _ => None,
        }
    }
}

/// One changed path with its line counts (`None` for binary files).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    pub status: ChangeStatus,
    pub path: String,
    /// Where a renamed file came from.
    pub old_path: Option<String>,
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
/// and carries full blob ids, so it applies (and reverses) byte for byte. With `renames`, moved
/// files are detected (a move is not a deletion the user must allow); without, a move is a
/// deletion plus an addition.
pub fn diff_trees(
    git_dir: &Path,
    from: &str,
    to: &str,
    renames: bool,
) -> Result<Changes, GitError> {
    if from == to {
        return Ok(Changes::default());
    }
    let git = Git {
        git_dir: Some(git_dir.to_path_buf()),
        ..Git::default()
    };
    let rename_flag = if renames {
        "--find-renames"
    } else {
        "--no-renames"
    };
    let plumbing = [
        "diff-tree",
        "-r",
        rename_flag,
        "--no-ext-diff",
        "--no-textconv",
    ];
    // The plumbing command with the given output options, between `from` and `to`.
    let diff_tree =
        |output: &[&str]| git.run(plumbing.iter().chain(output).copied().chain([from, to]));
    // The three reads are independent: at once, they cost the slowest of them, not the sum.
    let (status, numstat, patch) = std::thread::scope(|scope| {
        let status = scope.spawn(|| diff_tree(&["--name-status", "-z"]));
        let numstat = scope.spawn(|| diff_tree(&["--numstat", "-z"]));
        let patch = diff_tree(&["-p", "--binary", "--full-index"]);
        // A panic there is a bug: it goes on as one.
        let join = |h: std::thread::ScopedJoinHandle<'_, _>| {
            h.join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        };
        (join(status), join(numstat), patch)
    });
    let (status, numstat, patch) = (status?, numstat?, patch?);
    let mut files = parse_name_status(&status)?;
    apply_numstat(&mut files, &numstat);
    Ok(Changes { patch, files })
}

/// `--name-status -z`: `STATUS\0PATH\0`, or `RNNN\0OLD\0NEW\0` for a rename.
fn parse_name_status(raw: &[u8]) -> Result<Vec<FileChange>, GitError> {
    let mut fields = raw.split(|b| *b == 0).filter(|f| !f.is_empty());
    let mut files = Vec::new();
    let text = |f: &[u8]| String::from_utf8_lossy(f).into_owned();
    while let Some(code) = fields.next() {
        let status = code
            .first()
            .copied()
            .and_then(ChangeStatus::from_letter)
            .ok_or_else(|| GitError::Parse(text(code)))?;
        let mut next_path = || {
            fields
                .next()
                .map(text)
                .ok_or_else(|| GitError::Parse("a status without a path".into()))
        };
        let (old_path, path) = if status == ChangeStatus::Renamed {
            (Some(next_path()?), next_path()?)
        } else {
            (None, next_path()?)
        };
        files.push(FileChange {
            status,
            path,
            old_path,
            added: None,
            deleted: None,
        });
    }
    Ok(files)
}

/// `--numstat -z`: `ADDED\tDELETED\tPATH\0`, or `ADDED\tDELETED\t\0OLD\0NEW\0` for a
/// rename; `-` counts for binary files.
fn apply_numstat(files: &mut [FileChange], raw: &[u8]) {
    let mut records = raw.split(|b| *b == 0);
    while let Some(record) = records.next() {
        if record.is_empty() {
            continue;
        }
        let text = String::from_utf8_lossy(record);
        let mut parts = text.splitn(3, '\t');
        let (Some(a), Some(d), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let path = if path.is_empty() {
            // A rename: the old and new paths follow as their own fields.
            let _old = records.next();
            records
                .next()
                .map(|p| String::from_utf8_lossy(p).into_owned())
                .unwrap_or_default()
        } else {
            path.to_string()
        };
        if let Some(f) = files.iter_mut().find(|f| f.path == path) {
            f.added = a.parse().ok();
            f.deleted = d.parse().ok();
        }
    }
}

/// Whether a patch applies cleanly to the current work tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApplyCheck {
    Clean,
    /// It does not: the paths git named and its whole explanation.
    Conflict {
        files: Vec<String>,
        detail: String,
    },
}

/// Which way a patch goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Forward,
    Reverse,
}

/// Applies `patch` to the work tree at `toplevel` (never the index). The check always runs
/// first, so a conflict changes nothing; with `check_only`, nothing is written either way.
pub fn apply_patch(
    toplevel: &Path,
    patch: &Path,
    direction: Direction,
    check_only: bool,
) -> Result<ApplyCheck, GitError> {
    let git = Git::in_dir(toplevel);
    let mut args: Vec<&std::ffi::OsStr> = vec!["apply".as_ref(), "--whitespace=nowarn".as_ref()];
    if direction == Direction::Reverse {
        args.push("-R".as_ref());
    }
    let mut check = args.clone();
    check.push("--check".as_ref());
    check.push(patch.as_os_str());
    let checked = git.output(check, None)?;
    if checked.code != 0 {
        let detail = checked.stderr.trim().to_string();
        return Ok(ApplyCheck::Conflict {
            files: conflicting_files(&detail),
            detail,
        });
    }
    if !check_only {
        args.push(patch.as_os_str());
        git.run(args)?;
    }
    Ok(ApplyCheck::Clean)
}

/// The paths in `git apply`'s complaints: `error: patch failed: PATH:LINE`,
/// `error: PATH: already exists in working directory`, `error: PATH: does not match index`, …
fn conflicting_files(stderr: &str) -> Vec<String> {
    let mut files: Vec<String> = Vec::new();
    for line in stderr.lines() {
        let Some(rest) = line.strip_prefix("error: ") else {
            continue;
        };
        let path = match rest.strip_prefix("patch failed: ") {
            Some(p) => p.rsplit_once(':').map(|(path, _)| path).unwrap_or(p),
            None => match rest.split_once(": ") {
                Some((path, _)) => path,
                None => continue,
            },
        };
        if !files.iter().any(|f| f == path) {
            files.push(path.to_string());
        }
    }
    files
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
    fn renames_carry_their_old_path_and_counts() {
        let mut files = parse_name_status(b"R087\0old name.txt\0new name.txt\0M\0a\0").unwrap();
        apply_numstat(
            &mut files,
            b"1\t1\t\0old name.txt\0new name.txt\x002\t0\ta\0",
        );
        assert_eq!(files[0].status, ChangeStatus::Renamed);
        assert_eq!(files[0].old_path.as_deref(), Some("old name.txt"));
        assert_eq!(files[0].path, "new name.txt");
        assert_eq!((files[0].added, files[1].added), (Some(1), Some(2)));
    }

    #[test]
    fn conflicting_files_are_read_from_git_apply_errors() {
        let stderr = "error: patch failed: src/a b.rs:12\nerror: src/a b.rs: patch does not apply\nerror: new.txt: already exists in working directory";
        assert_eq!(conflicting_files(stderr), vec!["src/a b.rs", "new.txt"]);
    }

    #[test]
    fn numstat_marks_binary_files_as_unknown_counts() {
        let mut files = parse_name_status(b"M\0a.txt\0A\0img.png\0").unwrap();
        apply_numstat(&mut files, b"3\t1\ta.txt\0-\t-\timg.png\0");
        assert_eq!((files[0].added, files[0].deleted), (Some(3), Some(1)));
        assert_eq!((files[1].added, files[1].deleted), (None, None));
    }
}
