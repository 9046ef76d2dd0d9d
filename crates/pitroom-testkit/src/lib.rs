//! Pitroom's test kit: scripted fake model servers, the fake worker binary, hermetic test
//! environments, and the installer of the pinned real worker CLIs for end-to-end tests.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test support: a failed expectation is the test or benchmark failing, with its message"
)]

pub mod env;
pub mod fake_anthropic;
pub mod fake_gemini;
pub mod fake_openai;
pub mod fake_responses;
pub mod launcher;
pub mod real_cli;
pub mod repo;

pub use env::TestEnv;
pub use fake_anthropic::FakeAnthropic;
pub use fake_gemini::FakeGemini;
pub use fake_openai::FakeOpenAi;
pub use fake_responses::FakeResponses;

/// The fake worker binary, built on first use. `cargo test` builds only the binaries of the
/// package under test, so the test kit builds its own with the same cargo, profile and target
/// directory (the path is derived from the running test executable: `target/<profile>/deps/…`).
pub fn fake_worker_bin() -> std::path::PathBuf {
    static BUILT: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let exe = std::env::current_exe().expect("test executable");
            let profile_dir = exe
                .parent()
                .and_then(std::path::Path::parent)
                .expect("target/<profile>/deps");
            let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
            let release = profile_dir.file_name().is_some_and(|n| n == "release");
            let mut cmd = std::process::Command::new(cargo);
            cmd.args([
                "build",
                "--quiet",
                "-p",
                "pitroom-testkit",
                "--bin",
                "pitroom-fake-worker",
            ]);
            if release {
                cmd.arg("--release");
            }
            let target_dir = profile_dir.parent().expect("target dir");
            cmd.env("CARGO_TARGET_DIR", target_dir);
            let status = cmd.status().expect("cargo runs");
            assert!(status.success(), "building pitroom-fake-worker failed");
            profile_dir.join("pitroom-fake-worker")
        })
        .clone()
}
