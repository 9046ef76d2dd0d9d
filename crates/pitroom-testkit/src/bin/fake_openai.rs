//! `pitroom-fake-openai --script FILE [--port-file FILE] [--scenario NAME] [--workdir DIR] [--log FILE]`:
//! runs the scripted fake chat-completions server (OpenCode, Kilo, Qwen Code) as its own process (see `pitroom_testkit::launcher`).

fn main() -> std::process::ExitCode {
    pitroom_testkit::launcher::main::<pitroom_testkit::fake_openai::FakeOpenAi>(
        "pitroom-fake-openai",
    )
}
