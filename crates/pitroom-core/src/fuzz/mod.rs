//! Fuzzing the engine's parsers of untrusted text (issue 16, item 7), as property tests: the
//! citation scanner over answers, the redactor over anything a worker prints, the config loader
//! over any file, environment and flags. Cases default to a few hundred per property so
//! `cargo test` stays quick; `PROPTEST_CASES` raises them (`.ci/run` does).

use proptest::test_runner::Config as ProptestConfig;

mod citations;
mod config;
mod redact;

/// `cases` unless `PROPTEST_CASES` says otherwise.
fn config(cases: u32) -> ProptestConfig {
    let mut config = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = cases;
    }
    config
}
