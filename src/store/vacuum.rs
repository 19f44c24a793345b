//! Vacuums of the small tables that churn faster than autovacuum visits them (see
//! `sql/vacuum_due.sql`). The queue's mirror holds a few hundred live rows under a
//! steady flow, yet thousands of rows die in it every second; between autovacuum's
//! visits (a minute or more apart) their index entries pile up in front of every claim,
//! which walks them.

use crate::store::Statements;
use std::time::Duration;

use tokio_postgres::Client;

use super::DbError;

/// What makes a table due.
#[derive(Debug, Clone, Copy)]
pub struct Due {
    /// Fewest dead rows (and no fewer than the live ones).
    pub least_dead: i64,
    /// Least time since the table's last vacuum, by anyone.
    pub gap: Duration,
    /// Largest table (heap, indexes and TOAST, in bytes).
    pub most_bytes: i64,
}

/// Vacuums every tasklane table that is `due`. Returns the tables vacuumed (or
/// skipped because another vacuum held them).
///
/// The options: `SKIP_LOCKED`, a table another replica (or autovacuum) is vacuuming is
/// skipped, not waited for. `INDEX_CLEANUP ON`, the dead index entries are what this is
/// for, and PostgreSQL's own default may skip the indexes when few heap pages hold
/// dead rows. `TRUNCATE false`, the empty tail is not cut off: that needs an exclusive
/// lock, which a busy table keeps it waiting for (for seconds) and which holds every
/// claim while it is held. `PARALLEL 0`, starting workers costs more than they save on
/// indexes this small.
pub async fn vacuum_due(client: &Client, due: Due) -> Result<Vec<String>, DbError> {
    let due: Vec<String> = client
        .rows(
            include_str!("../../sql/vacuum_due.sql"),
            &[&due.least_dead, &due.gap.as_secs_f64(), &due.most_bytes],
        )
        .await?
        .iter()
        .map(|row| row.try_get("name"))
        .collect::<Result<_, _>>()?;
    for name in &due {
        // The names come from the catalog, quoted by format('%I.%I'); VACUUM takes no
        // parameters and runs outside a transaction block.
        client
            .batch_execute(&format!(
                "VACUUM (SKIP_LOCKED, INDEX_CLEANUP ON, TRUNCATE false, PARALLEL 0) {name}"
            ))
            .await?;
    }
    Ok(due)
}
