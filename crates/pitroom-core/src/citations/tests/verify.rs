//! Checking citations on disk: paths, ranges, identifiers, the index and the file cache.

use super::*;
use crate::citations::definitions::defines;

#[test]
fn verify_accepts_a_direct_path_relative_absolute_dot_slash_or_at_mentioned() {
    let p = Project::with("src/a.rs", &lines(40));
    let absolute = format!("see {}/src/a.rs:12", p.root.display());
    // An `@` mention prefix falls back to the plain path.
    for answer in [
        "see src/a.rs:12-20",
        &absolute,
        "./src/a.rs:5",
        "@src/a.rs:2",
    ] {
        assert_eq!(p.verdict(answer), verified("src/a.rs"), "{answer}");
    }
}

#[test]
fn verify_resolves_bare_partial_and_extensionless_names_through_index() {
    let p = Project::with("app/main/ipc.ts", &lines(300));
    p.file("src/auth/session.ts", &lines(50));
    p.file("src/other/session.ts", &lines(50));
    p.file("Makefile", "all:\n\tcargo build\n\tcargo test\n");
    p.file("docker/Dockerfile", &lines(12));
    assert_first(
        &p.report("ipc.ts:218"),
        verified("app/main/ipc.ts"),
        "ipc.ts:218 — ok (app/main/ipc.ts)",
    );
    assert_eq!(
        p.verdict("auth/session.ts:40"),
        verified("src/auth/session.ts")
    );
    p.assert_verified(
        "Makefile:3 and Dockerfile:10",
        &["Makefile", "docker/Dockerfile"],
    );
}

#[test]
fn verify_reports_ambiguous_bare_name_with_candidates() {
    let p = Project::new();
    for dir in ["a", "b", "c", "d"] {
        p.file(&format!("{dir}/util.ts"), &lines(10));
    }
    assert_first(
        &p.report("util.ts:3"),
        CitationCheck::Ambiguous {
            candidates: vec![
                "a/util.ts".into(),
                "b/util.ts".into(),
                "c/util.ts".into(),
                "d/util.ts".into(),
            ],
        },
        "util.ts:3 — ambiguous: 4 files named util.ts (a/util.ts, b/util.ts, c/util.ts, …)",
    );
}

#[test]
fn verify_reports_missing_file() {
    let p = Project::with("src/a.rs", &lines(3));
    let report = p.report("src/nope.rs:1 and nope.py:2");
    assert_eq!(report.total, 2);
    assert_eq!(report.verified, 0);
    assert!(report
        .checked
        .iter()
        .all(|c| c.verdict == CitationCheck::Missing));
    assert_eq!(
        report.checked[0].reason(),
        "src/nope.rs:1 — no such file in the project"
    );
}

#[test]
fn verify_rejects_a_line_past_the_end_line_zero_and_a_reversed_range() {
    let p = Project::with("src/a.rs", &lines(40));
    let report = p.report("src/a.rs:90 and src/a.rs:30-41 and src/a.rs:0 and src/a.rs:20-10");
    assert_eq!(
        verdicts_in(&report),
        vec![CitationCheck::OutOfRange { lines: 40 }; 4]
    );
    let reasons: Vec<String> = report.checked.iter().map(CheckedCitation::reason).collect();
    assert_eq!(reasons[0], "src/a.rs:90 — file has 40 lines");
    assert_eq!(
        reasons[2],
        "src/a.rs:0 — line 0 does not exist (lines start at 1)"
    );
    assert_eq!(reasons[3], "src/a.rs:20-10 — range 20-10 is reversed");
}

#[test]
fn verify_counts_last_line_without_trailing_newline() {
    let p = Project::with("a.txt", "one\ntwo\nthree");
    p.file("b.txt", "one\ntwo\nthree\n");
    p.file("empty.txt", "");
    assert_eq!(
        p.verdicts("a.txt:3 a.txt:4 b.txt:3 b.txt:4 empty.txt:1"),
        [
            verified("a.txt"),
            CitationCheck::OutOfRange { lines: 3 },
            verified("b.txt"),
            CitationCheck::OutOfRange { lines: 3 },
            CitationCheck::OutOfRange { lines: 0 },
        ]
    );
}

const SESSION_TS: &str = "\
import { db } from './db';

