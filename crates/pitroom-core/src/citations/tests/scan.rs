//! Finding citations in answers (pure, no I/O).

use super::*;

type Expected<'a> = (&'a str, u32, u32, Option<&'a str>);

fn found(answer: &str) -> Vec<(String, u32, u32, Option<String>)> {
    find_citations(answer)
        .into_iter()
        .map(|c| (c.path, c.start, c.end, c.symbol))
        .collect()
}

/// Found by fuzzing: the second path reached back over the first reference's line range,
/// giving overlapping references and the path `0-L0./src/a.rs`.
#[test]
fn a_path_never_reaches_back_into_the_reference_before_it() {
    assert_eq!(
        found("src/a.rs:0-L0./src/a.rs:00"),
        vec![
            ("src/a.rs".to_string(), 0, 0, None),
            ("./src/a.rs".to_string(), 0, 0, None)
        ]
    );
}

#[test]
fn find_citations_table() {
    let cases: Vec<(&str, Vec<Expected>)> = vec![
        // Plain forms.
        ("see src/a.rs:12", vec![("src/a.rs", 12, 12, None)]),
        ("src/a.rs:12-20", vec![("src/a.rs", 12, 20, None)]),
        ("src/a.rs:12–20", vec![("src/a.rs", 12, 20, None)]),
        (
            "in /abs/project/src/a.rs:12",
            vec![("/abs/project/src/a.rs", 12, 12, None)],
        ),
        ("./src/a.rs:3", vec![("./src/a.rs", 3, 3, None)]),
        ("../lib/b.py:7", vec![("../lib/b.py", 7, 7, None)]),
        ("ipc.ts:218", vec![("ipc.ts", 218, 218, None)]),
        (
            "auth/session.ts:40",
            vec![("auth/session.ts", 40, 40, None)],
        ),
        ("Makefile:3", vec![("Makefile", 3, 3, None)]),
        ("Dockerfile:10", vec![("Dockerfile", 10, 10, None)]),
        (
            "Containerfile:2 and Justfile:7",
            vec![("Containerfile", 2, 2, None), ("Justfile", 7, 7, None)],
        ),
        ("LICENSE:1", vec![("LICENSE", 1, 1, None)]),
        ("Dockerfile.dev:4", vec![("Dockerfile.dev", 4, 4, None)]),
        ("CMakeLists.txt:9", vec![("CMakeLists.txt", 9, 9, None)]),
        (".env:2", vec![(".env", 2, 2, None)]),
        (
            ".github/workflows/ci.yml:10",
            vec![(".github/workflows/ci.yml", 10, 10, None)],
        ),
        ("go.mod:3", vec![("go.mod", 3, 3, None)]),
        ("src/foo.test.ts:8", vec![("src/foo.test.ts", 8, 8, None)]),
        ("lib/tool:7", vec![("lib/tool", 7, 7, None)]),
        ("+page.svelte:3", vec![("+page.svelte", 3, 3, None)]),
        (
            "@/components/Button.vue:12",
            vec![("@/components/Button.vue", 12, 12, None)],
        ),
        (
            "node_modules/@scope/pkg/index.js:1",
            vec![("node_modules/@scope/pkg/index.js", 1, 1, None)],
        ),
        ("src/a.rs:0", vec![("src/a.rs", 0, 0, None)]),
        ("src/a.rs:20-10", vec![("src/a.rs", 20, 10, None)]),
        // `#L` forms, line:column.
        ("src/a.rs#L12", vec![("src/a.rs", 12, 12, None)]),
        ("src/a.rs#L12-L20", vec![("src/a.rs", 12, 20, None)]),
        ("src/a.rs#L12-20", vec![("src/a.rs", 12, 20, None)]),
        ("src/a.rs#L5C3-L9C1", vec![("src/a.rs", 5, 9, None)]),
        ("src/a.rs:L12-L14", vec![("src/a.rs", 12, 14, None)]),
        ("src/main.rs:12:5", vec![("src/main.rs", 12, 12, None)]),
        ("src/main.rs:12:5-14:2", vec![("src/main.rs", 12, 14, None)]),
        ("requires Node.js:20 or newer", vec![]),
        ("--> src/main.rs:2:9", vec![("src/main.rs", 2, 2, None)]),
        ("at Foo.bar(Foo.java:42)", vec![("Foo.java", 42, 42, None)]),
        // Wrapping and punctuation.
        ("`src/a.rs:12`", vec![("src/a.rs", 12, 12, None)]),
        ("(src/a.rs:12)", vec![("src/a.rs", 12, 12, None)]),
        ("[src/a.rs:12]", vec![("src/a.rs", 12, 12, None)]),
        ("<src/a.rs:12>", vec![("src/a.rs", 12, 12, None)]),
        ("**src/a.rs:12**", vec![("src/a.rs", 12, 12, None)]),
        (
            "'src/a.rs:12' and \"b.go:3\"",
            vec![("src/a.rs", 12, 12, None), ("b.go", 3, 3, None)],
        ),
        ("src/a.rs:12, then", vec![("src/a.rs", 12, 12, None)]),
        ("ends at src/a.rs:12.", vec![("src/a.rs", 12, 12, None)]),
        ("src/a.rs:12; more", vec![("src/a.rs", 12, 12, None)]),
        (
            "see src/a.rs:12: the loop",
            vec![("src/a.rs", 12, 12, None)],
        ),
        ("src/a.rs:12-20:", vec![("src/a.rs", 12, 20, None)]),
        ("| src/a.rs:3 | ok |", vec![("src/a.rs", 3, 3, None)]),
        // Markdown links.
        (
            "[the parser](src/parse.rs:40-52)",
            vec![("src/parse.rs", 40, 52, None)],
        ),
        (
            "[a.rs:3](src/a.rs#L3)",
            vec![("a.rs", 3, 3, None), ("src/a.rs", 3, 3, None)],
        ),
        // Several per line.
        (
            "See a.rs:1, b.rs:2 and c.rs:3-4.",
            vec![
                ("a.rs", 1, 1, None),
                ("b.rs", 2, 2, None),
                ("c.rs", 3, 4, None),
            ],
        ),
        (
            "C++: src/x.cpp:7, header include/x.hpp:2",
            vec![("src/x.cpp", 7, 7, None), ("include/x.hpp", 2, 2, None)],
        ),
        (
            "Schema.parse:432 and src/schema.ts:10",
            vec![("src/schema.ts", 10, 10, None)],
        ),
        // Not references.
        ("Schema.parse:432", vec![]),
        ("foo.bar:12", vec![]),
        ("process.env:3", vec![]),
        ("localhost:3000", vec![]),
        ("http://localhost:3000/api", vec![]),
        ("127.0.0.1:8080", vec![]),
        ("example.com:443", vec![]),
        ("user@example.com:22", vec![]),
        ("example.com/src/a.rs:3", vec![]),
        ("https://x.y/a.rs:3", vec![]),
        ("https://github.com/o/r/blob/main/src/a.rs#L12", vec![]),
        ("file:///home/x/a.rs:3", vec![]),
        ("v1.2.3:4", vec![]),
        ("1.2.3:4", vec![]),
        ("12:30", vec![]),
        ("at 10:30:00, or 12:30pm", vec![]),
        ("a ratio of 16:9 or 3:1 or 1/2:3", vec![]),
        ("std::fmt::Display:3", vec![]),
        ("port:8080 and \"key\": 12", vec![]),
        ("a.rs:12.5", vec![]),
        ("a.rs:12abc", vec![]),
        ("src/a.rs:1234567890", vec![]),
        ("src/a.rs:", vec![]),
        ("src/:12", vec![]),
        ("e.g. `x` in a.rs", vec![]),
        // Identifiers cited next to a reference.
        (
            "`parse_config` at src/config.rs:40",
            vec![("src/config.rs", 40, 40, Some("parse_config"))],
        ),
        (
            "src/config.rs:40 (`parse_config`)",
            vec![("src/config.rs", 40, 40, Some("parse_config"))],
        ),
        (
            "the `Session::new` function in session.rs:12-30",
            vec![("session.rs", 12, 30, Some("Session::new"))],
        ),
        (
            "src/a.rs:1 (`foo`), src/b.rs:2 (`bar`)",
            vec![
                ("src/a.rs", 1, 1, Some("foo")),
                ("src/b.rs", 2, 2, Some("bar")),
            ],
        ),
        (
            "src/a.rs:1 calls `helper` in src/b.rs:9",
            vec![("src/a.rs", 1, 1, None), ("src/b.rs", 9, 9, Some("helper"))],
        ),
        (
            "See src/a.rs:3. `foo` is unrelated.",
            vec![("src/a.rs", 3, 3, None)],
        ),
        (
            "src/a.rs:3\n`foo` on the next line",
            vec![("src/a.rs", 3, 3, None)],
        ),
        (
            "parse_config at src/config.rs:40",
            vec![("src/config.rs", 40, 40, None)],
        ),
        (
            "`config.rs` line src/config.rs:4",
            vec![("src/config.rs", 4, 4, None)],
        ),
        (
            "`parse_config()` at src/config.rs:40",
            vec![("src/config.rs", 40, 40, Some("parse_config"))],
        ),
        (
            "the `fn load_config` at config.rs:3",
            vec![("config.rs", 3, 3, Some("load_config"))],
        ),
        (
            "`foo` and `bar` in src/a.rs:3",
            vec![("src/a.rs", 3, 3, Some("bar"))],
        ),
        (
            "crates/x/src/lib.rs:10-12 (`Config::load`)",
            vec![("crates/x/src/lib.rs", 10, 12, Some("Config::load"))],
        ),
        ("src/a.rs:12 `foo`", vec![("src/a.rs", 12, 12, Some("foo"))]),
        (
            "**`run`** in engine.rs:3",
            vec![("engine.rs", 3, 3, Some("run"))],
        ),
        (
            "[`handler`](src/api.ts#L8)",
            vec![("src/api.ts", 8, 8, Some("handler"))],
        ),
        (
            "`self.store.get` at `store.py:19`",
            vec![("store.py", 19, 19, Some("self.store.get"))],
        ),
        (
            "src/a.rs:3 is where the config loader eventually ends up calling `foo`",
            vec![("src/a.rs", 3, 3, None)],
        ),
        ("`let x = 1` at src/a.rs:3", vec![("src/a.rs", 3, 3, None)]),
        ("`a < b` at src/a.rs:3", vec![("src/a.rs", 3, 3, None)]),
        (
            "`Vec<T>::push` at src/a.rs:3",
            vec![("src/a.rs", 3, 3, Some("Vec::push"))],
        ),
    ];
    assert!(cases.len() >= 60, "only {} cases", cases.len());
    let mut failures = Vec::new();
    for (input, expected) in &cases {
        let expected: Vec<(String, u32, u32, Option<String>)> = expected
            .iter()
            .map(|(p, s, e, sym)| (p.to_string(), *s, *e, sym.map(str::to_string)))
            .collect();
        let got = found(input);
        if got != expected {
            failures.push(format!(
                "{input:?}\n   expected {expected:?}\n   got      {got:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn find_citations_keeps_text_as_written() {
    let c = find_citations("at `src/main.rs:12:5`, and (lib.rs#L3-L4).");
    let texts: Vec<&str> = c.iter().map(|c| c.text.as_str()).collect();
    assert_eq!(texts, ["src/main.rs:12:5", "lib.rs#L3-L4"]);
}

#[test]
fn find_citations_never_panics_on_odd_input() {
    let odd = [
        "",
        ":",
        "#",
        "#L",
        ":1",
        "a:",
        "`",
        "``",
        "```",
        "````a.rs:1",
        "`a` `",
        "é.rs:1 ü/ß.py:2-3 日本.ts#L4",
        "a.rs:99999999999999999999",
        "a.rs:4294967295",
        "\u{0}\u{ffff}:1",
        "/:1 //:2 ./:3 ../:4 ~:5 @:6",
        "a.rs:1-\n`x` at b.rs#L",
        "(((([[[[a.rs:1]]]]))))",
    ];
    for input in odd {
        let _ = find_citations(input);
        let _ = verify(input, Path::new("/nonexistent/pitroom/root"));
    }
    let big = "src/a.rs:1 `x` ".repeat(2000);
    assert_eq!(find_citations(&big).len(), 2000);
}
