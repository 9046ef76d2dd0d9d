//! `pitroom-fake-openai --script FILE [--port-file FILE] [--scenario NAME] [--workdir DIR] [--log FILE]`:
//! runs the scripted fake chat-completions server (OpenCode, Kilo, Qwen Code) as its own process (see `pitroom_testkit::launcher`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test support: a failed expectation is the test or benchmark failing, with its message"
)]

fn main() -> std::process::ExitCode {
    pitroom_testkit::launcher::main::<pitroom_testkit::fake_openai::FakeOpenAi>(
        "pitroom-fake-openai",
    )
}
