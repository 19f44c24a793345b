//! The one place that decides whether a failed statement means "this connection, or its
//! server, is lost: drop it and run the statement again on a fresh one".
//!
//! Two kinds, told apart because only one is always safe to run again:
//!
//! - [`Lost::Refused`]: the server answered with an error that says nothing was done,
//!   and the statement's transaction was rolled back. Running it again cannot apply it
//!   twice. The SQLSTATEs, and why each is a connection's failure and not the
//!   statement's:
//!   - `25006` read_only_sql_transaction: the server is a standby or was made
//!     read-only (the old primary during a switchover, a misrouted connection). The
//!     pool's other connections went to the same server, so all are dropped.
//!   - `57P01` admin_shutdown, `57P02` crash_shutdown: the server is stopping or its
//!     backend was terminated; the transaction did not commit.
//!   - `57P03` cannot_connect_now: the server is starting or in recovery.
//!   - `53300` too_many_connections: no session was made at all.
//!   - class `08` connection_exception, when the server itself reports it.
//! - [`Lost::Unanswered`]: the connection broke before an answer came (a reset, the
//!   server killed, the answer watchdog): the statement may or may not have committed.
//!   Only statements whose fence makes a second run harmless are run again: a submit
//!   (its key finds the first run's task), a lease's heartbeat and an attempt's
//!   settlement (the lease token refuses a second settlement; the first one stands).

use tokio_postgres::error::SqlState;

/// How a connection failed a statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lost {
    /// The server refused before doing anything.
    Refused,
    /// No answer came: the statement's effect is unknown.
    Unanswered,
}

/// Whether `error` means the connection is lost, and how.
pub fn lost(error: &tokio_postgres::Error) -> Option<Lost> {
    match error.code() {
        Some(code) => refused(code).then_some(Lost::Refused),
        // No SQLSTATE: the client's side failed (closed, I/O, a timeout), not a
        // statement the server judged.
        None if error.is_closed() || error.as_db_error().is_none() && is_io(error) => {
            Some(Lost::Unanswered)
        }
        None => None,
    }
}

/// Whether `code` is one of the refusals above.
pub fn refused(code: &SqlState) -> bool {
    [
        SqlState::READ_ONLY_SQL_TRANSACTION,
        SqlState::ADMIN_SHUTDOWN,
        SqlState::CRASH_SHUTDOWN,
        SqlState::CANNOT_CONNECT_NOW,
        SqlState::TOO_MANY_CONNECTIONS,
    ]
    .contains(code)
        || code.code().starts_with("08")
}

/// Whether the server that refused is the wrong one for every connection made to it
/// (not only this one): a read-only server.
pub fn wrong_server(error: &tokio_postgres::Error) -> bool {
    error.code() == Some(&SqlState::READ_ONLY_SQL_TRANSACTION)
}

/// Whether a failure to connect may pass by itself: the server refused for now (one of
/// the refusals above: too many connections, starting up, read-only) or did not answer
/// (refused, reset, timed out, unreachable). A refusal that needs a person (a password,
/// a certificate, a missing database) is not.
pub fn passing(error: &anyhow::Error) -> bool {
    use std::io::ErrorKind::*;
    error.chain().any(|e| {
        if let Some(postgres) = e.downcast_ref::<tokio_postgres::Error>() {
            return postgres.code().is_some_and(refused);
        }
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            return matches!(
                io.kind(),
                ConnectionRefused
                    | ConnectionReset
                    | ConnectionAborted
                    | NotConnected
                    | BrokenPipe
                    | TimedOut
                    | UnexpectedEof
                    | HostUnreachable
                    | NetworkUnreachable
            );
        }
        e.downcast_ref::<ReadOnlyServer>().is_some()
    })
}

/// A new session found its server read-only where `target_session_attrs=read-write`
/// asked for a primary: during a failover, for a moment.
#[derive(Debug, thiserror::Error)]
#[error("the server is read-only (target_session_attrs=read-write)")]
pub struct ReadOnlyServer;

fn is_io(error: &tokio_postgres::Error) -> bool {
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = next {
        if e.downcast_ref::<std::io::Error>().is_some() {
            return true;
        }
        next = e.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_the_listed_states_and_class_08() {
        for code in [
            "25006", "57P01", "57P02", "57P03", "53300", "08006", "08001",
        ] {
            assert!(refused(&SqlState::from_code(code)), "{code}");
        }
        for code in ["23505", "40001", "40P01", "57014", "42P01", "P0001"] {
            assert!(!refused(&SqlState::from_code(code)), "{code}");
        }
    }
}
