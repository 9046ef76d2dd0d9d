//! The citation scanner over answers made of `path:line` shapes and everything around them:
//! non-ASCII, huge line numbers, reversed ranges, unbalanced backticks, URLs, versions.
//! `find_citations` reports only what the answer wrote, in order; `verify` checks each one.

use std::path::Path;
use std::sync::LazyLock;

use proptest::prelude::*;

use crate::citations::{find_citations, verify, Citation, CitationCheck};

/// A fragment of an answer.
fn fragment() -> impl Strategy<Value = String> {
    let paths = prop::sample::select(vec![
        "src/a.rs",
        "a.rs",
        "calc.py",
        "déjà/vu.md",
        "./src/a.rs",
        "../x.rs",
        "/abs/p.rs",
        "~/x.rs",
        "Cargo.toml",
        "Makefile",
        ".env",
        "Node.js",
        "v1.2.3",
        "1.2",
        "http://example.com/a.rs",
        "localhost/a.rs",
        "src/",
        "a//b.rs",
        "日本/語.rs",
        "src/a b.rs",
        "-a.rs",
        "Ωmega.go",
    ]);
    let numbers = prop::sample::select(vec![
        "0",
        "1",
        "2",
        "3",
        "5",
        "12",
        "40",
        "41",
        "007",
        "999999999",
        "1000000000",
        "99999999999999999999",
        "4294967295",
        "4294967296",
    ]);
    let joins = prop::sample::select(vec![
        ":", "#L", ":L", "-", "–", "-L", "C", ":", ",", " ", "`", "``", "```", "\n", "(", ")", "[",
        "]", ".", "::", "#",
    ]);
    let idents = prop::sample::select(vec![
        "`parse`",
        "`Session::new`",
        "`fn load`",
        "`run()`",
        "`a < b`",
        "`Vec<T>::new`",
        "`$x`",
        "`ünïcode_fn`",
        "`",
        "``",
        "```rust\nfn x() {}\n```",
        "`unclosed",
        "`a.rs`",
        "`&*mut_ref!`",
    ]);
    let words = prop::sample::select(vec![
        " at ", " in ", " see ", " and ", ". ", "; ", " — ", "\n\n", " 🦀 ", "\u{200b}", "\t",
    ]);
    // A whole reference, so most answers hold some: path, separator, line, maybe a range end
    // (reversed or not) and a column.
    let reference = (
        paths.clone(),
        prop::sample::select(vec![":", "#L", ":L", "#"]),
        numbers.clone(),
        prop::option::of((prop::sample::select(vec!["-", "–", "-L"]), numbers.clone())),
        prop::option::of((prop::sample::select(vec![":", "C"]), numbers.clone())),
    )
        .prop_map(|(path, sep, start, end, column)| {
            let end = end
                .map(|(dash, n)| format!("{dash}{n}"))
                .unwrap_or_default();
            let column = column.map(|(c, n)| format!("{c}{n}")).unwrap_or_default();
            format!("{path}{sep}{start}{column}{end}")
        });
    prop_oneof![
        10 => reference,
        4 => paths.prop_map(str::to_string),
        4 => numbers.prop_map(str::to_string),
        4 => joins.prop_map(str::to_string),
        2 => idents.prop_map(str::to_string),
        2 => words.prop_map(str::to_string),
        1 => ".{0,12}",
    ]
}

fn answer() -> impl Strategy<Value = String> {
    prop_oneof![
        5 => prop::collection::vec(fragment(), 0..40).prop_map(|f| f.concat()),
        1 => ".{0,200}",
        1 => prop::collection::vec(any::<u8>(), 0..200)
            .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
    ]
}