export class Session {
  private token: string;

  constructor(token: string) {
this.token = token;
  }

  refresh(): void {
const next = db.rotate(this.token);
if (!next) {
  throw new Error('expired');
}
this.token = next;
  }
}
";

#[test]
fn verify_checks_a_cited_symbol_near_or_around_the_range() {
    let p = Project::with("src/session.ts", SESSION_TS);
    let mut config = String::from(
        "pub struct Config;\n\nimpl Config {\n    pub fn load(path: &str) -> Config {\n",
    );
    config.push_str(&"        step();\n".repeat(30));
    config.push_str("        Config\n    }\n}\n");
    p.file("src/config.rs", &config);
    let mut far = String::from("fn other() {}\n");
    far.push_str(&"// filler\n".repeat(20));
    far.push_str("fn target() {}\n");
    p.file("src/lib.rs", &far);
    // `refresh` is on line 10; the range ends 2 lines before it.
    assert_eq!(
        p.verdict("`refresh` at src/session.ts:7-8"),
        verified("src/session.ts")
    );
    // A definition that encloses the range.
    p.assert_verified(
        "`Config::load` at src/config.rs:20-25, `Config` at src/config.rs:30",
        &["src/config.rs", "src/config.rs"],
    );
    assert_first(
        &p.report("`logout` at src/session.ts:10-16"),
        CitationCheck::SymbolNotFound {
            symbol: "logout".into(),
        },
        "src/session.ts:10-16 — `logout` not found near lines 10-16",
    );
    // Far from the range, with no definition around it.
    assert_eq!(
        p.verdict("`target` at src/lib.rs:2"),
        CitationCheck::SymbolNotFound {
            symbol: "target".into()
        }
    );
}

#[test]
fn verify_recognises_definition_forms() {
    let cases = [
        ("pub(crate) fn parse(x: u8) -> u8 {", "parse"),
        ("def parse(self):", "parse"),
        ("export async function parse(x) {", "parse"),
        ("class Parser:", "Parser"),
        ("impl<T: Clone> Parser<T> {", "Parser"),
        ("impl<F: Fn() -> u8> Parser<F> {", "Parser"),
        ("impl Display for Parser {", "Parser"),
        ("func (p *Parser) Parse(b []byte) error {", "Parse"),
        ("  public int parse(String s) {", "parse"),
        ("  parse(input) {", "parse"),
        ("const parse = (x) => x + 1", "parse"),
        ("  parse: function (x) {", "parse"),
        ("type Parser interface {", "Parser"),
    ];
    for (line, name) in cases {
        assert!(defines(line, name), "{line:?} should define {name}");
    }
    let calls = [
        ("    let y = parse(x);", "parse"),
        ("    return parse(x)", "parse"),
        ("    self.parse(x);", "parse"),
        ("    foo(parse(x));", "parse"),
        ("    // parsed later", "parse"),
    ];
    for (line, name) in calls {
        assert!(!defines(line, name), "{line:?} should not define {name}");
    }
}

#[test]
fn verify_rejects_paths_outside_project() {
    let p = Project::new();
    let other = Project::new();
    other.file("x.rs", &lines(3));
    let answer = format!("{}/x.rs:1 and /etc/hosts.conf:1", other.root.display());
    let report = p.report(&answer);
    assert!(report
        .checked
        .iter()
        .all(|c| c.verdict == CitationCheck::OutsideProject));
    assert_eq!(
        report.checked[1].reason(),
        "/etc/hosts.conf:1 — outside the project"
    );
    // A relative path climbing out of the project.
    assert_eq!(
        p.verdict("../elsewhere/x.rs:1"),
        CitationCheck::OutsideProject
    );
    assert_eq!(p.verdict("~/notes.md:1"), CitationCheck::OutsideProject);
}

#[test]
fn verify_index_skips_ignored_and_hidden_dirs() {
    let p = Project::new();
    for path in [
        "node_modules/lib/only.js",
        "target/debug/gen.rs",
        ".hidden/secret.py",
        "src/.git/conf.toml",
    ] {
        p.file(path, &lines(3));
    }
    assert_eq!(
        p.verdicts("only.js:1 gen.rs:1 secret.py:1 conf.toml:1"),
        vec![CitationCheck::Missing; 4]
    );
    // A direct path into a skipped directory still checks out.
    assert_eq!(
        p.verdict("node_modules/lib/only.js:2"),
        verified("node_modules/lib/only.js")
    );
}

