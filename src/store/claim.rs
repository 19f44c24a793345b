//! Claim: take a batch of claimable tasks in one statement. The statement is one template,
//! `sql/claim.sql`, rendered by `build.rs` into a variant per locality and [`Slots`], plus the
//! external claim of waiting fallbacks only.

use crate::store::Statements;
use tokio_postgres::types::ToSql;
use tokio_postgres::{GenericClient, Row};

use super::DbError;
use crate::task::claim::{Claimant, ClaimedTask, Slots};
use crate::task::{Locality, Privacy};

/// Claims up to `limit` tasks of `task_types` for `claimant`, of any owner, taking a
/// resource slot for each task that needs one.
pub async fn claim<C: GenericClient + Sync>(
    client: &C,
    claimant: &Claimant<'_>,
    task_types: &[String],
    limit: i64,
) -> Result<Vec<ClaimedTask>, DbError> {
    claim_owned(client, claimant, None, task_types, limit).await
}

/// Like [`claim`], for a claimer none of whose task types names a resource.
pub async fn claim_without_resources<C: GenericClient + Sync>(
    client: &C,
    claimant: &Claimant<'_>,
    task_types: &[String],
    limit: i64,
) -> Result<Vec<ClaimedTask>, DbError> {
    let sql = sql(claimant.locality, Slots::Plain);
    let params = ClaimParams::new(claimant, None, task_types, limit);
    let rows = client.rows(sql, &params.values()).await?;
    rows.iter().map(from_row).collect()
}

/// Claims like [`claim`], only tasks of `owner` (a remote worker's token): another
/// app's tasks are never handed to it.
pub async fn claim_owned<C: GenericClient + Sync>(
    client: &C,
    claimant: &Claimant<'_>,
    owner: Option<&crate::task::owner::Owner>,
    task_types: &[String],
    limit: i64,
) -> Result<Vec<ClaimedTask>, DbError> {
    let sql = sql(claimant.locality, Slots::Aware);
    let params = ClaimParams::new(claimant, owner, task_types, limit);
    let rows = client.rows(sql, &params.values()).await?;
    rows.iter().map(from_row).collect()
}

/// [`claim_owned`] on a pooled connection, with the statement for `slots` prepared once
/// per connection (deadpool's cache): the claim loops' hot path and the worker
/// protocol's, one round trip and no re-parse.
pub async fn claim_pooled(
    client: &crate::store::Pooled,
    claimant: &Claimant<'_>,
    slots: Slots,
    owner: Option<&crate::task::owner::Owner>,
    task_types: &[String],
    limit: i64,
) -> Result<Vec<ClaimedTask>, DbError> {
    let params = ClaimParams::new(claimant, owner, task_types, limit);
    claim_on_claim_pool(client, variant(claimant.locality, slots), &params).await
}

/// Like [`claim_pooled`] for an external claimant, taking only tasks waiting for an
/// external fallback: the external claim of types that run their local routes first.
pub async fn claim_fallbacks_pooled(
    client: &crate::store::Pooled,
    claimant: &Claimant<'_>,
    slots: Slots,
    task_types: &[String],
    limit: i64,
) -> Result<Vec<ClaimedTask>, DbError> {
    let variant = match slots {
        Slots::Aware => &FALLBACK,
        Slots::Plain => &FALLBACK_PLAIN,
    };
    let params = ClaimParams::new(claimant, None, task_types, limit);
    claim_on_claim_pool(client, variant, &params).await
}

/// One rendered claim statement, and the call of the function that runs the same text
/// (`tasklane.` and the file's stem, in `sql/functions/`) for replicas behind a pooler in
/// transaction mode.
struct Variant {
    /// The rendered file's name (`claim_local.sql`).
    file: &'static str,
    /// The statement.
    sql: &'static str,
    /// The function's call, its parameters the statement's.
    call: &'static str,
}

/// Declares a claim variant: its file in `OUT_DIR` and its function's call.
macro_rules! variant {
    ($name:ident, $stem:literal) => {
        const $name: Variant = Variant {
            file: concat!($stem, ".sql"),
            sql: include_str!(concat!(env!("OUT_DIR"), "/", $stem, ".sql")),
            call: concat!(
                "SELECT * FROM tasklane.",
                $stem,
                "($1::text[], $2::text, $3::int8, $4::uuid, $5::text, $6::text)"
            ),
        };
    };
}

variant!(LOCAL, "claim_local");
variant!(EXTERNAL, "claim_external");
variant!(LOCAL_PLAIN, "claim_local_plain");
variant!(EXTERNAL_PLAIN, "claim_external_plain");
variant!(FALLBACK, "claim_fallback");
variant!(FALLBACK_PLAIN, "claim_fallback_plain");

