//! The facts written in two places because two layers need them: the test kit's pinned real
//! CLIs and the adapters' table of facts, held equal here.

use super::real_cli::TABLE;

#[test]
fn each_pinned_real_cli_is_the_version_and_program_its_adapter_facts_name() {
    for (cli, _) in TABLE {
        let facts = pitroom_workers::facts(cli.worker).expect("a known backend");
        assert_eq!(facts.proven, Some(cli.pinned.version), "{}", cli.worker);
        assert_eq!(facts.program, cli.pinned.bin, "{}", cli.worker);
    }
    let proven: Vec<&str> = pitroom_workers::CLIS
        .iter()
        .filter(|c| c.is_proven())
        .map(|c| c.backend)
        .collect();
    assert_eq!(
        proven,
        TABLE.map(|(cli, _)| cli.worker),
        "every proven CLI is pinned and has its real-CLI suite"
    );
}
