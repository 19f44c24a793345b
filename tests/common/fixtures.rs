//! Shortcuts the integration tests share: submitting, claiming, reading events, and
//! moving the database clock of a row.

#![allow(dead_code)]

use tasklane::store::claim;

use tasklane::store::query;
use tasklane::task::backoff::Backoff;
use tasklane::task::claim::Claimant;
use tasklane::task::claim::ClaimedTask;
use tasklane::task::owner::Owner;
use tasklane::task::record::TaskRecord;
use tasklane::task::{Executor, Locality, SubmitRequest, TaskType};
use tokio_postgres::Client;
use uuid::Uuid;

pub const APP: &str = "mail";
pub const SCOPE: &str = "mailbox-7";
pub const TYPE: &str = "summarize";

pub fn task_type() -> TaskType {
    TaskType {
        // Allowlisted, so tests may submit either privacy.
        external_allowed: true,
        ..TaskType::new(TYPE, Executor::Noop)
    }
}

pub fn request(effect_key: &str, input: serde_json::Value) -> SubmitRequest {
    SubmitRequest {
        task_type: TYPE.into(),
        scope_id: SCOPE.into(),
        effect_key: effect_key.into(),
        source_id: None,
        usage_subject: None,
        input,
        priority: None,
        deadline_seconds: None,
        max_attempts: None,
        on_restart: None,
        privacy: None,
    }
}

/// Submits in a transaction of its own and commits.
pub async fn submit(c: &Client, key: &str, input: serde_json::Value) -> TaskRecord {
    submit_with(c, key, input, |_| {}).await
}

pub async fn submit_with(
    c: &Client,
    key: &str,
    input: serde_json::Value,
    edit: impl FnOnce(&mut SubmitRequest),
) -> TaskRecord {
    let mut r = request(key, input);
    edit(&mut r);
    try_submit(c, &r).await.expect("submit").task
}

/// Limits app `APP`'s tasks of usage subject `subject` to `slots` running or queued at
/// once (a capacity limit).
pub async fn capacity_limit(c: &Client, subject: &str, slots: i64) {
    let limit = tasklane::store::limits::LimitKey {
        kind: "capacity",
        app: Some(APP),
        usage_subject: Some(subject),
        window_seconds: None,
    };
    tasklane::store::limits::set_limit(c, limit, slots)
        .await
        .unwrap();
}

pub async fn try_submit(
    c: &Client,
    r: &SubmitRequest,
) -> Result<tasklane::task::record::Submitted, tasklane::service::ServiceError> {
    try_submit_as(c, r, &task_type()).await
}

/// Submits with the defaults (lease, timeout, ...) of `task_type`.
pub async fn try_submit_as(
    c: &Client,
    r: &SubmitRequest,
    task_type: &TaskType,
) -> Result<tasklane::task::record::Submitted, tasklane::service::ServiceError> {
    let task = r.resolve(APP, task_type, 1 << 20).expect("valid request");
    c.batch_execute("BEGIN").await.unwrap();
    let result = tasklane::service::submit_in(c, &task).await;
    c.batch_execute(if result.is_ok() { "COMMIT" } else { "ROLLBACK" })
        .await
        .unwrap();
    result
}

pub fn claimant(locality: Locality) -> Claimant<'static> {
    Claimant {
        worker_id: "test-worker",
        locality,
        replica_id: None,
    }
}

pub async fn claim_at(c: &Client, locality: Locality, limit: i64) -> Vec<ClaimedTask> {
    claim::claim(c, &claimant(locality), &[TYPE.to_owned()], limit)
        .await
        .expect("claim")
}

pub async fn claim(c: &Client, limit: i64) -> Vec<ClaimedTask> {
    claim_at(c, Locality::Local, limit).await
}

pub async fn claim_one(c: &Client) -> ClaimedTask {
    let mut claimed = claim(c, 1).await;
    assert_eq!(claimed.len(), 1, "expected one claimable task");
    claimed.remove(0)
}

pub async fn get(c: &Client, id: Uuid) -> TaskRecord {
    query::get(c, &Owner::app(APP), id)
        .await
        .unwrap()
        .expect("task exists")
}

pub async fn event_types(c: &Client, id: Uuid) -> Vec<String> {
    let rows = c
        .query(
            "SELECT type FROM tasklane.task_events WHERE task_id = $1 ORDER BY seq",
            &[&id],
        )
        .await
        .unwrap();
    rows.iter().map(|r| r.get(0)).collect()
}

/// The single `bigint` that `sql` (no parameters) selects, e.g. a `count(*)`.
pub async fn count(c: &Client, sql: &str) -> i64 {
    c.query_one(sql, &[]).await.expect(sql).get(0)
}

