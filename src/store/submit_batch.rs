//! Batch submit: many submits in one statement (`sql/submit_batch.sql`), each item
//! answered exactly as [`super::submit::submit`] would answer it alone. One round trip
//! and one transaction per batch instead of one per task, and inside it one multi-row
//! insert for the new tasks that no fence, stop or limit applies to
//! (`tasklane.submit_tasks`); only the other items pay a single submit's function
//! call each.

use tokio_postgres::types::{ToSql, Type};

use super::submit::{decide, Submission, SubmitError};
use super::DbError;
use crate::task::{NewTask, TaskId};

/// Submits `tasks` (each with the id it gets if created) in one statement, on a pooled
/// connection (the statement prepared once per connection; unnamed behind a pooler in
/// transaction mode, see [`super::cached`]). The answers are in `tasks`'
/// order. An `Err` of the whole call means nothing of the batch was written.
pub async fn submit_many(
    client: &crate::store::Pooled,
    tasks: &[(TaskId, &NewTask)],
) -> Result<Vec<Result<Submission, SubmitError>>, DbError> {
    let columns = Columns::of(tasks);
    let rows = if crate::store::connect::unnamed_statements_only() {
        let params = columns.params();
        let typed: Vec<(&(dyn ToSql + Sync), Type)> =
            params.iter().copied().zip(Columns::TYPES).collect();
        client.query_typed(SQL, &typed).await?
    } else {
        let statement = client.prepare_typed_cached(SQL, &Columns::TYPES).await?;
        client.query(&statement, &columns.params()).await?
    };
    // Placed by the statement's item number `n` (1-based): an item without its row
    // (which submit_task never does) is answered as a vanished identity, never panics.
    let mut answers: Vec<Result<Submission, SubmitError>> =
        (0..tasks.len()).map(|_| Err(SubmitError::Raced)).collect();
    for row in rows {
        let n: i64 = row.try_get("n")?;
        if let Some(slot) = usize::try_from(n - 1).ok().and_then(|i| answers.get_mut(i)) {
            *slot = decide(Some(row));
        }
    }
    Ok(answers)
}

const SQL: &str = include_str!("../../sql/submit_batch.sql");

/// The positions of `tasks` in identity order (app, scope, effect key, subject), equal
/// identities in item order: the order `tasklane.submit_tasks` inserts in, which makes
/// the first item of an identity the one created, and two batches racing on the same
/// identities take their index entries in one order (never waiting on each other in a
/// cycle). Sorted here, by bytes, because sorting a full batch's wide rows by
/// collation in the statement is a sizable share of the batch's cost.
fn identity_order(tasks: &[(TaskId, &NewTask)]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..tasks.len()).collect();
    // Stable: equal identities keep their item order.
    order.sort_by_key(|&i| {
        let task = tasks[i].1;
        (
            task.app.as_str(),
            task.scope_id.as_str(),
            task.effect_key.as_str(),
            task.usage_subject.as_deref(),
        )
    });
    order
}

/// Whether `error` is a deadlock or serialization failure: the whole statement rolled
/// back, and running it again is safe. The multi-row insert takes identities in one
/// order, but items through admission take their identity locks in item order, so two
/// such batches can still deadlock (single submits take one identity each and cannot).
pub fn is_retryable(error: &DbError) -> bool {
    use tokio_postgres::error::SqlState;
    matches!(
        error.code(),
        Some(&SqlState::T_R_DEADLOCK_DETECTED) | Some(&SqlState::T_R_SERIALIZATION_FAILURE)
    )
}

/// The batch as one array per column, in `sql/submit_batch.sql`'s `$1..$19` order: the
/// items' 1-based positions, then each column, every array in identity order.
struct Columns<'a> {
    n: Vec<i64>,
    id: Vec<TaskId>,
    app: Vec<&'a str>,
    scope_id: Vec<&'a str>,
    effect_key: Vec<&'a str>,
    usage_subject: Vec<Option<&'a str>>,
    source_id: Vec<Option<&'a str>>,
    task_type: Vec<&'a str>,
    digest: Vec<&'a [u8]>,
    input: Vec<&'a serde_json::Value>,
    priority: Vec<i16>,
    max_attempts: Vec<i32>,
    on_restart: Vec<&'static str>,
    privacy: Vec<&'static str>,
    lease_seconds: Vec<i32>,
    attempt_timeout_seconds: Vec<i32>,
    deadline_seconds: Vec<Option<i64>>,
    resource: Vec<Option<&'a str>>,
    traceparent: Vec<Option<&'a str>>,
}

