//! Turning what goes wrong into one line: clap's usage errors (with the
//! flag's allowed values from its help), and any error message, whatever
//! the user typed into it.

use crate::args::Cli;
use clap::CommandFactory;

/// The command line without the program name, for naming what it asked
/// for in a message (`std::env::args` would panic on a non-UTF-8 argument).
fn lossy_args() -> Vec<String> {
    std::env::args_os().skip(1).map(|a| a.to_string_lossy().into_owned()).collect()
}

/// Joins a flag and a following signed number into `--flag=value`: clap
/// takes a value that starts with `-` only if it looks like digits, so
/// `--u -inf`, `--u -nan` or `--u -.5` would read as an unknown short flag
/// `-i`; joined, the value reaches the flag's own check, which says what is
/// allowed.
pub fn join_signed_values(args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let command = Cli::command();
    let mut out = Vec::with_capacity(args.len());
    let mut args = args.into_iter().peekable();
    while let Some(arg) = args.next() {
        if arg == "--" {
            // What follows is positional, whatever it looks like.
            out.push(arg);
            out.extend(args);
            break;
        }
        let joined = match (arg.to_str(), args.peek().and_then(|v| v.to_str())) {
            (Some(flag), Some(value))
                if value.starts_with('-') && value.parse::<f64>().is_ok() && takes_a_value(&command, flag) =>
            {
                Some(format!("{flag}={value}"))
            }
            _ => None,
        };
        match joined {
            Some(j) => {
                args.next();
                out.push(j.into());
            }
            None => out.push(arg),
        }
    }
    out
}

/// Whether `--long` is a flag of some subcommand that takes a value.
fn takes_a_value(command: &clap::Command, flag: &str) -> bool {
    let Some(long) = flag.strip_prefix("--").filter(|l| !l.is_empty() && !l.contains('=')) else { return false };
    command.get_arguments().any(|a| a.get_long() == Some(long) && a.get_action().takes_values())
        || command.get_subcommands().any(|c| takes_a_value(c, flag))
}

/// clap's error as one line: the problem and what it names (the lines
/// before the usage), or for a missing subcommand the ones there are.
pub fn one_line_usage_error(e: &clap::Error) -> String {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand | ErrorKind::MissingSubcommand) {
        return missing_subcommand(&lossy_args());
    }
    if let Some(msg) = bad_value(e) {
        return msg;
    }
    if let Some(msg) = unknown_flag(e) {
        return msg;
    }
    let rendered = e.render().to_string();
    let words: Vec<&str> = rendered
        .lines()
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .map(|l| l.trim().trim_start_matches("error: "))
        .filter(|l| !l.is_empty())
        .collect();
    if words.is_empty() {
        "invalid arguments".into()
    } else {
        words.join(" ")
    }
}

/// A flag's value that does not parse, in words: what kind of value the
/// flag takes and, from its help, the values allowed (Rust's parse errors
/// say only what went wrong, e.g. "invalid digit found in string").
fn bad_value(e: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue};
    if e.kind() != clap::error::ErrorKind::ValueValidation {
        return None;
    }
    let text = |kind| match e.get(kind) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        _ => None,
    };
    let (flag, value) = (text(ContextKind::InvalidArg)?, text(ContextKind::InvalidValue)?);
    let cause = std::error::Error::source(e).map(|c| c.to_string()).unwrap_or_default();
    let expected = if cause.contains(" is not in ") || cause.contains("too large") || cause.contains("too small") {
        "out of range"
    } else if cause.contains("integer") || cause.contains("digit") {
        "expected a whole number"
    } else if cause.contains("float") {
        "expected a number"
    } else {
        return None;
    };
    let long = flag.trim_start_matches('-').split(' ').next().unwrap_or_default();
    // The first clause of the help names what the flag is and its range.
    let help = flag_help(long)
        .map(|h| h.split("; ").next().unwrap_or_default().to_string())
        .map(|h| format!(" (--{long}: {h})"))
        .unwrap_or_default();
    Some(format!("invalid value '{value}' for '{flag}': {expected}{help}"))
}