/// The promises `Citation`'s fields make, checkable from the answer alone.
fn check(answer: &str, found: &[Citation]) -> Result<(), TestCaseError> {
    // In the order of the answer, each from its own stretch of it.
    let mut at = 0;
    for c in found {
        let Some(pos) = answer[at..].find(&c.text) else {
            return Err(TestCaseError::fail(format!(
                "{c:?} is not written after byte {at} of {answer:?}"
            )));
        };
        at += pos + c.text.len();
        prop_assert!(!c.path.is_empty(), "{:?}", c);
        prop_assert!(
            c.text.starts_with(&c.path),
            "the path leads the reference: {:?}",
            c
        );
        let suffix = &c.text[c.path.len()..];
        prop_assert!(suffix.starts_with([':', '#']), "{:?}", c);
        for line in [c.start, c.end] {
            prop_assert!(
                suffix.contains(&line.to_string()),
                "line {} is written in {:?}",
                line,
                c
            );
            prop_assert!(line < 1_000_000_000, "at most 9 digits: {:?}", c);
        }
        if let Some(symbol) = &c.symbol {
            prop_assert!(answer.contains('`'), "{:?}", c);
            for part in symbol.split("::").flat_map(|s| s.split(['.', '#'])) {
                prop_assert!(
                    !part.is_empty() && answer.contains(part),
                    "{:?} is written in the answer",
                    part
                );
            }
        }
    }
    Ok(())
}

/// A small project: files the fragments name, an empty one, a non-UTF-8 one, a duplicate name.
static PROJECT: LazyLock<tempfile::TempDir> = LazyLock::new(|| {
    let dir = tempfile::tempdir().unwrap();
    let lines: String = (1..=40).map(|i| format!("fn line_{i}() {{}}\n")).collect();
    for (rel, content) in [
        ("src/a.rs", format!("pub fn parse() {{}}\n{lines}")),
        ("lib/a.rs", lines.clone()),
        ("calc.py", "def add(a, b):\n    return a + b\n".to_string()),
        ("déjà/vu.md", "# vu\n".to_string()),
        ("Cargo.toml", "[package]\n".to_string()),
        ("empty.rs", String::new()),
    ] {
        let path = dir.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
    std::fs::write(dir.path().join("bin.rs"), b"\xff\xfe\0\n\x80").unwrap();
    dir
});

proptest! {
    #![proptest_config(super::config(512))]

    #[test]
    fn fuzz_found_citations_are_written_in_the_answer_in_order(answer in answer()) {
        let found = find_citations(&answer);
        check(&answer, &found)?;
        prop_assert_eq!(found, find_citations(&answer));
    }

    #[test]
    fn fuzz_huge_or_ten_digit_line_numbers_are_never_cited(
        path in prop::sample::select(vec!["a.rs", "src/a.rs", "x/y.py"]),
        digits in "[1-9][0-9]{9,30}",
        sep in prop::sample::select(vec![":", "#L", ":L", ":1-", "#L1-L"]),
    ) {
        let answer = format!("see {path}{sep}{digits} here");
        let found = find_citations(&answer);
        check(&answer, &found)?;
        prop_assert!(found.is_empty(), "{:?} -> {:?}", answer, found);
    }

    #[test]
    fn fuzz_verify_checks_each_distinct_citation_once(answer in answer()) {
        let root: &Path = PROJECT.path();
        let report = verify(&answer, root);
        prop_assert_eq!(report.total as usize, report.checked.len());
        prop_assert_eq!(
            report.verified as usize,
            report.checked.iter().filter(|c| c.is_verified()).count()
        );
        let found = find_citations(&answer);
        for checked in &report.checked {
            prop_assert!(found.contains(&checked.citation), "{:?}", checked);
            let _ = checked.reason();
            match &checked.verdict {
                CitationCheck::Verified { file } => {
                    prop_assert!(root.join(file).is_file(), "{:?}", checked);
                    prop_assert!(checked.citation.start >= 1);
                    prop_assert!(checked.citation.start <= checked.citation.end);
                }
                CitationCheck::Ambiguous { candidates } => {
                    prop_assert!(candidates.len() >= 2, "{:?}", checked);
                }
                _ => {}
            }
        }
        for (i, a) in report.checked.iter().enumerate() {
            prop_assert!(
                !report.checked[..i].iter().any(|b| b.citation == a.citation),
                "{:?} is checked twice",
                a.citation
            );
        }
    }
}
