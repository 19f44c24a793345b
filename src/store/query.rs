//! Reads of tasks on behalf of their owner, and the owner check of the worker protocol.
//! Every owner's statement is filtered by app (and scope for scope tokens): another
//! owner's task is not found.

use crate::store::Statements;
use tokio_postgres::GenericClient;
use uuid::Uuid;

use super::DbError;
use crate::task::owner::Owner;
use crate::task::record::ListFilter;
use crate::task::record::TaskRecord;
use crate::task::TaskState;

/// One task, if `owner` may see it.
pub async fn get<C: GenericClient + Sync>(
    client: &C,
    owner: &Owner,
    id: Uuid,
) -> Result<Option<TaskRecord>, DbError> {
    let row = client
        .row_opt(
            include_str!("../../sql/task_get.sql"),
            &[&id, &owner.app, &owner.scope_id],
        )
        .await?;
    row.as_ref().map(TaskRecord::from_row).transpose()
}

/// Up to `limit` of `owner`'s tasks, newest first. A scope owner's own scope always
/// wins over the filter's.
pub async fn list<C: GenericClient + Sync>(
    client: &C,
    owner: &Owner,
    filter: &ListFilter,
    limit: i64,
) -> Result<Vec<TaskRecord>, DbError> {
    let scope = owner.scope_id.as_ref().or(filter.scope_id.as_ref());
    if let (Some(own), Some(asked)) = (&owner.scope_id, &filter.scope_id) {
        if own != asked {
            return Ok(Vec::new());
        }
    }
    let state = filter.state.map(TaskState::as_str);
    let rows = client
        .rows(
            include_str!("../../sql/task_list.sql"),
            &[
                &owner.app,
                &scope,
                &state,
                &filter.task_type,
                &filter.before,
                &limit,
                &filter.source_id,
            ],
        )
        .await?;
    rows.iter().map(TaskRecord::from_row).collect()
}

/// A task's owner and type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskOwner {
    pub app: String,
    pub scope_id: String,
    pub task_type: String,
    /// The submit's trace context, which a remote worker's settlement continues.
    pub traceparent: Option<String>,
}

impl TaskOwner {
    /// Whether `owner` (a token's app, and scope if any) may see this task.
    pub fn visible_to(&self, owner: &Owner) -> bool {
        self.app == owner.app
            && owner
                .scope_id
                .as_ref()
                .is_none_or(|scope| *scope == self.scope_id)
    }
}

/// The owner and type of a task, if it exists.
pub async fn owner_of<C: GenericClient + Sync>(
    client: &C,
    id: Uuid,
) -> Result<Option<TaskOwner>, DbError> {
    let row = client
        .row_opt(include_str!("../../sql/task_owner.sql"), &[&id])
        .await?;
    row.map(|row| {
        Ok(TaskOwner {
            app: row.try_get("app")?,
            scope_id: row.try_get("scope_id")?,
            task_type: row.try_get("task_type")?,
            traceparent: row.try_get("traceparent")?,
        })
    })
    .transpose()
}