impl<'a> Columns<'a> {
    const TYPES: [Type; 19] = [
        Type::INT8_ARRAY,
        Type::UUID_ARRAY,
        Type::TEXT_ARRAY,
        Type::TEXT_ARRAY,
        Type::TEXT_ARRAY,
        Type::TEXT_ARRAY,
        Type::TEXT_ARRAY,
        Type::TEXT_ARRAY,
        Type::BYTEA_ARRAY,
        Type::JSONB_ARRAY,
        Type::INT2_ARRAY,
        Type::INT4_ARRAY,
        Type::TEXT_ARRAY,
        Type::TEXT_ARRAY,
        Type::INT4_ARRAY,
        Type::INT4_ARRAY,
        Type::INT8_ARRAY,
        Type::TEXT_ARRAY,
        Type::TEXT_ARRAY,
    ];

    fn of(items: &'a [(TaskId, &'a NewTask)]) -> Self {
        let order = identity_order(items);
        let tasks: Vec<(TaskId, &'a NewTask)> = order.iter().map(|&i| items[i]).collect();
        Columns {
            n: order.iter().map(|&i| i as i64 + 1).collect(),
            id: tasks.iter().map(|&(id, _)| id).collect(),
            app: tasks.iter().map(|&(_, t)| t.app.as_str()).collect(),
            scope_id: tasks.iter().map(|&(_, t)| t.scope_id.as_str()).collect(),
            effect_key: tasks.iter().map(|&(_, t)| t.effect_key.as_str()).collect(),
            usage_subject: tasks
                .iter()
                .map(|&(_, t)| t.usage_subject.as_deref())
                .collect(),
            source_id: tasks.iter().map(|&(_, t)| t.source_id.as_deref()).collect(),
            task_type: tasks.iter().map(|&(_, t)| t.task_type.as_str()).collect(),
            digest: tasks.iter().map(|&(_, t)| t.digest.as_slice()).collect(),
            input: tasks.iter().map(|&(_, t)| &t.input).collect(),
            priority: tasks.iter().map(|&(_, t)| t.priority as i16).collect(),
            max_attempts: tasks.iter().map(|&(_, t)| t.max_attempts).collect(),
            on_restart: tasks.iter().map(|&(_, t)| t.on_restart.as_str()).collect(),
            privacy: tasks.iter().map(|&(_, t)| t.privacy.as_str()).collect(),
            lease_seconds: tasks.iter().map(|&(_, t)| t.lease_seconds as i32).collect(),
            attempt_timeout_seconds: tasks
                .iter()
                .map(|&(_, t)| t.attempt_timeout_seconds as i32)
                .collect(),
            deadline_seconds: tasks.iter().map(|&(_, t)| t.deadline_seconds).collect(),
            resource: tasks.iter().map(|&(_, t)| t.resource.as_deref()).collect(),
            traceparent: tasks
                .iter()
                .map(|&(_, t)| t.traceparent.as_deref())
                .collect(),
        }
    }

    fn params(&self) -> [&(dyn ToSql + Sync); 19] {
        [
            &self.n,
            &self.id,
            &self.app,
            &self.scope_id,
            &self.effect_key,
            &self.usage_subject,
            &self.source_id,
            &self.task_type,
            &self.digest,
            &self.input,
            &self.priority,
            &self.max_attempts,
            &self.on_restart,
            &self.privacy,
            &self.lease_seconds,
            &self.attempt_timeout_seconds,
            &self.deadline_seconds,
            &self.resource,
            &self.traceparent,
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::{Executor, SubmitRequest, TaskType};

    fn task(scope: &str, key: &str, subject: Option<&str>, n: i64) -> NewTask {
        let request: SubmitRequest = serde_json::from_value(serde_json::json!({
            "task_type": "noop", "scope_id": scope, "effect_key": key,
            "usage_subject": subject, "input": {"n": n}
        }))
        .unwrap();
        request
            .resolve("app", &TaskType::new("noop", Executor::Noop), 1024)
            .unwrap()
    }

    #[test]
    fn items_go_in_identity_order_and_repeats_keep_their_item_order() {
        let tasks = [
            task("s2", "a", None, 0),
            task("s1", "b", None, 1),
            task("s1", "a", Some("u"), 2),
            task("s1", "b", None, 3),
            task("s1", "a", None, 4),
            task("s1", "b", None, 5),
        ];
        let items: Vec<(TaskId, &NewTask)> = tasks
            .iter()
            .map(|t| (crate::task::new_task_id(), t))
            .collect();
        // (s1, a, None) before (s1, a, u); the three (s1, b) in item order 1, 3, 5.
        assert_eq!(identity_order(&items), [4, 2, 1, 3, 5, 0]);
    }
}
