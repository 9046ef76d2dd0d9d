//! The facts written in two places because two layers need them: the test kit's pinned real
//! CLIs and the adapters' table of facts, held equal here.

use pitroom_testkit::real_cli::{NpmCli, CLAUDE, CODEX, GEMINI, KILO, OPENCODE, QWEN};

#[test]
fn each_pinned_real_cli_is_the_version_and_program_its_adapter_facts_name() {
    let pinned: [(&str, NpmCli); 6] = [
        ("opencode", OPENCODE),
        ("codex", CODEX),
        ("claude", CLAUDE),
        ("gemini", GEMINI),
        ("qwen", QWEN),
        ("kilo", KILO),
    ];
    for (backend, cli) in pinned {
        let facts = pitroom_workers::facts(backend).expect("a known backend");
        assert_eq!(facts.proven, Some(cli.version), "{backend}");
        assert_eq!(facts.program, cli.bin, "{backend}");
    }
    let proven: Vec<&str> = pitroom_workers::CLIS
        .iter()
        .filter(|c| c.is_proven())
        .map(|c| c.backend)
        .collect();
    assert_eq!(proven, pinned.map(|(b, _)| b), "every proven CLI is pinned");
}
