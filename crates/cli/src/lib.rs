//! The `finegrain` command line, as a library: its arguments, what each
//! command does. `main.rs` only parses arguments and
//! calls in here; studies, sweeps, records and reruns live in
//! `finegrain-study`.

#![forbid(unsafe_code)]

pub mod args;
pub mod commands;
pub mod usage;

/// Writes one line to standard output, as `println!` does, but returns an
/// error when the line cannot be written (a full disk, a closed file)
/// instead of panicking. Use it through [`say!`].
pub fn stdout_line(args: std::fmt::Arguments) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_fmt(args)
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush())
        // The I/O error stays in the chain: `main` tells a closed pipe
        // from other failures by it.
        .map_err(|e| anyhow::Error::new(e).context("writing standard output"))
}

/// Writes text that ends its own lines (a report) to standard output, with
/// the errors of [`stdout_line`].
pub fn stdout_text(args: std::fmt::Arguments) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_fmt(args).and_then(|()| out.flush()).map_err(|e| anyhow::Error::new(e).context("writing standard output"))
}

/// `println!` for the command line: a failed write becomes the command's
/// error (`?` in the enclosing function), not a panic.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::stdout_line(format_args!($($arg)*))?
    };
}

/// A note on standard error for the user (a peer that is unavailable, a
/// run that is oversubscribed). It changes no result, so if standard error
/// cannot be written the note is dropped rather than the command failed.
pub fn note(args: std::fmt::Arguments) {
    use std::io::Write;
    // One write, so notes of node processes sharing a pipe never
    // interleave (see `main`'s error line).
    let _ = std::io::stderr().lock().write_all(format!("note: {args}\n").as_bytes());
}
