//! The skills and completions as a user gets them from the binary.

use std::path::Path;
use std::process::{Command, Output};

use super::common::{assert_exit, PITROOM};

/// `pitroom completions SHELL`, asserting it exits `code`.
fn completions(shell: &str, code: i32) -> Output {
    let out = Command::new(PITROOM)
        .args(["completions", shell])
        .output()
        .expect("pitroom runs");
    assert_exit(&out, code);
    out
}

#[test]
fn completion_scripts_load_in_bash_and_complete_the_subcommands() {
    let script = completions("bash", 0);
    let dir = tempfile::tempdir().expect("tmp");
    let file = dir.path().join("pitroom.bash");
    std::fs::write(&file, &script.stdout).expect("script");
    let probe = format!(
        "source {} && COMP_WORDS=(pitroom ins) COMP_CWORD=1 && _pitroom pitroom ins pitroom && printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        file.display()
    );
    let out = Command::new("bash")
        .args(["--norc", "-c", &probe])
        .output()
        .expect("bash runs");
    assert_exit(&out, 0);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "install");
}

#[test]
fn an_unknown_shell_is_a_usage_error_naming_the_choices() {
    let out = completions("tcsh", 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bash") && err.contains("zsh") && err.contains("fish"),
        "{err}"
    );
}

#[test]
fn the_plugins_skill_copies_are_the_repositorys_skills() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for entry in std::fs::read_dir(root.join("skills"))
        .expect("skills")
        .flatten()
    {
        let name = entry.file_name();
        let source = std::fs::read(entry.path().join("SKILL.md")).expect("skill");
        let copy = std::fs::read(
            root.join("plugins/pitroom/skills")
                .join(&name)
                .join("SKILL.md"),
        )
        .unwrap_or_default();
        assert_eq!(
            source, copy,
            "{name:?}: run PITROOM_WRITE_PACKAGES=1 cargo test -p pitroom --bin pitroom packages"
        );
    }
}