#[test]
fn verify_builds_no_index_for_direct_paths_and_one_for_many_bare_names() {
    let p = Project::with("src/a.rs", &lines(10));
    p.file("src/deep/b.rs", &lines(10));
    let mut direct = Verifier::new(&p.root);
    let report = direct.run("src/a.rs:1, ./src/deep/b.rs:2 and src/a.rs:3");
    assert_eq!(report.verified, 3);
    assert_eq!(direct.stats.index_builds, 0);
    let mut bare = Verifier::new(&p.root);
    let report = bare.run("a.rs:1, b.rs:2, c.rs:3");
    assert_eq!((report.verified, report.total), (2, 3));
    assert_eq!(bare.stats.index_builds, 1);
    assert!(!bare.stats.index_truncated);
}

#[test]
fn verify_records_truncated_index() {
    let p = Project::new();
    for name in ["a", "b", "c", "d"] {
        p.file(&format!("src/{name}.rs"), &lines(3));
    }
    let mut v = Verifier::new(&p.root);
    v.max_files = 2;
    let _ = v.run("z.rs:1");
    assert!(v.stats.index_truncated);
}

#[test]
fn verify_reads_each_file_once() {
    let p = Project::with("src/a.rs", &lines(10));
    let mut v = Verifier::new(&p.root);
    let report = v.run("src/a.rs:1, a.rs:2, `line` at src/a.rs:3, src/a.rs:99");
    assert_eq!((report.verified, report.total), (3, 4));
    assert_eq!(v.stats.file_reads, 1);
}

#[test]
fn verify_deduplicates_identical_citations() {
    let p = Project::with("src/a.rs", &lines(10));
    let report = p.report(
        "src/a.rs:1 then (src/a.rs:1), `src/a.rs:1`, src/a.rs#L1, src/a.rs:1:4; src/a.rs:2",
    );
    assert_eq!(report.total, 2);
    assert_eq!(report.verified, 2);
    assert_eq!(report.checked[0].citation.text, "src/a.rs:1");
}

#[test]
fn verify_large_file_checks_line_count_only() {
    let p = Project::with("big.log.txt", &lines(500));
    let mut v = Verifier::new(&p.root);
    v.stream_above = 100;
    let report = v.run("`absent` at big.log.txt:500 and big.log.txt:501");
    assert_eq!(
        verdicts_in(&report),
        [
            verified("big.log.txt"),
            CitationCheck::OutOfRange { lines: 500 }
        ]
    );
}

#[test]
fn verify_reads_non_utf8_files_lossily() {
    let p = Project::new();
    p.bytes(
        "src/latin1.c",
        b"int caf\xe9;\nint parse(void) {\n  return 0;\n}",
    );
    assert_eq!(
        p.verdict("`parse` at src/latin1.c:2-4"),
        verified("src/latin1.c")
    );
}

#[test]
fn verify_with_missing_root_reports_missing() {
    let root = std::env::temp_dir().join("pitroom-citations-no-such-root");
    let report = verify("src/a.rs:1 and a.rs:2", &root);
    assert_eq!(report.total, 2);
    assert!(report
        .checked
        .iter()
        .all(|c| c.verdict == CitationCheck::Missing));
}

#[test]
fn report_bad_lists_unverified_and_round_trips_through_json() {
    let p = Project::with("src/a.rs", &lines(3));
    let report = p.report("src/a.rs:1, src/a.rs:9, gone.rs:1");
    let bad: Vec<String> = report.bad().map(CheckedCitation::reason).collect();
    assert_eq!(
        bad,
        [
            "src/a.rs:9 — file has 3 lines",
            "gone.rs:1 — no such file in the project"
        ]
    );
    assert_eq!(report.checked[0].reason(), "src/a.rs:1 — ok");
    let json = serde_json::to_string(&report).unwrap();
    assert!(
        json.contains(r#""kind":"out_of_range","lines":3"#),
        "{json}"
    );
    let back: RefReport = serde_json::from_str(&json).unwrap();
    assert_eq!(back, report);
}
