//! The clues that pick one file among several of the same name: an answer that
//! cites `app.py:1566` on a project with three `app.py` files means the one that has that many
//! lines, defines the cited identifier there, and sits near the answer's other references.
//!
//! Each clue keeps the candidates that score best on it. A clue that rules out every candidate
//! (all files too short, the identifier nowhere) says nothing, and all of them stay; only what is
//! still tied after every clue is reported as ambiguous.

use std::cmp::Reverse;

use super::definitions::{defined_at_or_enclosing, symbol_near};
use super::files::FileData;
use super::Citation;

/// What resolving one citation came to.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Pick {
    /// One project-relative file.
    File(String),
    /// Several files no clue so far tells apart (sorted).
    Tie(Vec<String>),
    /// No file, and why.
    Failed(super::CitationCheck),
}

/// The items with the highest `score` (all of them when every score is equal).
pub(super) fn keep_best<T, K: Ord + Copy>(items: Vec<T>, score: impl Fn(&T) -> K) -> Vec<T> {
    let scored: Vec<(K, T)> = items.into_iter().map(|item| (score(&item), item)).collect();
    let Some(best) = scored.iter().map(|(s, _)| *s).max() else {
        return Vec::new();
    };
    scored
        .into_iter()
        .filter(|(s, _)| *s == best)
        .map(|(_, item)| item)
        .collect()
}

/// 1 when the cited range lies inside the file, else 0 (unreadable files never fit).
pub(super) fn range_score(citation: &Citation, data: &FileData) -> u8 {
    let fits = data.line_count().is_some_and(|lines| {
        citation.start >= 1 && citation.start <= citation.end && citation.end <= lines
    });
    u8::from(fits)
}

/// How well the file bears out the cited identifier: 2 when it is defined on the cited lines or
/// its definition encloses them, 1 when it appears nearby (or a file too large to read whole
/// cannot tell), 0 when it is not there. Every file scores 0 for a citation without one.
pub(super) fn symbol_score(citation: &Citation, data: &FileData) -> u8 {
    let Some(symbol) = &citation.symbol else {
        return 0;
    };
    match data {
        FileData::Text { .. } => {
            if defined_at_or_enclosing(data, symbol, citation.start, citation.end) {
                2
            } else {
                u8::from(symbol_near(data, symbol, citation.start, citation.end))
            }
        }
        FileData::Counted(_) => 1,
        FileData::Unreadable => 0,
    }
}

/// Breaks the ties that remain by path proximity: the candidate sharing the most leading
/// directories with one of the answer's resolved references wins, and among those the one
/// fewest directories away from it (`src/flask/app.py` over `src/flask/sansio/app.py` next to
/// `src/flask/app.py`). Candidates that share no directory with any reference stay tied.
/// Repeats while a round settles something, since a reference settled this way anchors the
/// others in turn.
pub(super) fn settle_by_proximity(picks: &mut [Pick]) {
    loop {
        let anchors: Vec<String> = picks
            .iter()
            .filter_map(|p| match p {
                Pick::File(f) => Some(f.clone()),
                _ => None,
            })
            .collect();
        if anchors.is_empty() {
            return;
        }
        let mut changed = false;
        for pick in picks.iter_mut() {
            let Pick::Tie(files) = pick else {
                continue;
            };
            if files.iter().all(|f| closeness(f, &anchors).0 == 0) {
                continue;
            }
            let nearest = keep_best(files.clone(), |f| closeness(f, &anchors));
            if nearest.len() < files.len() {
                changed = true;
                *pick = match nearest.len() {
                    1 => Pick::File(nearest[0].clone()),
                    _ => Pick::Tie(nearest),
                };
            }
        }
        if !changed {
            return;
        }
    }
}

/// How close `file` is to the nearest of `anchors`: the leading directories they share, then
/// (reversed, so that nearer ranks higher) how many directories lie between them.
fn closeness(file: &str, anchors: &[String]) -> (usize, Reverse<usize>) {
    anchors
        .iter()
        .map(|a| {
            let shared = shared_dirs(file, a);
            let apart = depth(file) + depth(a) - 2 * shared;
            (shared, Reverse(apart))
        })
        .max()
        .unwrap_or((0, Reverse(usize::MAX)))
}

/// How many directories a project-relative path lies in (`src/a/x.rs` → 2).
fn depth(path: &str) -> usize {
    path.matches('/').count()
}

/// How many leading directories two project-relative paths have in common
/// (`src/a/x.rs`, `src/a/b/y.rs` → 2).
pub(super) fn shared_dirs(a: &str, b: &str) -> usize {
    fn dir_of(path: &str) -> Option<&str> {
        path.rsplit_once('/').map(|(dir, _)| dir)
    }
    match (dir_of(a), dir_of(b)) {
        (Some(a), Some(b)) => a
            .split('/')
            .zip(b.split('/'))
            .take_while(|(x, y)| x == y)
            .count(),
        _ => 0,
    }
}