/// Makes a waiting task claimable now.
pub async fn make_due(c: &Client, id: Uuid) {
    c.execute(
        "UPDATE tasklane.tasks SET run_at = now() WHERE id = $1",
        &[&id],
    )
    .await
    .unwrap();
}

/// Seconds between now and the task's run_at.
pub async fn run_at_delay_seconds(c: &Client, id: Uuid) -> f64 {
    let row = c
        .query_one(
            "SELECT extract(epoch FROM run_at - now())::float8 FROM tasklane.tasks WHERE id = $1",
            &[&id],
        )
        .await
        .unwrap();
    row.get(0)
}

/// Moves a task's lease into the past, as if its worker stopped heartbeating.
pub async fn expire_lease(c: &Client, id: Uuid) {
    c.execute(
        "UPDATE tasklane.tasks SET lease_expires_at = now() - interval '1 second' WHERE id = $1",
        &[&id],
    )
    .await
    .unwrap();
}

/// One rescuer pass.
pub async fn rescue_expired(c: &Client) -> usize {
    c.batch_execute("BEGIN").await.unwrap();
    let n = tasklane::store::recover::recover(
        c,
        &tasklane::store::recover::Lost::Expired { from: None },
        100,
    )
    .await
    .unwrap();
    c.batch_execute("COMMIT").await.unwrap();
    n
}

pub fn fast_backoff() -> Backoff {
    Backoff {
        base: std::time::Duration::from_millis(10),
        cap: std::time::Duration::from_millis(100),
    }
}

/// The settlement rules of a type with `backoff` and the default circuit wait.
pub fn rules(backoff: &Backoff) -> tasklane::task::settlement::Rules<'_> {
    tasklane::task::settlement::Rules {
        backoff,
        circuit_wait: std::time::Duration::from_secs(
            tasklane::task::task_type::DEFAULT_CIRCUIT_WAIT_SECONDS,
        ),
    }
}

/// Rows of `table` and of its indexes read by this transaction so far (sequential and
/// index scans alike).
pub async fn rows_read<C: tokio_postgres::GenericClient + Sync>(c: &C, table: &str) -> i64 {
    c.query_one(
        "SELECT pg_stat_get_xact_tuples_returned($1::text::regclass) \
                + coalesce(sum(pg_stat_get_xact_tuples_returned(i.indexrelid)), 0)::int8 \
         FROM pg_index i WHERE i.indrelid = $1::text::regclass",
        &[&table],
    )
    .await
    .unwrap()
    .get(0)
}

/// SQL queuing `count` tasks of [`APP`] straight into `tasklane.tasks` (the mirror's
/// insert trigger queues them too), numbered `g` from 1 over 100 scopes: `task_type`
/// and `priority` are SQL expressions over `g`, effect keys `{key}{g}`.
pub fn queue_sql(count: usize, task_type: &str, priority: &str, key: &str) -> String {
    format!(
        "INSERT INTO tasklane.tasks (id, app, scope_id, effect_key, task_type, \
           request_digest, input, priority, max_attempts, on_restart, privacy, \
           lease_seconds, attempt_timeout_seconds, event_seq) \
         SELECT tasklane.uuid_v7(), '{APP}', 's' || (g % 100), '{key}' || g, {task_type}, \
           '\\x00', '{{}}', ({priority})::int2, 3, 'retry', 'local_only', 30, 300, 1 \
         FROM generate_series(1, {count}) g;"
    )
}

/// A connection listening on `channel`, and the payloads it receives in order.
pub async fn listen(
    url: &str,
    channel: &str,
) -> (Client, tokio::sync::mpsc::UnboundedReceiver<String>) {
    let (client, mut connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(Ok(message)) = futures_util::StreamExt::next(&mut messages).await {
            if let tokio_postgres::AsyncMessage::Notification(n) = message {
                let _ = tx.send(n.payload().to_owned());
            }
        }
    });
    client
        .batch_execute(&format!("LISTEN {channel}"))
        .await
        .unwrap();
    (client, rx)
}

/// A group commit's batch settling each of `claimed` as a plain success, sorted by id
/// as the completer sends it.
pub fn successes(claimed: &[ClaimedTask]) -> Vec<tasklane::task::settlement::Completion> {
    let mut batch: Vec<_> = claimed
        .iter()
        .map(|task| tasklane::task::settlement::Completion {
            id: task.id,
            lease_token: task.lease_token,
            success: tasklane::task::settlement::Success::default(),
        })
        .collect();
    batch.sort_by_key(|completion| completion.id);
    batch
}