/// The rendered claim variants by file name (tests prepare and check each one, and
/// compare it with its function, `tasklane.` and the file's stem).
pub const VARIANTS: [(&str, &str); 6] = [
    (LOCAL.file, LOCAL.sql),
    (EXTERNAL.file, EXTERNAL.sql),
    (LOCAL_PLAIN.file, LOCAL_PLAIN.sql),
    (EXTERNAL_PLAIN.file, EXTERNAL_PLAIN.sql),
    (FALLBACK.file, FALLBACK.sql),
    (FALLBACK_PLAIN.file, FALLBACK_PLAIN.sql),
];

fn variant(locality: Locality, slots: Slots) -> &'static Variant {
    match (locality, slots) {
        (Locality::Local, Slots::Aware) => &LOCAL,
        (Locality::External, Slots::Aware) => &EXTERNAL,
        (Locality::Local, Slots::Plain) => &LOCAL_PLAIN,
        (Locality::External, Slots::Plain) => &EXTERNAL_PLAIN,
    }
}

fn sql(locality: Locality, slots: Slots) -> &'static str {
    variant(locality, slots).sql
}

/// A claim statement's parameters, in its order.
struct ClaimParams<'a> {
    task_types: &'a [String],
    worker_id: &'a str,
    limit: i64,
    replica_id: Option<uuid::Uuid>,
    app: Option<&'a str>,
    scope: Option<&'a str>,
}

impl<'a> ClaimParams<'a> {
    fn new(
        claimant: &'a Claimant<'a>,
        owner: Option<&'a crate::task::owner::Owner>,
        task_types: &'a [String],
        limit: i64,
    ) -> Self {
        ClaimParams {
            task_types,
            worker_id: claimant.worker_id,
            limit,
            replica_id: claimant.replica_id,
            app: owner.map(|o| o.app.as_str()),
            scope: owner.and_then(|o| o.scope_id.as_deref()),
        }
    }

    fn values(&self) -> [&(dyn ToSql + Sync); 6] {
        [
            &self.task_types,
            &self.worker_id,
            &self.limit,
            &self.replica_id,
            &self.app,
            &self.scope,
        ]
    }
}

/// A claim on a connection of the claim pool, planned as that pool's sessions say
/// (`connect::CLAIM_SESSION`): prepared once per connection with its generic plan.
/// Behind a pooler in transaction mode, where nothing may stay on a session, the
/// variant's function runs it instead: a statement of its own (its own implicit
/// transaction, one round trip) whose plan the server session keeps, planned with the
/// same settings (the function's SET clauses).
async fn claim_on_claim_pool(
    client: &crate::store::Pooled,
    variant: &Variant,
    params: &ClaimParams<'_>,
) -> Result<Vec<ClaimedTask>, DbError> {
    if crate::store::connect::unnamed_statements_only() {
        return by_function(crate::store::client(client), variant, params).await;
    }
    let statement = client.prepare_cached(variant.sql).await?;
    let rows = crate::store::client(client)
        .query(&statement, &params.values())
        .await?;
    rows.iter().map(from_row).collect()
}

/// A claim through the variant's function instead of the statement:
/// planned once per server session and kept there, with the claim pool's planner
/// settings whatever the session's. What a replica behind a pooler in transaction mode
/// claims with.
async fn by_function<C: GenericClient + Sync>(
    client: &C,
    variant: &Variant,
    params: &ClaimParams<'_>,
) -> Result<Vec<ClaimedTask>, DbError> {
    let rows = client.rows(variant.call, &params.values()).await?;
    rows.iter().map(from_row).collect()
}

fn from_row(row: &Row) -> Result<ClaimedTask, DbError> {
    let privacy: &str = row.try_get("privacy")?;
    Ok(ClaimedTask {
        id: row.try_get("id")?,
        app: row.try_get("app")?,
        scope_id: row.try_get("scope_id")?,
        task_type: row.try_get("task_type")?,
        attempt: row.try_get("attempt")?,
        max_attempts: row.try_get("max_attempts")?,
        lease_token: row.try_get("lease_token")?,
        lease_expires_at: row.try_get("lease_expires_at")?,
        lease_seconds: row.try_get("lease_seconds")?,
        attempt_timeout_seconds: row.try_get("attempt_timeout_seconds")?,
        input: row.try_get("input")?,
        snapshot: row.try_get("snapshot")?,
        deadline_at: row.try_get("deadline_at")?,
        // The CHECK constraint on tasks.privacy admits only these two.
        privacy: Privacy::parse(privacy).unwrap_or(Privacy::LocalOnly),
        claimable_at: row.try_get("claimable_at")?,
        traceparent: row.try_get("traceparent")?,
        attempt_deadline_at: row.try_get("attempt_deadline_at")?,
    })
}
