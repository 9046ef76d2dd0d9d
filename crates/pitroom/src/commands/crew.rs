//! `pitroom crew`: several background runs started as one group.

use pitroom_core::{exit, RunRecord};
use serde_json::json;

use crate::cli::{CrewArgs, RunArgs};
use crate::output;

pub fn crew(args: CrewArgs) -> i32 {
    let tasks = match read_tasks(&args) {
        Ok(t) => t,
        Err(code) => return code,
    };
    if args.write && tasks.len() > 1 {
        output::error(format!(
            "a crew of {} write runs would edit one tree at once; use -i (each run edits its own copy) or a single task",
            tasks.len()
        ));
        return exit::USAGE;
    }
    let group = args.group.clone().unwrap_or_else(default_group_name);
    if let Err(why) = pitroom_core::home::check_group_name(&group) {
        output::error(why);
        return exit::USAGE;
    }
    let engine = match super::run::engine() {
        Ok(e) => e,
        Err(code) => return code,
    };
    let mut started: Vec<RunRecord> = Vec::new();
    for task in tasks {
        let spec = match super::run::build_spec(&run_args(&args, task, &group)) {
            Ok(s) => s,
            Err(code) => return report_partial(&started, &group, code),
        };
        let prepared = match engine.prepare(spec) {
            Ok(p) => p,
            Err(e) => {
                output::error(&e);
                return report_partial(&started, &group, e.exit_code());
            }
        };
        for w in &prepared.record.warnings {
            output::warning(w);
        }
        match engine.spawn_background(prepared) {
            Ok(record) => started.push(record),
            Err(e) => {
                output::error(&e);
                return report_partial(&started, &group, e.exit_code());
            }
        }
    }
    print_group(&started, &group, args.json);
    exit::OK
}

/// The tasks from the arguments, or from a file split by `---` lines.
fn read_tasks(args: &CrewArgs) -> Result<Vec<String>, i32> {
    let tasks = match &args.task_file {
        Some(file) => {
            let text = std::fs::read_to_string(file).map_err(|e| {
                output::error(format!("--task-file {}: {e}", file.display()));
                exit::USAGE
            })?;
            split_tasks(&text)
        }
        None => args
            .tasks
            .iter()
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())
            .collect(),
    };
    if tasks.is_empty() {
        output::error(
            "no tasks; give each as an argument, or --task-file with tasks separated by --- lines",
        );
        return Err(exit::USAGE);
    }
    Ok(tasks)
}

/// Splits a task file on lines that are exactly `---` (surrounding blanks allowed).
pub fn split_tasks(text: &str) -> Vec<String> {
    let mut tasks = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        if line.trim() == "---" {
            tasks.push(std::mem::take(&mut current));
        } else {
            current.push_str(line);
            current.push('\n');
        }
    }
    tasks.push(current);
    tasks
        .into_iter()
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
        .collect()
}

fn default_group_name() -> String {
    let now = jiff::Timestamp::now();
    format!(
        "crew-{}-{:03}",
        now.strftime("%Y%m%d-%H%M%S"),
        now.subsec_millisecond()
    )
}

/// One background run's arguments, as `pitroom run --bg -g GROUP "task"` would give them.
fn run_args(args: &CrewArgs, task: String, group: &str) -> RunArgs {
    RunArgs {
        task: vec![task],
        task_file: None,
        read: args.read,
        write: args.write,
        isolate: args.isolate,
        worker: args.worker.clone(),
        model: args.model.clone(),
        tier: args.tier.clone(),
        effort: args.effort.clone(),
        dir: args.dir.clone(),
        timeout: args.timeout.clone(),
        web: args.web,
        bg: true,
        continue_run: None,
        allow_non_git: args.allow_non_git,
        group: Some(group.to_string()),
        link: args.link.clone(),
        verify: args.verify.clone(),
        no_fallback: args.no_fallback,
        json: args.json,
    }
}

fn print_group(started: &[RunRecord], group: &str, json: bool) {
    if json {
        output::json(&json!({
            "group": group,
            "runs": started.iter().map(|r| json!({"run": r.id, "task": r.spec.task})).collect::<Vec<_>>(),
        }));
        return;
    }
    for r in started {
        println!("{}", r.id);
    }
    eprintln!(
        "pitroom: started {} run(s) in group {group}; follow them with: pitroom watch -g {group}   (or: pitroom wait -g {group})",
        started.len()
    );
}

/// A crew that failed part-way: the runs already started go on; say which.
fn report_partial(started: &[RunRecord], group: &str, code: i32) -> i32 {
    if !started.is_empty() {
        eprintln!(
            "pitroom: {} run(s) of group {group} were started before the error and go on: {}",
            started.len(),
            started
                .iter()
                .map(|r| r.id.as_str())
                .collect::<Vec<_>>()
                .join(" ")
        );
    }
    code
}

#[cfg(test)]
mod tests {
    use super::split_tasks;

    #[test]
    fn task_files_split_on_dash_lines_only() {
        let text =
            "find the cookie reader\n---\nlist the --- flags\nin main.rs\n  ---  \n\n---\nlast one";
        assert_eq!(
            split_tasks(text),
            [
                "find the cookie reader",
                "list the --- flags\nin main.rs",
                "last one"
            ]
        );
    }

    #[test]
    fn a_file_without_separators_is_one_task() {
        assert_eq!(split_tasks("one\ntask\n"), ["one\ntask"]);
    }
}
