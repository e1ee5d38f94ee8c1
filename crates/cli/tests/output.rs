//! Output that cannot be written is a one-line error; output closed early
//! ends the program quietly.

use std::process::Command;

/// Output that cannot be written (a full disk) is the command's one-line
/// error, not a panic; help text included, since it is the output.
#[test]
#[cfg(target_os = "linux")] // /proc/sys and /dev/full
fn output_that_cannot_be_written_is_a_one_line_error() {
    for args in [&["run", "micro", "--requests-per-node", "5"][..], &["reproduce", "--list"], &["--help"]] {
        let out = Command::new(env!("CARGO_BIN_EXE_finegrain"))
            .args(args)
            .stdout(std::fs::File::create("/dev/full").unwrap())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end(), "error: writing standard output: No space left on device (os error 28)", "{args:?}");
    }
}

/// Output piped into a command that stops reading ends the program
/// quietly, with the status a shell gives SIGPIPE.
#[test]
fn output_closed_early_ends_quietly() {
    // The reader is gone before the program starts, so its first write
    // meets a closed pipe whatever the timing.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_finegrain"))
        .args(["reproduce", "--list"])
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(141), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
}
