//! `tasklane tasks ...` and `tasklane admin ...`: the HTTP API from a terminal, for
//! people (tables) and scripts (`--json`, exit codes). They speak only HTTP, so they work
//! against any deployment a token can reach.
//!
//! Exit codes: 0 done (also when the reader of stdout closed it early: `| head`); 1 the
//! API refused (a 4xx: the problem's stable code is printed on stderr; for a batch
//! submit, any item refused); 2 a usage error (clap's, a missing token, an `--input`
//! or batch line that is not JSON, an unreadable file: nothing was sent); 3 the API
//! could not be reached or failed (a 5xx); 4 stdout could not be written.
//!
//! | variable | flag | default |
//! |---|---|---|
//! | `TASKLANE_URL` | `--url` | `http://127.0.0.1:8080` |
//! | `TASKLANE_TOKEN` | `--token` | none (required) |

mod admin;
mod client;
pub mod output;
mod submit;
mod table;
mod tasks;

pub use admin::AdminCommand;
pub use client::{Endpoint, Failure};
pub use tasks::TasksCommand;

/// A CLI command's outcome as the process's exit code (a failure is printed first).
pub fn exit_code(result: Result<(), Failure>) -> i32 {
    match result {
        Ok(()) => 0,
        Err(failure) => {
            eprintln!("{failure}");
            failure.exit_code()
        }
    }
}
