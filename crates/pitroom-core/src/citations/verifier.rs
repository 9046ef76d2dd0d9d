//! One verification: resolving each cited path in the project and checking it on disk.
//!
//! A path that names a file as written is taken when the file fits the citation. Bare and partial
//! names (and written paths whose file does not fit) are looked up in the project's index and the
//! candidates are narrowed by the clues the answer gives (see `clues.rs`): the line range, the
//! cited identifier, then the directories of the answer's other resolved references.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::{Component, Path, PathBuf};
use std::rc::Rc;

use super::clues::{self, Pick};
use super::definitions::symbol_near;
use super::files::{FileData, FileIndex};
use super::vocab::{MAX_INDEXED_FILES, STREAM_ABOVE_BYTES};
use super::{find_citations, CheckedCitation, Citation, CitationCheck, RefReport};

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
    /// Per cited path: the file it names as written (if any), or why it names none.
    direct: HashMap<String, Result<Option<String>, CitationCheck>>,
    /// Per cited path: the indexed files it may name.
    indexed: HashMap<String, Vec<String>>,
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
        let root = pitroom_proc::landlock::normalize_lexically(&absolute);
        Verifier {
            root_canonical: fs::canonicalize(&root).ok(),
            root,
            max_files: MAX_INDEXED_FILES,
            stream_above: STREAM_ABOVE_BYTES,
            stats: VerifyStats::default(),
            index: None,
            files: HashMap::new(),
            direct: HashMap::new(),
            indexed: HashMap::new(),
        }
    }

    pub(crate) fn run(&mut self, answer: &str) -> RefReport {
        let citations = distinct(find_citations(answer));
        let mut picks: Vec<Pick> = citations.iter().map(|c| self.pick(c)).collect();
        clues::settle_by_proximity(&mut picks);
        let checked: Vec<CheckedCitation> = citations
            .into_iter()
            .zip(picks)
            .map(|(citation, pick)| {
                let verdict = match pick {
                    Pick::File(file) => self.check(&citation, file),
                    Pick::Tie(candidates) => CitationCheck::Ambiguous { candidates },
                    Pick::Failed(verdict) => verdict,
                };
                CheckedCitation { citation, verdict }
            })
            .collect();
        let verified = checked.iter().filter(|c| c.is_verified()).count();
        RefReport {
            verified: u32::try_from(verified).unwrap_or(u32::MAX),
            total: u32::try_from(checked.len()).unwrap_or(u32::MAX),
            checked,
        }
    }

    /// The file a citation names, the candidates still tied after its own clues, or why there
    /// is none. Proximity to the other references is weighed later, over the whole answer.
    fn pick(&mut self, citation: &Citation) -> Pick {
        let direct = match self.direct(&citation.path) {
            Ok(direct) => direct,
            Err(verdict) => return Pick::Failed(verdict),
        };
        if let Some(file) = &direct {
            // A path written relative to a directory (`./`, `../`) or absolutely means that file;
            // one that fits its citation needs no search either.
            if is_anchored(&citation.path) || self.fits(citation, file) {
                return Pick::File(file.clone());
            }
        }
        let mut files = self.indexed(&citation.path);
        if let Some(file) = &direct {
            if !files.contains(file) {
                files.push(file.clone());
                files.sort();
            }
        }
        match files.len() {
            0 => Pick::Failed(CitationCheck::Missing),
            1 => Pick::File(files.remove(0)),
            _ => self.narrow(citation, files, direct.as_deref()),
        }
    }

    /// Narrows several candidates by the line range, then by the cited identifier; in a tie
    /// that still holds the file the path names as written, that file wins.
    fn narrow(&mut self, citation: &Citation, files: Vec<String>, direct: Option<&str>) -> Pick {
        let loaded: Vec<(String, Rc<FileData>)> = files
            .into_iter()
            .map(|f| {
                let data = self.load(&f);
                (f, data)
            })
            .collect();
        let in_range = clues::keep_best(loaded, |(_, data)| clues::range_score(citation, data));
        let named = clues::keep_best(in_range, |(_, data)| clues::symbol_score(citation, data));
        let mut left: Vec<String> = named.into_iter().map(|(f, _)| f).collect();
        if left.len() == 1 {
            return Pick::File(left.remove(0));
        }
        if let Some(direct) = direct.filter(|d| left.iter().any(|f| f == d)) {
            return Pick::File(direct.to_string());
        }
        Pick::Tie(left)
    }

    /// Whether `file` fits the citation: the range lies inside it and the cited identifier (if
    /// any) is near it. A malformed range (line 0, reversed) fits no file better than another,
    /// so it does not send the search elsewhere.
    fn fits(&mut self, citation: &Citation, file: &str) -> bool {
        if citation.start == 0 || citation.start > citation.end {
            return true;
        }
        let data = self.load(file);
        clues::range_score(citation, &data) > 0
            && (citation.symbol.is_none() || clues::symbol_score(citation, &data) > 0)
    }

    /// The verdict on a citation whose file is known.
    fn check(&mut self, citation: &Citation, file: String) -> CitationCheck {
        let data = self.load(&file);
        let Some(lines) = data.line_count() else {
            return CitationCheck::Missing;
        };
        if citation.start == 0 || citation.start > citation.end || citation.end > lines {
            return CitationCheck::OutOfRange { lines };
        }
        if let Some(symbol) = &citation.symbol {
            if matches!(*data, FileData::Text { .. })
                && !symbol_near(&data, symbol, citation.start, citation.end)
            {
                return CitationCheck::SymbolNotFound {
                    symbol: symbol.clone(),
                };
            }
        }
        CitationCheck::Verified { file }
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

    /// The project-relative file a cited path names as written (`None` when there is no such
    /// file but the index may know one), or why it can name none.
    fn direct(&mut self, path: &str) -> Result<Option<String>, CitationCheck> {
        if let Some(known) = self.direct.get(path) {
            return known.clone();
        }
        let found = self.direct_uncached(path);
        self.direct.insert(path.to_string(), found.clone());
        found
    }

    fn direct_uncached(&self, path: &str) -> Result<Option<String>, CitationCheck> {
        if path.starts_with('~') {
            return Err(CitationCheck::OutsideProject);
        }
        if path.starts_with('/') {
            let rel = self
                .inside_root(&pitroom_proc::landlock::normalize_lexically(Path::new(
                    path,
                )))
                .ok_or(CitationCheck::OutsideProject)?;
            return if !rel.is_empty() && self.root.join(&rel).is_file() {
                Ok(Some(rel))
            } else {
                Err(CitationCheck::Missing)
            };
        }
        let rels = relative_forms(path)?;
        if rels.is_empty() {
            return Err(CitationCheck::Missing);
        }
        Ok(rels.into_iter().find(|r| self.root.join(r).is_file()))
    }

    /// Indexed files whose path ends with the cited one: for the first written form (`@src/a.rs`
    /// as written, then as `src/a.rs`) that matches any.
    fn indexed(&mut self, path: &str) -> Vec<String> {
        if let Some(known) = self.indexed.get(path) {
            return known.clone();
        }
        let rels = relative_forms(path).unwrap_or_default();
        let mut found = Vec::new();
        if !rels.is_empty() {
            let index = self.index();
            found = rels
                .iter()
                .map(|rel| index.lookup(rel))
                .find(|candidates| !candidates.is_empty())
                .unwrap_or_default();
        }
        self.indexed.insert(path.to_string(), found.clone());
        found
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

/// The citations in answer order, each distinct one once.
fn distinct(citations: Vec<Citation>) -> Vec<Citation> {
    let mut seen = HashSet::new();
    citations
        .into_iter()
        .filter(|c| seen.insert((c.path.clone(), c.start, c.end, c.symbol.clone())))
        .collect()
}

/// Whether a path says where it starts: absolute, `./…` or `../…`.
fn is_anchored(path: &str) -> bool {
    path.starts_with('/') || path.starts_with("./") || path.starts_with("../")
}

/// The project-relative forms a relative path may mean: as written, and (for `@src/a.rs`, a
/// mention) without the `@`; `@scope/pkg/...` is a real path, so both are kept.
fn relative_forms(path: &str) -> Result<Vec<String>, CitationCheck> {
    let mut rels = vec![normalize_relative(path).ok_or(CitationCheck::OutsideProject)?];
    if let Some(rel) = path.strip_prefix('@').and_then(normalize_relative) {
        rels.push(rel);
    }
    rels.retain(|r| !r.is_empty());
    Ok(rels)
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