/// A flag the subcommand does not take, with the flags it does (or the
/// subcommands it needs first); the old `--workload X` of `run` and
/// `sweep` with what to write now.
fn unknown_flag(e: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue};
    if e.kind() != clap::error::ErrorKind::UnknownArgument {
        return None;
    }
    let Some(ContextValue::String(flag)) = e.get(ContextKind::InvalidArg) else { return None };
    let args = lossy_args();
    let (cmd, path) = named_subcommand(&args);
    let command = path.join(" ");
    if flag == "--workload" || flag.starts_with("--workload=") {
        // The command up to the workload (which the value may have named).
        let command = path.iter().take_while(|w| !WORKLOADS.contains(&w.as_str())).cloned().collect::<Vec<_>>();
        let command = command.join(" ");
        let named = args.iter().position(|a| a.starts_with("--workload")).and_then(|i| match args[i].split_once('=') {
            Some((_, w)) => Some(w.to_string()),
            None => args.get(i + 1).cloned(),
        });
        let workload = named.unwrap_or_else(|| "WORKLOAD".into());
        return Some(format!(
            "unexpected argument '--workload': the workload is a subcommand now; write `{command} {workload} ...` \
             (allowed {})",
            WORKLOADS.join(", ")
        ));
    }
    let subcommands: Vec<&str> = cmd.get_subcommands().map(|c| c.get_name()).filter(|n| *n != "help").collect();
    if !subcommands.is_empty() {
        return Some(format!(
            "unexpected argument '{flag}' for `{command}`: name one of {} first, then its flags",
            subcommands.join(", ")
        ));
    }
    let flags: Vec<String> = cmd
        .get_arguments()
        .filter_map(|a| a.get_long())
        .filter(|l| !matches!(*l, "help" | "version"))
        .map(|l| format!("--{l}"))
        .collect();
    Some(format!("unexpected argument '{flag}' for `{command}`: allowed {}", flags.join(", ")))
}

/// The subcommands of `run` and `sweep`.
const WORKLOADS: [&str; 4] = ["micro", "fetch-add", "splitc", "dsm"];

/// The help line of flag `--long` of the subcommand the command line names.
fn flag_help(long: &str) -> Option<String> {
    let (cmd, _) = named_subcommand(&lossy_args());
    let arg = cmd.get_arguments().find(|a| a.get_long() == Some(long))?;
    Some(arg.get_help()?.to_string())
}

/// The deepest subcommand the command line `args` (without the program
/// name) names, and the words naming it. Flags and values may stand
/// between the words (`sweep --set P=1,2 micro`).
fn named_subcommand(args: &[String]) -> (clap::Command, Vec<String>) {
    let mut cmd = Cli::command();
    let mut path = vec!["finegrain".to_string()];
    for a in args {
        match cmd.find_subcommand(a) {
            Some(sub) => {
                path.push(a.clone());
                cmd = sub.clone();
            }
            None => continue,
        }
    }
    (cmd, path)
}

/// Names the subcommands that the command line `args` (without the program
/// name) stops short of choosing between.
fn missing_subcommand(args: &[String]) -> String {
    let (cmd, path) = named_subcommand(args);
    let names: Vec<&str> = cmd.get_subcommands().map(|c| c.get_name()).filter(|n| *n != "help").collect();
    format!("`{}` needs a subcommand: one of {}", path.join(" "), names.join(", "))
}

/// A message on one line whatever the user typed: values and paths are
/// echoed back, and a newline (or a Unicode line or paragraph separator) in
/// one would split the error. A message longer than [`ERROR_CHARS`] loses
/// its middle, which only a huge echoed value makes that long, so what is
/// wrong (the start) and what is allowed (the end) both stay.
pub fn one_line(msg: &str) -> String {
    let mut out = String::with_capacity(msg.len().min(4 * ERROR_CHARS));
    let chars = msg.chars().count();
    let (head, tail) = if chars > ERROR_CHARS { (ERROR_CHARS / 2, ERROR_CHARS / 2) } else { (chars, 0) };
    for (i, c) in msg.chars().enumerate() {
        if i == head && tail > 0 {
            out.push_str(&format!(" [... {} characters left out ...] ", chars - head - tail));
        }
        if i >= head && i < chars - tail {
            continue;
        }
        if c.is_control() || c == '\u{2028}' || c == '\u{2029}' {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// Most characters of an error message shown whole; the longest the
/// program writes itself are a few hundred.
const ERROR_CHARS: usize = 1000;

/// Whether `e` comes from writing into a pipe whose reader has gone.
pub fn closed_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe))
}
