//! Helpers the lifecycle tests share: submitting into any app/scope/source, moving a
//! task to a terminal state and back in time, bulk rows, and the advisory-lock check.

use tasklane::service::ServiceError;
use tasklane::store::lease;
use tasklane::store::SubmitError;
use tasklane::task::record::{Submitted, TaskRecord};
use tasklane::task::settlement::Success;
use tokio_postgres::Client;
use uuid::Uuid;

use crate::common::fixtures::{self, APP};

/// Where a test task goes.
#[derive(Clone, Copy)]
pub struct At<'a> {
    pub app: &'a str,
    pub scope: &'a str,
    pub source: Option<&'a str>,
}

impl<'a> At<'a> {
    pub fn scope(scope: &'a str) -> Self {
        At {
            app: APP,
            scope,
            source: None,
        }
    }
    pub fn source(scope: &'a str, source: &'a str) -> Self {
        At {
            app: APP,
            scope,
            source: Some(source),
        }
    }
}

/// Submits in its own transaction (committed on success). No admission limits are set
/// in these tests, so only the submit's own errors can come back.
pub async fn try_submit_at(c: &Client, at: At<'_>, key: &str) -> Result<Submitted, SubmitError> {
    let mut request = fixtures::request(key, serde_json::json!({"k": key}));
    request.scope_id = at.scope.into();
    request.source_id = at.source.map(Into::into);
    let task = request
        .resolve(at.app, &fixtures::task_type(), 1 << 20)
        .expect("valid request");
    c.batch_execute("BEGIN").await.unwrap();
    let result = tasklane::service::submit_in(c, &task).await;
    c.batch_execute(if result.is_ok() { "COMMIT" } else { "ROLLBACK" })
        .await
        .unwrap();
    result.map_err(|refused| match refused {
        ServiceError::ScopeDeleted => SubmitError::ScopeDeleted,
        ServiceError::IdempotencyConflict => SubmitError::IdempotencyConflict,
        ServiceError::Raced => SubmitError::Raced,
        other => panic!("unexpected refusal {other:?}"),
    })
}

pub async fn submit_at(c: &Client, at: At<'_>, key: &str) -> TaskRecord {
    try_submit_at(c, at, key).await.expect("submit").task
}

/// Claims the one claimable task and completes it.
pub async fn run_to_success(c: &Client) -> Uuid {
    let claimed = fixtures::claim_one(c).await;
    let success = Success {
        result: serde_json::json!({"ok": true}),
        ..Default::default()
    };
    lease::complete(c, claimed.id, claimed.lease_token, &success)
        .await
        .unwrap();
    claimed.id
}

/// Sets a task's state, finished_at and released_at by SQL (times as `now() + <offset>`
/// intervals, NULL for none), to test the sweep's boundaries.
pub async fn place(
    c: &Client,
    id: Uuid,
    state: &str,
    finished: Option<&str>,
    released: Option<&str>,
) {
    c.execute(
        "UPDATE tasklane.tasks SET state = $2,
             finished_at = now() + $3::text::interval, released_at = now() + $4::text::interval
         WHERE id = $1",
        &[&id, &state, &finished, &released],
    )
    .await
    .unwrap();
}

/// Inserts `n` succeeded tasks (with one event each) released and finished two days
/// ago, in scope `scope`.
pub async fn bulk_prunable(c: &Client, scope: &str, n: i64) {
    c.execute(
        "WITH t AS (
            INSERT INTO tasklane.tasks (id, app, scope_id, effect_key, task_type, request_digest,
                input, max_attempts, on_restart, privacy, lease_seconds, attempt_timeout_seconds,
                state, finished_at, released_at, event_seq)
            SELECT gen_random_uuid(), 'mail', $1, 'bulk-' || g, 'summarize', '\\x00'::bytea,
                '{}'::jsonb, 1, 'retry', 'local_only', 30, 60, 'succeeded',
                now() - interval '2 days', now() - interval '2 days', 1
            FROM generate_series(1, $2::bigint) g
            RETURNING id
        )
        INSERT INTO tasklane.task_events (task_id, seq, type) SELECT id, 1, 'task.succeeded' FROM t",
        &[&scope, &n],
    )
    .await
    .unwrap();
}

pub use crate::common::fixtures::count;

pub async fn exists(c: &Client, id: Uuid) -> bool {
    c.query_one(
        "SELECT EXISTS (SELECT 1 FROM tasklane.tasks WHERE id = $1)",
        &[&id],
    )
    .await
    .unwrap()
    .get(0)
}

pub async fn events_of(c: &Client, id: Uuid) -> i64 {
    c.query_one(
        "SELECT count(*) FROM tasklane.task_events WHERE task_id = $1",
        &[&id],
    )
    .await
    .unwrap()
    .get(0)
}

/// Asserts that no advisory lock is held or awaited in the test's database: every owner
/// lock ended with its transaction (a leaked session lock would still show here, held by
/// an idle pooled connection).
pub async fn assert_no_advisory_locks(db: &crate::common::TestDb) {
    let c = db.client().await;
    let held = count(
        &c,
        "SELECT count(*) FROM pg_locks
         WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
    )
    .await;
    assert_eq!(held, 0, "advisory locks outlived their transactions");
}
