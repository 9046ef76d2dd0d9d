//! The project's files on disk: the index for bare and partial names, and each file's lines.

use std::collections::HashMap;
use std::fs;
use std::io::Read;
use std::path::Path;

use super::vocab::SKIPPED_DIRS;

/// The project's files, for bare and partial names.
pub(super) struct FileIndex {
    /// Project-relative paths with `/` separators, sorted.
    paths: Vec<String>,
    /// File name → indices into `paths`.
    by_name: HashMap<String, Vec<usize>>,
    /// The walk stopped at the file limit.
    pub(super) truncated: bool,
}

impl FileIndex {
    pub(super) fn build(root: &Path, max_files: usize) -> FileIndex {
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
    pub(super) fn lookup(&self, name: &str) -> Vec<String> {
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
pub(super) enum FileData {
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
    pub(super) fn read(path: &Path, stream_above: u64) -> FileData {
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

    pub(super) fn line_count(&self) -> Option<u32> {
        match self {
            FileData::Text { starts, .. } => Some(u32::try_from(starts.len()).unwrap_or(u32::MAX)),
            FileData::Counted(n) => Some(*n),
            FileData::Unreadable => None,
        }
    }

    /// Line `n` (1-based) without its line ending.
    pub(super) fn line(&self, n: u32) -> &str {
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
