//! Everything the binary prints on stdout (the API commands, `openapi`, `token`, `dev`'s
//! banner) goes through [`line`], because `println!` panics when the reader has gone
//! (`tasklane tasks list --json | head -c 50`): a closed stdout
//! ends the command quietly with status 0, as it does for every Unix tool, since the
//! reader took what it wanted. Any other write failure (a full disk) is an error.

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

fn exit_on(error: std::io::Error) -> ! {
    if error.kind() == ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    // stderr may be gone too: nothing more to do than exit.
    let _ = writeln!(std::io::stderr(), "cannot write to stdout: {error}");
    std::process::exit(UNWRITABLE);
}
