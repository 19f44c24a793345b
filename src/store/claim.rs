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
    claim_on_claim_pool(client, sql(claimant.locality, slots), &params).await
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
    let sql = match slots {
        Slots::Aware => FALLBACK,
        Slots::Plain => FALLBACK_PLAIN,
    };
    let params = ClaimParams::new(claimant, None, task_types, limit);
    claim_on_claim_pool(client, sql, &params).await
}

/// The rendered claim variants by file name (tests prepare and check each one).
pub const VARIANTS: [(&str, &str); 6] = [
    ("claim_local.sql", LOCAL),
    ("claim_external.sql", EXTERNAL),
    ("claim_local_plain.sql", LOCAL_PLAIN),
    ("claim_external_plain.sql", EXTERNAL_PLAIN),
    ("claim_fallback.sql", FALLBACK),
    ("claim_fallback_plain.sql", FALLBACK_PLAIN),
];

const LOCAL: &str = include_str!(concat!(env!("OUT_DIR"), "/claim_local.sql"));
const EXTERNAL: &str = include_str!(concat!(env!("OUT_DIR"), "/claim_external.sql"));
const LOCAL_PLAIN: &str = include_str!(concat!(env!("OUT_DIR"), "/claim_local_plain.sql"));
const EXTERNAL_PLAIN: &str = include_str!(concat!(env!("OUT_DIR"), "/claim_external_plain.sql"));
const FALLBACK: &str = include_str!(concat!(env!("OUT_DIR"), "/claim_fallback.sql"));
const FALLBACK_PLAIN: &str = include_str!(concat!(env!("OUT_DIR"), "/claim_fallback_plain.sql"));

fn sql(locality: Locality, slots: Slots) -> &'static str {
    match (locality, slots) {
        (Locality::Local, Slots::Aware) => LOCAL,
        (Locality::External, Slots::Aware) => EXTERNAL,
        (Locality::Local, Slots::Plain) => LOCAL_PLAIN,
        (Locality::External, Slots::Plain) => EXTERNAL_PLAIN,
    }
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
/// Behind a pooler in transaction mode, where nothing may stay on a session, the same
/// settings are made for the claim's own transaction (`SET LOCAL`), the three messages
/// sent at once so the claim still costs one round trip.
async fn claim_on_claim_pool(
    client: &crate::store::Pooled,
    sql: &'static str,
    params: &ClaimParams<'_>,
) -> Result<Vec<ClaimedTask>, DbError> {
    let plain = crate::store::client(client);
    if !crate::store::connect::unnamed_statements_only() {
        let statement = client.prepare_cached(sql).await?;
        let rows = plain.query(&statement, &params.values()).await?;
        return rows.iter().map(from_row).collect();
    }
    let values = params.values();
    // Described before the three messages go out, so nothing is sent between them.
    let typed = crate::store::statement::typed_params(plain, sql, &values).await?;
    let (begun, rows, committed) = tokio::join!(
        plain.batch_execute(crate::store::connect::CLAIM_TRANSACTION),
        plain.query_typed(sql, &typed),
        plain.batch_execute("COMMIT"),
    );
    begun?;
    let rows = rows?;
    committed?;
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
