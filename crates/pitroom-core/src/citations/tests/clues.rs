//! Bare and partial names on realistic layouts: several `app.py`, `__init__.py`, `mod.rs`,
//! `index.ts` and `main.go`, told apart by the line range, the cited identifier and the other
//! references of the answer, each clue alone and together.

use super::*;
use crate::citations::clues::shared_dirs;

/// `n` lines of `filler`, with the given lines (1-based) replaced.
fn numbered(n: u32, filler: &str, at: &[(u32, &str)]) -> String {
    (1..=n)
        .map(|i| {
            let line = at
                .iter()
                .find(|(k, _)| *k == i)
                .map_or(filler, |(_, text)| text);
            format!("{line}\n")
        })
        .collect()
}

fn ambiguous(candidates: &[&str]) -> CitationCheck {
    CitationCheck::Ambiguous {
        candidates: candidates.iter().map(|c| c.to_string()).collect(),
    }
}

/// Flask's layout: the application class, the sans-I/O base, and a small example app.
fn flask_like(p: &Project) {
    p.file(
        "src/flask/app.py",
        &numbered(
            1600,
            "        pass",
            &[
                (100, "class Flask(App):"),
                (1566, "    def wsgi_app(self, environ, start_response):"),
                (1567, "        ctx = self.request_context(environ)"),
            ],
        ),
    );
    p.file(
        "src/flask/sansio/app.py",
        &numbered(
            1700,
            "        pass",
            &[(300, "    # the WSGI entry point is Flask.wsgi_app")],
        ),
    );
    p.file(
        "examples/tutorial/app.py",
        &numbered(40, "", &[(5, "app.wsgi_app = ProxyFix(app.wsgi_app)")]),
    );
}

#[test]
fn line_range_alone_picks_the_only_app_py_long_enough() {
    let p = Project::new();
    flask_like(&p);
    p.file("src/flask/sansio/app.py", &lines(900));
    assert_first(
        &p.report("see app.py:1566"),
        verified("src/flask/app.py"),
        "app.py:1566 — ok (src/flask/app.py)",
    );
}

#[test]
fn wsgi_app_at_app_py_1566_resolves_by_range_and_identifier() {
    let p = Project::new();
    flask_like(&p);
    // Two app.py files are long enough; only one defines `wsgi_app` there.
    assert_eq!(
        p.verdict("`wsgi_app` at app.py:1566"),
        verified("src/flask/app.py")
    );
}

#[test]
fn identifier_alone_picks_the_init_py_that_defines_it() {
    let p = Project::with(
        "pkg/__init__.py",
        &numbered(40, "", &[(15, "from .plugins import load_plugins")]),
    );
    p.file(
        "pkg/plugins/__init__.py",
        &numbered(
            40,
            "    entries.append(ep)",
            &[(12, "def load_plugins(group):"), (25, "REGISTRY = {}")],
        ),
    );
    p.file("tests/__init__.py", &lines(40));
    // All three are long enough; one mentions the name nearby, one defines it around the range.
    assert_eq!(
        p.verdict("`load_plugins` in __init__.py:14-18"),
        verified("pkg/plugins/__init__.py")
    );
}

#[test]
fn definition_enclosing_the_range_beats_a_mention_nearby_in_mod_rs() {
    let p = Project::with(
        "src/store/mod.rs",
        &numbered(
            40,
            "        self.len += 1;",
            &[
                (9, "impl Store {"),
                (10, "    pub fn insert(&mut self, key: Key, value: Value) {"),
                (31, "    }"),
                (32, "}"),
            ],
        ),
    );
    p.file(
        "src/cache/mod.rs",
        &numbered(
            40,
            "    let _ = 1;",
            &[(21, "    self.store.insert(k, v);")],
        ),
    );
    p.file("src/net/mod.rs", &lines(40));
    assert_eq!(
        p.verdict("`Store::insert` at mod.rs:20-22"),
        verified("src/store/mod.rs")
    );
}

#[test]
fn definition_whose_block_closed_above_the_range_does_not_enclose_it() {
    let p = Project::new();
    // a: `insert` is defined above but its body ends at line 8; b: its body runs to line 30.
    p.file(
        "src/a/mod.rs",
        &numbered(
            40,
            "",
            &[(5, "fn insert() {"), (6, "    step();"), (8, "}")],
        ),
    );
    p.file(
        "src/b/mod.rs",
        &numbered(40, "    step();", &[(15, "fn insert() {"), (30, "}")]),
    );
    assert_eq!(p.verdict("`insert` at mod.rs:20"), verified("src/b/mod.rs"));
}

#[test]
fn proximity_alone_picks_the_index_ts_beside_the_other_reference() {
    let p = Project::new();
    for pkg in ["api", "cli", "web"] {
        p.file(&format!("packages/{pkg}/src/index.ts"), &lines(50));
    }
    p.file("packages/web/src/router.ts", &lines(10));
    p.assert_verified(
        "The router is set up in packages/web/src/router.ts:3 and exported from index.ts:10.",
        &["packages/web/src/router.ts", "packages/web/src/index.ts"],
    );
}

