//! The demo's stages, in order: each prints a header that says the worker is scripted, then
//! runs the real commands with the script for that stage.

use std::path::PathBuf;

use super::scripts::{self, CREW_TASKS};
use super::worker::Script;
use super::{write, Demo, LIMIT, MODEL, WATCH_LIMIT};

/// How many stages there are, for the "stage n/N" headers.
const STAGES: usize = 6;
/// What every header says about the worker.
const WORKER: &str = "worker: scripted, not a model";
/// The review stage's header: its reviewer is the same scripted stand-in.
const REVIEWER: &str = "worker and reviewer: scripted, not a model";

impl Demo {
    pub(super) fn stages(&mut self) -> Result<(), String> {
        let dir = self.project.display().to_string();
        let target = ["-W", "opencode", "-m", MODEL, "-d", dir.as_str()];
        self.read(&target)?;
        let isolated = self.isolate(&target)?;
        self.review_and_apply(&isolated)?;
        self.write_and_revert(&target)?;
        self.crew(&target)?;
        // `watch` ends when the crew's records are final; their supervisors then still write
        // the ledger rows that `savings` reads (and writes, importing), so let them finish.
        self.wait_for_supervisors(WATCH_LIMIT);

        self.header(
            6,
            "savings",
            "what the runs above would have saved, from their scripted token counts",
        );
        self.pitroom(&["savings"], None, LIMIT)?;
        Ok(())
    }

    fn read(&mut self, target: &[&str]) -> Result<(), String> {
        self.header(
            1,
            "read",
            "the answer cites calc.py twice; one citation is wrong, and Pitroom checks every path:line",
        );
        let script = self.script("1-read", Script::Actions(scripts::read_script()))?;
        self.pitroom(
            &[target, &["Where can divide fail?"]].concat(),
            Some(&script),
            LIMIT,
        )?;
        let script = self.script("1-follow-up", Script::Actions(scripts::follow_up_script()))?;
        self.pitroom(
            &[
                "run",
                "--continue",
                "last",
                "Does mean() fail the same way?",
            ],
            Some(&script),
            LIMIT,
        )
    }

    /// The isolated edit; returns its run id, which the review and `apply` name (after the
    /// review, `last` is the review run).
    fn isolate(&mut self, target: &[&str]) -> Result<String, String> {
        self.header(
            2,
            "isolate",
            "the worker edits a private copy; its patch holds only its own edit, not your README.md",
        );
        let script = self.script("2-isolate", Script::Actions(scripts::isolate_script()))?;
        self.pitroom(
            &[&["-i"], target, &["Add a zero check to divide()"]].concat(),
            Some(&script),
            LIMIT,
        )?;
        let id = self.latest_run()?;
        self.pitroom(&["show", "--patch"], None, LIMIT)?;
        Ok(id)
    }

    fn review_and_apply(&mut self, isolated: &str) -> Result<(), String> {
        self.header_for(
            3,
            "review + apply",
            REVIEWER,
            "a second run reviews the isolated change from a package (brief, report, diff); its verdict says whether to apply",
        );
        let script = self.script("3-review", Script::Actions(scripts::review_script()))?;
        let reviewer = format!("opencode:{MODEL}");
        self.pitroom(
            &["review", isolated, "-W", reviewer.as_str()],
            Some(&script),
            LIMIT,
        )?;
        self.pitroom(&["apply", isolated], None, LIMIT)
    }

    fn write_and_revert(&mut self, target: &[&str]) -> Result<(), String> {
        self.header(
            4,
            "write + revert",
            "the worker edits the project in place; revert undoes exactly its edits",
        );
        let script = self.script("4-write", Script::Actions(scripts::write_script()))?;
        self.pitroom(
            &[&["-w"], target, &["Add a docstring to divide()"]].concat(),
            Some(&script),
            LIMIT,
        )?;
        self.pitroom(&["revert"], None, LIMIT)
    }

    fn crew(&mut self, target: &[&str]) -> Result<(), String> {
        self.header(
            5,
            "crew + watch",
            "three read runs in the background as group demo, followed as NDJSON",
        );
        let script = self.script("5-crew", scripts::crew_script())?;
        let mut crew = vec!["crew", "-g", "demo"];
        crew.extend(target);
        crew.extend(CREW_TASKS.iter().map(|(task, _)| *task));
        self.pitroom(&crew, Some(&script), LIMIT)?;
        self.pitroom(
            &["watch", "-g", "demo", "--json", "--timeout", "60"],
            None,
            WATCH_LIMIT,
        )
    }

    fn header(&mut self, n: usize, name: &str, about: &str) {
        self.header_for(n, name, WORKER, about);
    }

    fn header_for(&mut self, n: usize, name: &str, who: &str, about: &str) {
        self.stage = format!("stage {n}/{STAGES} ({name})");
        say!();
        say!("▶ stage {n}/{STAGES} · {name} · {who}");
        say!("  {about}");
    }

    /// The newest run in the demo's state dir.
    fn latest_run(&self) -> Result<String, String> {
        self.home().run_ids().pop().ok_or_else(|| {
            format!(
                "{}: the run left no record in {}",
                self.stage,
                self.state.display()
            )
        })
    }

    /// Writes a script for the worker and returns its path.
    fn script(&self, name: &str, script: Script) -> Result<PathBuf, String> {
        let path = self.scripts.join(format!("{name}.json"));
        let text = serde_json::to_string_pretty(&script)
            .map_err(|e| format!("could not encode the {name} script: {e}"))?;
        write(&path, &text)?;
        Ok(path)
    }
}
