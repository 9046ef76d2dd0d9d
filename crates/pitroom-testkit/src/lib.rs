//! Pitroom's test kit: scripted fake model servers, hermetic test environments, and the installer
//! of the pinned real worker CLIs for end-to-end tests. (The fake worker binary is a `test-fakes`
//! binary of the `pitroom` package, whose suite uses it.)

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
mod http;
pub mod launcher;
pub mod real_cli;
pub mod repo;
mod script;

pub use env::TestEnv;
pub use fake_anthropic::FakeAnthropic;
pub use fake_gemini::FakeGemini;
pub use fake_openai::FakeOpenAi;
pub use fake_responses::FakeResponses;
