//! `pitroom-fake-anthropic --script FILE [--port-file FILE] [--scenario NAME] [--workdir DIR] [--log FILE]`:
//! runs the scripted fake Anthropic Messages API server (Claude Code) as its own process (see `pitroom_testkit::launcher`).

fn main() -> std::process::ExitCode {
    pitroom_testkit::launcher::main::<pitroom_testkit::fake_anthropic::FakeAnthropic>(
        "pitroom-fake-anthropic",
    )
}
