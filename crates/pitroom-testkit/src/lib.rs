//! Pitroom's test kit: scripted fake model servers, the fake worker binary, hermetic test
//! environments, and the installer of the pinned real worker CLIs for end-to-end tests.

pub mod env;
pub mod fake_openai;
pub mod real_cli;
pub mod repo;

pub use env::TestEnv;
pub use fake_openai::FakeOpenAi;
