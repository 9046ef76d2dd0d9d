//! `pitroom completions bash|zsh|fish`: the shell completion script, generated from the same
//! clap definition the CLI parses with, so it never lists a flag that does not exist.

use clap::{Args, CommandFactory, ValueEnum};

use crate::cli::Cli;

#[derive(Debug, Args)]
pub(crate) struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: Shell,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Shell {
    Bash,
    Zsh,
    Fish,
}

impl Shell {
    fn generator(self) -> clap_complete::Shell {
        match self {
            Shell::Bash => clap_complete::Shell::Bash,
            Shell::Zsh => clap_complete::Shell::Zsh,
            Shell::Fish => clap_complete::Shell::Fish,
        }
    }
}

/// The CLI without its internal subcommands: clap_complete's bash generator offers hidden
/// ones too, and `__supervise` is no user's business.
fn visible_command() -> clap::Command {
    let full = Cli::command();
    let visible: Vec<clap::Command> = full
        .get_subcommands()
        .filter(|c| !c.is_hide_set())
        .cloned()
        .collect();
    let mut command = clap::Command::new("pitroom")
        .version(env!("CARGO_PKG_VERSION"))
        .subcommands(visible);
    if let Some(about) = full.get_about() {
        command = command.about(about.clone());
    }
    command
}

pub(crate) fn completions(args: CompletionsArgs) -> i32 {
    let mut command = visible_command();
    clap_complete::generate(
        args.shell.generator(),
        &mut command,
        "pitroom",
        &mut std::io::stdout(),
    );
    pitroom_core::exit::OK
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script(shell: Shell) -> String {
        let mut out = Vec::new();
        clap_complete::generate(
            shell.generator(),
            &mut visible_command(),
            "pitroom",
            &mut out,
        );
        String::from_utf8(out).expect("utf-8")
    }

    #[test]
    fn every_shell_script_completes_the_commands_and_hides_the_internal_ones() {
        for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
            let text = script(shell);
            for word in ["crew", "apply", "statusline", "isolate", "allow-delete"] {
                assert!(text.contains(word), "{shell:?} lacks {word}");
            }
            assert!(!text.contains("__supervise"), "{shell:?} lists __supervise");
        }
    }
}
