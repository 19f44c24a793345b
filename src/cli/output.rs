//! Everything the binary prints on stdout goes through here, because `println!` panics
//! when the reader has gone (`tasklane tasks list --json | head -c 50`). For a command
//! that prints and ends (the API commands, `openapi`, `token`), [`line`] ends it quietly
//! with status 0 on a closed stdout: the reader took what it wanted. Any other write
//! failure (a full disk) is an error. A server's banner (`dev`) goes through [`banner`],
//! which stops printing instead: the server keeps running, and its shutdown (which stops
//! the private PostgreSQL it started) stays ordered.

use std::fmt::Display;
use std::io::{ErrorKind, Write};

/// Exit code when stdout cannot be written for another reason than a closed pipe.
pub const UNWRITABLE: i32 = 4;

/// Writes `text` and a newline to stdout; exits the process when stdout is gone.
pub fn line(text: impl Display) {
    let mut stdout = std::io::stdout().lock();
    if let Err(error) = writeln!(stdout, "{text}").and_then(|()| stdout.flush()) {
        exit_on(error);
    }
}

/// Writes `text` and a newline to stdout if it is still there; a server's banner is not
/// worth stopping the server for.
pub fn banner(text: impl Display) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{text}").and_then(|()| stdout.flush());
}

fn exit_on(error: std::io::Error) -> ! {
    if error.kind() == ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    // stderr may be gone too: nothing more to do than exit.
    let _ = writeln!(std::io::stderr(), "cannot write to stdout: {error}");
    std::process::exit(UNWRITABLE);
}
