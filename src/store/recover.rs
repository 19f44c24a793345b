//! Tasks whose worker is lost: expired leases (the rescuer), a cold start, a replica
//! handing its leases back at shutdown, and passed queue deadlines. The decisions are
//! `task::restart::decide`, turned into states by the transition table
//! (`RestartDecision::apply`); this module only selects, locks and writes.

use crate::store::Statements;
use tokio_postgres::{GenericClient, Row};
use uuid::Uuid;

use super::DbError;
use crate::task::restart::{self, LostBecause, RestartDecision, RestartPolicy};
use crate::task::TaskState;

/// Which lost tasks to recover.
#[derive(Debug, Clone)]
pub enum Lost<'a> {
    /// Leases that expired, at or after `from` when given (where the last sweep found
    /// nothing more).
    Expired {
        from: Option<chrono::DateTime<chrono::Utc>>,
    },
    /// A cold start by this replica: everything held by replica processes, and queued
    /// tasks whose policy is `fail`.
    ColdStart { replica_id: Uuid },
    /// These leases, handed back by their owner.
    HandedBack {
        ids: &'a [Uuid],
        lease_tokens: &'a [Uuid],
    },
}

/// Recovers up to `limit` lost tasks in the caller's transaction (the selection locks
/// the rows until it ends). Returns how many tasks it moved, so a caller can keep going
/// while batches come back full: a row selected but left as it was is not counted, or
/// a caller would select it again at once, for ever.
pub async fn recover<C: GenericClient + Sync>(
    tx: &C,
    lost: &Lost<'_>,
    limit: i64,
) -> Result<usize, DbError> {
    let (rows, because) = match lost {
        Lost::Expired { from } => (
            tx.rows(include_str!("../../sql/lost_expired.sql"), &[&limit, from])
                .await?,
            LostBecause::LeaseExpired,
        ),
        Lost::ColdStart { replica_id } => (
            tx.rows(
                include_str!("../../sql/lost_cold_start.sql"),
                &[&limit, replica_id],
            )
            .await?,
            LostBecause::ServerRestarted,
        ),
        Lost::HandedBack { ids, lease_tokens } => (
            tx.rows(
                include_str!("../../sql/lost_handback.sql"),
                &[ids, lease_tokens],
            )
            .await?,
            LostBecause::ServerRestarted,
        ),
    };
    let mut ids = Vec::new();
    let mut states = Vec::new();
    let mut codes: Vec<Option<&str>> = Vec::new();
    let mut keep = Vec::new();
    for row in &rows {
        let (id, state, decision) = decide(row, because)?;
        let recovery = match decision.apply(state) {
            Ok(Some(recovery)) => recovery,
            Ok(None) => continue,
            // Unreachable while task::restart's tests pass; leave the row rather than
            // write a move the table forbids.
            Err(illegal) => {
                tracing::error!(task = %id, %illegal, "restart decision refused");
                continue;
            }
        };
        ids.push(id);
        states.push(recovery.state.as_str());
        codes.push(recovery.code);
        keep.push(recovery.keep_snapshot);
    }
    let moved = ids.len();
    if !ids.is_empty() {
        // The attempt each leased task loses ends with this code, whatever becomes of
        // the task (requeued, failed, or its requested cancel honoured).
        let lost_code = because.code();
        tx.row(
            include_str!("../../sql/recover.sql"),
            &[&ids, &states, &codes, &keep, &lost_code],
        )
        .await?;
    }
    Ok(moved)
}

fn decide(row: &Row, because: LostBecause) -> Result<(Uuid, TaskState, RestartDecision), DbError> {
    let state: TaskState = row
        .try_get::<_, &str>("state")?
        .parse()
        .expect("tasks.state holds a known state");
    let policy: &str = row.try_get("on_restart")?;
    let decision = restart::decide(
        state,
        RestartPolicy::parse(policy).expect("tasks.on_restart holds a known policy"),
        row.try_get::<_, i32>("attempt")? as u32,
        row.try_get::<_, i32>("max_attempts")? as u32,
        because,
    );
    Ok((row.try_get("id")?, state, decision))
}

/// Fails closed up to `limit` waiting tasks past their queue deadline, of those whose
/// deadline is at or after `from` when given (where the last sweep found nothing more);
/// returns how many.
pub async fn expire_deadlines<C: GenericClient + Sync>(
    client: &C,
    limit: i64,
    from: Option<chrono::DateTime<chrono::Utc>>,
) -> Result<usize, DbError> {
    let row = client
        .row(
            include_str!("../../sql/expire_deadlines.sql"),
            &[&limit, &from],
        )
        .await?;
    Ok(row.get::<_, i64>(0) as usize)
}
