//! Kilo Code (`@kilocode/cli`), configured through the user's own Kilo config file, on the fake
//! chat-completions server with OpenCode's script (Kilo speaks OpenCode's tools). Kilo takes
//! 12–15 s and ~830 MB per start, so each run gets a generous time limit.

use pitroom_testkit::real_cli;

use super::{
    opencode, Checks, ConfigFile, Fixtures, ModelError, Provider, ReadFacts, RealCli, Timing,
    Unproven,
};

/// Kilo is OpenCode's fork: its entry is OpenCode's (the same script, API, refusals, errors,
/// failure matrix and listed model) but for what is Kilo's own below.
pub const CLI: RealCli = RealCli {
    worker: "kilo",
    pinned: real_cli::KILO,
    install: real_cli::kilo,
    provider: Provider {
        config: Some(ConfigFile {
            path: "xdg-config/kilo/kilo.json",
            // No request timeout of the provider's own: a stalled request must outlast Kilo's
            // slow start and the stall limit, so the run ends as a timeout.
            contents: |base_url| opencode::provider_config_with(base_url, None),
        }),
        ..opencode::CLI.provider
    },
    timing: Timing {
        timeout: "120s",
        stall_limit: "30s",
        // As OpenCode's (the `resumable_stall`, `readhang`): a session exists only once the
        // model has answered.
        ..opencode::CLI.timing
    },
    read: ReadFacts {
        // As OpenCode's, from the same script; and Kilo's stream never names the model either:
        // the record reads it from Kilo's session data.
        withheld: &["edit", "write", "task", "webfetch", "background_process"],
        ..opencode::CLI.read
    },
    // Without `retry-after`, Kilo backs off and retries a 429 for over a minute; the engine
    // stops it after two failed attempts (its adapter's cut). The proof is the attempt count,
    // not the wall clock: Kilo's own start takes 12–15 s idle and over a minute loaded.
    rate_limits: &[ModelError::rate_limited("err429slow").saying("kept retrying")],
    checks: Checks::NONE,
    unproven: &[Unproven {
        behaviour: "effort_reaches_the_model_request",
        why: "Kilo, like OpenCode, maps `--effort` to `--variant` only with a pinned model, and the fake provider's models have no variants (docs/workers/kilo.md)",
    }],
    fixtures: Fixtures {
        cases: &[
            ("bash-git-denied", &["-w", "commit scenario:gitdeny"]),
            ("err404", &["x scenario:err404"]),
            ("err429", &["x scenario:err429"]),
            ("err500", &["x scenario:err500"]),
            ("malformed-sse", &["x scenario:malformed"]),
        ],
        first: true,
        timeout: Some("120s"),
        port: false,
        keep_stderr: |l| {
            l.contains("ERROR") || l.starts_with("Error") || l.contains("stream error")
        },
        exit_codes: false,
        prepare: |_| {},
    },
    ..opencode::CLI
};

real_cli_tests!(CLI; every_cli,
    an_interrupted_run_can_be_continued_in_its_session,
    secret_files_stay_unreadable_in_a_write_run,
    models_are_listed_through_the_real_cli,
);

/// Records the real CLI's streams as parser fixtures (run on purpose, not in CI):
/// `cargo test -p pitroom --test all -- --ignored record_kilo_fixtures`.
#[test]
#[ignore = "records fixtures; run by hand when the pinned Kilo changes"]
fn record_kilo_fixtures() {
    super::record_fixtures(&CLI);
}
