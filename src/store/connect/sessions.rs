//! Whether a database URL keeps a session per connection, or reaches PostgreSQL through
//! a pooler in transaction mode (PgBouncer), which lends each transaction whichever
//! server session is free. Migrations (a session advisory lock) and LISTEN need a
//! session of their own; through such a pooler a LISTEN hears nothing and a session
//! lock stays behind on a server session that other clients then share.
//!
//! The test uses what a direct connection can never show: two client connections on
//! one server session. Connection A reads its backend pid and lets go; connection B
//! opens a transaction, which a transaction pooler serves with the server session it
//! used last (A's), and reads its pid; A reads its pid again while B still holds that
//! session. On a direct connection (or through a pooler in session mode) A's pid never
//! changes and B's always differs; through a transaction pooler either B got A's
//! session or A had to move to another.

use tokio_postgres::Client;

use super::Database;

/// How a database URL treats sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sessions {
    /// Each connection keeps its server session (a direct connection, or a pooler in
    /// session mode).
    Kept,
    /// Connections share server sessions between transactions (a pooler in
    /// transaction mode).
    Shared,
}

/// Tells how `database`'s URL treats sessions, with two short-lived connections.
pub async fn probe(database: &Database) -> anyhow::Result<Sessions> {
    let a = database.connect().await?;
    let b = database.connect().await?;
    let first = backend_pid(&a).await?;
    b.batch_execute("BEGIN").await?;
    let other = backend_pid(&b).await?;
    let again = backend_pid(&a).await?;
    b.batch_execute("COMMIT").await?;
    Ok(match (first == again, first == other) {
        (true, false) => Sessions::Kept,
        _ => Sessions::Shared,
    })
}

/// The server process behind `client` now (a simple query: nothing prepared).
async fn backend_pid(client: &Client) -> anyhow::Result<i32> {
    let messages = client.simple_query("SELECT pg_backend_pid()").await?;
    messages
        .iter()
        .find_map(|message| match message {
            tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0)?.parse().ok(),
            _ => None,
        })
        .ok_or_else(|| anyhow::anyhow!("pg_backend_pid() answered no row"))
}
