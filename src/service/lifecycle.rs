//! The application's lifecycle: release, owner deletion and fences, and the
//! reconciliation listing. The same store functions (and so the same SQL functions)
//! serve applications that call them inside their own transactions.

use chrono::{DateTime, Utc};

use super::{Owner, ServiceError, SourceRef, Tasklane};
use crate::store::{self, lifecycle};
use crate::task::bounds;

/// Most pairs one page of [`Tasklane::unreleased_sources`] returns.
pub const MAX_SOURCE_PAGE: i64 = lifecycle::MAX_PAGE;

impl Tasklane {
    /// Marks the task with this identity released; its `released_at` (the first one on
    /// repeats), or `None` when no task has the identity. Never cancels.
    pub async fn release(
        &self,
        owner: &Owner,
        scope_id: &str,
        effect_key: &str,
        usage_subject: Option<&str>,
    ) -> Result<Option<DateTime<Utc>>, ServiceError> {
        own_scope(owner, scope_id)?;
        bounds::key("scope_id", scope_id)?;
        bounds::key("effect_key", effect_key)?;
        if let Some(subject) = usage_subject {
            bounds::key("usage_subject", subject)?;
        }
        let client = self.connection().await?;
        let released = lifecycle::release(
            store::client(&client),
            &owner.app,
            scope_id,
            effect_key,
            usage_subject,
        )
        .await?;
        Ok(released)
    }

    /// Deletes the scope's tasks in every state (or only those of exactly `source_id`),
    /// serialized with admission for the scope; with `fence`, later submits for the scope
    /// are refused until the fence is lifted. Returns how many were deleted.
    pub async fn delete_tasks(
        &self,
        owner: &Owner,
        scope_id: &str,
        source_id: Option<&str>,
        fence: bool,
    ) -> Result<u64, ServiceError> {
        own_scope(owner, scope_id)?;
        bounds::key("scope_id", scope_id)?;
        if let Some(source) = source_id {
            bounds::key("source_id", source)?;
        }
        let client = self.connection().await?;
        let deleted = lifecycle::delete(
            store::client(&client),
            &owner.app,
            scope_id,
            source_id,
            fence,
        )
        .await?;
        Ok(deleted)
    }

    /// Lets submits for a fenced scope in again.
    pub async fn lift_fence(&self, owner: &Owner, scope_id: &str) -> Result<(), ServiceError> {
        own_scope(owner, scope_id)?;
        bounds::key("scope_id", scope_id)?;
        let client = self.connection().await?;
        lifecycle::lift_fence(store::client(&client), &owner.app, scope_id).await?;
        Ok(())
    }

    /// Up to `limit` (1..=100) distinct `(scope, source)` pairs of the owner's app with
    /// unreleased tasks, after `after`. An app-wide view: the caller checks that the
    /// owner is not a scope.
    pub async fn unreleased_sources(
        &self,
        owner: &Owner,
        after: Option<&SourceRef>,
        limit: i64,
    ) -> Result<Vec<SourceRef>, ServiceError> {
        bounds::within("limit", limit, &bounds::PAGE_SIZE)?;
        let client = self.connection().await?;
        let pairs =
            lifecycle::unreleased_sources(store::client(&client), &owner.app, after, limit).await?;
        Ok(pairs)
    }
}

/// A scope owner acts on its own scope only.
pub(super) fn own_scope(owner: &Owner, scope_id: &str) -> Result<(), ServiceError> {
    match &owner.scope_id {
        Some(own) if own != scope_id => Err(ServiceError::OtherScope),
        _ => Ok(()),
    }
}