#[test]
fn proximity_settles_in_rounds_as_each_settled_reference_anchors_the_next() {
    let p = Project::with("docs/guide.md", &lines(5));
    p.file("docs/site/index.ts", &lines(20));
    p.file("packages/cli/index.ts", &lines(20));
    // Equally near the guide; only the settled `docs/site/index.ts` tells them apart.
    p.file("docs/site/theme/colors.ts", &lines(20));
    p.file("docs/blog/theme/colors.ts", &lines(20));
    p.assert_verified(
        "docs/guide.md:2 links index.ts:3, which loads colors.ts:4.",
        &[
            "docs/guide.md",
            "docs/site/index.ts",
            "docs/site/theme/colors.ts",
        ],
    );
}

#[test]
fn range_identifier_and_proximity_combine_on_main_go() {
    let p = Project::new();
    let main = numbered(
        80,
        "\tpool.Run()",
        &[(1, "package main"), (10, "func main() {"), (80, "}")],
    );
    p.file("cmd/server/main.go", &main);
    p.file("cmd/worker/main.go", &main);
    p.file(
        "tools/gen/main.go",
        &numbered(20, "", &[(3, "func main() {}")]),
    );
    p.file("cmd/worker/jobs.go", &lines(30));
    // The range drops tools/gen, the identifier ties server and worker, proximity decides.
    p.assert_verified(
        "`main` at main.go:40-45 starts the pool; jobs run in cmd/worker/jobs.go:12.",
        &["cmd/worker/main.go", "cmd/worker/jobs.go"],
    );
}

#[test]
fn true_tie_is_ambiguous_and_names_only_the_tied_candidates() {
    let p = Project::with("src/net/mod.rs", &lines(60));
    p.file("src/fs/mod.rs", &lines(60));
    p.file("src/ui/mod.rs", &lines(5));
    assert_first(
        &p.report("mod.rs:30"),
        ambiguous(&["src/fs/mod.rs", "src/net/mod.rs"]),
        "mod.rs:30 — ambiguous: 2 files named mod.rs (src/fs/mod.rs, src/net/mod.rs)",
    );
}

#[test]
fn tie_that_proximity_cannot_break_stays_ambiguous() {
    let p = Project::with("packages/api/src/index.ts", &lines(50));
    p.file("packages/web/src/index.ts", &lines(50));
    p.file("README.md", &lines(5));
    // The other reference shares no directory with either candidate.
    assert_eq!(
        p.verdicts("README.md:2 and index.ts:10"),
        [
            verified("README.md"),
            ambiguous(&["packages/api/src/index.ts", "packages/web/src/index.ts"])
        ]
    );
}

#[test]
fn clue_that_rules_out_every_candidate_is_ignored() {
    let p = Project::with("a/app.py", &lines(10));
    p.file("b/app.py", &lines(10));
    assert_eq!(p.verdict("app.py:99"), ambiguous(&["a/app.py", "b/app.py"]));
}

/// The path as written beside a deeper file of the same name.
#[test]
fn written_path_against_a_deeper_file_of_the_same_name() {
    let cases = [
        (
            "written path too short falls back to a deeper file that fits",
            ("main.go", 10),
            ("cmd/server/main.go", 200),
            "main.go:120",
            verified("cmd/server/main.go"),
        ),
        (
            // Neither defines `run`: the file as written is kept, and the identifier reported
            // missing.
            "written path wins a tie no clue breaks",
            ("app.py", 100),
            ("web/app.py", 100),
            "`run` at app.py:50",
            CitationCheck::SymbolNotFound {
                symbol: "run".into(),
            },
        ),
        (
            "anchored path is never searched elsewhere",
            ("app.py", 100),
            ("web/app.py", 200),
            "./app.py:150",
            CitationCheck::OutOfRange { lines: 100 },
        ),
    ];
    for (what, (written, written_lines), (deeper, deeper_lines), answer, want) in cases {
        let p = Project::with(written, &lines(written_lines));
        p.file(deeper, &lines(deeper_lines));
        assert_eq!(p.verdict(answer), want, "{what}");
    }
}

#[test]
fn narrowing_reads_each_candidate_once() {
    let p = Project::new();
    flask_like(&p);
    let mut v = Verifier::new(&p.root);
    let report = v.run("`wsgi_app` at app.py:1566, app.py:1567 and app.py:20");
    assert_eq!(report.checked[0].verdict, verified("src/flask/app.py"));
    assert_eq!(report.checked[1].verdict, verified("src/flask/app.py"));
    assert_eq!(v.stats.index_builds, 1);
    assert_eq!(v.stats.file_reads, 3);
}

#[test]
fn shared_dirs_counts_leading_directories_only() {
    assert_eq!(shared_dirs("src/a/x.rs", "src/a/b/y.rs"), 2);
    assert_eq!(shared_dirs("src/a/x.rs", "lib/a/x.rs"), 0);
    assert_eq!(shared_dirs("x.rs", "src/x.rs"), 0);
    assert_eq!(shared_dirs("src/x.rs", "src/x.rs"), 1);
}
