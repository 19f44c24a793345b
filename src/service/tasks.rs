//! The owner's view of tasks: read, list, events, cancel, and retry with a fresh
//! attempt budget. Every call is filtered by the owner's app (and scope): another
//! owner's task is [`ServiceError::NotFound`].

use std::collections::HashMap;

use uuid::Uuid;

use super::{AttemptRecord, Event, ListFilter, Owner, ServiceError, TaskRecord, Tasklane};
use crate::store::retry::{self, Retried};
use crate::store::{self, attempts, cancel, events, query};
use crate::task::bounds;

/// One page of a listing, newest first.
#[derive(Debug, Clone)]
pub struct TaskList {
    pub tasks: Vec<TaskRecord>,
    /// The last id of this page when more follow: the next page's `before`.
    pub next: Option<Uuid>,
}

/// A task's events after a seq, and whether the task is terminal (then no more follow).
#[derive(Debug, Clone)]
pub struct TaskEvents {
    pub events: Vec<Event>,
    pub terminal: bool,
}

impl Tasklane {
    /// One task, if `owner` may see it.
    pub async fn get(&self, owner: &Owner, id: Uuid) -> Result<TaskRecord, ServiceError> {
        // A read: safe to run again on a fresh connection (waiters poll through it).
        self.again_on_fresh_connection("read a task", || async {
            let client = self.connection().await?;
            let client = store::client(&client);
            let mut task = query::get(client, owner, id)
                .await?
                .ok_or(ServiceError::NotFound)?;
            with_attempts(client, std::slice::from_mut(&mut task)).await?;
            Ok(task)
        })
        .await
    }

    /// The attempts of task `id`, oldest first (a running attempt last), if `owner`
    /// may see the task.
    pub async fn attempts(
        &self,
        owner: &Owner,
        id: Uuid,
    ) -> Result<Vec<AttemptRecord>, ServiceError> {
        let client = self.connection().await?;
        let client = store::client(&client);
        query::get(client, owner, id)
            .await?
            .ok_or(ServiceError::NotFound)?;
        Ok(attempts::list(client, id).await?)
    }

    /// Fills in the attempt summaries (usage, provenance) of `tasks`, in one query.
    pub async fn with_attempts(&self, tasks: &mut [TaskRecord]) -> Result<(), ServiceError> {
        let client = self.connection().await?;
        with_attempts(store::client(&client), tasks).await
    }

    /// Up to `limit` (1..=100) of `owner`'s tasks matching `filter`, newest first.
    pub async fn list(
        &self,
        owner: &Owner,
        filter: &ListFilter,
        limit: i64,
    ) -> Result<TaskList, ServiceError> {
        bounds::within("limit", limit, &bounds::PAGE_SIZE)?;
        for (field, value) in [
            ("scope_id", &filter.scope_id),
            ("task_type", &filter.task_type),
            ("source_id", &filter.source_id),
        ] {
            if let Some(value) = value {
                bounds::text(field, value)?;
            }
        }
        let client = self.connection().await?;
        let client = store::client(&client);
        let mut tasks = query::list(client, owner, filter, limit + 1).await?;
        let next = if tasks.len() as i64 > limit {
            tasks.truncate(limit as usize);
            tasks.last().map(|t| t.id)
        } else {
            None
        };
        with_attempts(client, &mut tasks).await?;
        Ok(TaskList { tasks, next })
    }

    /// Up to `limit` (1..=100) events of task `id` with seq above `after`, ascending.
    pub async fn events(
        &self,
        owner: &Owner,
        id: Uuid,
        after: i32,
        limit: i64,
    ) -> Result<TaskEvents, ServiceError> {
        if after < 0 {
            return Err(bounds::Invalid::new("after", "must not be negative").into());
        }
        bounds::within("limit", limit, &bounds::PAGE_SIZE)?;
        let client = self.connection().await?;
        let client = store::client(&client);
        let task = query::get(client, owner, id)
            .await?
            .ok_or(ServiceError::NotFound)?;
        let events = events::after(client, id, after, limit).await?;
        Ok(TaskEvents {
            events,
            terminal: task.state.is_terminal(),
        })
    }

    /// The last event seq of each of `ids` that still exists, in one query: what a
    /// replica's event waiters poll when notifications may have been missed.
    pub async fn latest_event_seqs(
        &self,
        ids: &[Uuid],
    ) -> Result<HashMap<Uuid, i32>, ServiceError> {
        let client = self.connection().await?;
        Ok(events::latest_seqs(store::client(&client), ids).await?)
    }

    /// The owner's cancel: a waiting task is cancelled at once, a running one is marked
    /// cancelling (its worker hears it at the next heartbeat), a terminal or already
    /// cancelling one is returned unchanged.
    pub async fn cancel(&self, owner: &Owner, id: Uuid) -> Result<TaskRecord, ServiceError> {
        let client = self.connection().await?;
        let client = store::client(&client);
        let mut task = cancel::cancel(client, owner, id)
            .await?
            .ok_or(ServiceError::NotFound)?;
        with_attempts(client, std::slice::from_mut(&mut task)).await?;
        Ok(task)
    }

    /// Queues a failed or cancelled task again with a fresh attempt budget. Under the
    /// owner lock, in one transaction: a fenced scope refuses (`scope_deleted`), then
    /// admission (a retry is a new admission: capacity, rate and budget apply).
    pub async fn retry(&self, owner: &Owner, id: Uuid) -> Result<TaskRecord, ServiceError> {
        let mut object = self.connection().await?;
        let client: &mut tokio_postgres::Client = &mut object;
        let tx = client.transaction().await?;
        let locked = &tx;
        let retried = retry::retry(&tx, owner, id, |task| async move {
            store::lifecycle::check_fence(locked, &task.app, &task.scope_id).await?;
            let admitted = crate::admission::readmit(
                locked,
                task.id,
                &task.app,
                task.usage_subject.as_deref(),
            )
            .await?;
            admitted.map_err(ServiceError::Refused)
        })
        .await?;
        tx.commit().await?;
        match retried {
            Retried::Queued(task) => {
                self.wakeup.wake_all();
                Ok(task)
            }
            Retried::NotRetryable(_) => Err(ServiceError::NotRetryable),
            Retried::NotFound => Err(ServiceError::NotFound),
        }
    }
}

/// Fills in the attempt summaries of `tasks`, in one query.
async fn with_attempts(
    client: &tokio_postgres::Client,
    tasks: &mut [TaskRecord],
) -> Result<(), ServiceError> {
    let ids: Vec<Uuid> = tasks.iter().map(|t| t.id).collect();
    let mut summaries = attempts::summaries(client, &ids).await?;
    for task in tasks {
        task.attempts = Some(summaries.remove(&task.id).unwrap_or_default());
    }
    Ok(())
}
