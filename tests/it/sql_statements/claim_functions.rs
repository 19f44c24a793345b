//! The claim's functions (`tasklane.claim_local` and the others, migration V44), which
//! replicas behind a pooler in transaction mode call instead of the rendered statements:
//! each runs its variant's text verbatim, with the claim pool's planner settings, and
//! plans as the claim pool's sessions plan it. A change to `sql/claim.sql` fails the
//! first test until a migration replaces the functions with the new text.

use futures_util::StreamExt;
use tasklane::store::claim::VARIANTS;
use tasklane::store::lease;
use tasklane::task::lease::{Lease, LeaseStatus};
use tokio_postgres::AsyncMessage;

use super::common;
use super::plans::backlog;
use common::fixtures::TYPE;

/// Each function's body is `RETURN QUERY` and its variant's text, and its settings are
/// the claim pool's session settings (its own, then every pool's).
#[tokio::test]
async fn each_claim_function_runs_its_variant_as_the_claim_pool_plans_it() {
    let db = common::test_db().await;
    let c = db.client().await;
    let session: Vec<String> = [
        tasklane::store::connect::CLAIM_SESSION,
        tasklane::store::connect::EVERY_SESSION,
    ]
    .join(";")
    .split(';')
    .map(|set| {
        let set = set.trim().strip_prefix("SET ").expect("a SET");
        set.split('=').map(str::trim).collect::<Vec<_>>().join("=")
    })
    .collect();
    for (file, sql) in VARIANTS {
        let function = file.strip_suffix(".sql").unwrap();
        let row = c
            .query_one(
                "SELECT prosrc, proconfig FROM pg_proc \
                 WHERE proname = $1 AND pronamespace = 'tasklane'::regnamespace",
                &[&function],
            )
            .await
            .unwrap_or_else(|e| panic!("tasklane.{function}: {e}"));
        let (source, config): (String, Vec<String>) = (row.get(0), row.get(1));
        let body = source
            .split_once("RETURN QUERY\n")
            .and_then(|(_, rest)| rest.rsplit_once(";\nEND"))
            .map(|(statement, _)| statement);
        assert_eq!(
            body,
            Some(sql.trim_end()),
            "tasklane.{function} does not run {file} as rendered from sql/claim.sql: \
             add a migration that replaces it with the rendered text"
        );
        assert_eq!(
            config, session,
            "tasklane.{function} plans as the claim pool"
        );
    }
}

/// A connection whose notices (auto_explain's plans, the planner's log) come back as
/// text: the message, then its detail if any.
pub(super) async fn hearing_notices(
    url: &str,
) -> (
    tokio_postgres::Client,
    tokio::sync::mpsc::UnboundedReceiver<String>,
) {
    let (client, mut connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(Ok(message)) = messages.next().await {
            if let AsyncMessage::Notice(notice) = message {
                let text = match notice.detail() {
                    Some(detail) => format!("{}\n{detail}", notice.message()),
                    None => notice.message().to_owned(),
                };
                let _ = tx.send(text);
            }
        }
    });
    (client, rx)
}

/// The short queue of `plans::a_claim_on_a_short_queue_reads_the_index_in_order`, claimed
/// through the function on a session that sets nothing (as behind a pooler): its
/// statement reads the claimable index in claim order, never by a bitmap scan, with the
/// generic plan the function keeps for the next call. The plans come from auto_explain
/// as notices.
#[tokio::test]
async fn a_claim_through_its_function_reads_the_index_in_order() {
    let db = common::test_db().await;
    let (mut c, mut notices) = hearing_notices(&db.url).await;
    c.batch_execute(&format!(
        "{} ANALYZE tasklane.tasks; ANALYZE tasklane.task_queue; \
         UPDATE tasklane.tasks SET state = 'running', attempt = 1, event_seq = 2, \
           lease_token = gen_random_uuid(), lease_expires_at = now() + interval '1 minute', \
           attempt_started_at = now() \
         WHERE id IN (SELECT id FROM tasklane.tasks ORDER BY id LIMIT 4960);",
        backlog("local_only", 5_000)
    ))
    .await
    .unwrap();
    c.batch_execute(
        "LOAD 'auto_explain'; SET auto_explain.log_min_duration = 0; \
         SET auto_explain.log_nested_statements = on; SET auto_explain.log_analyze = on; \
         SET auto_explain.log_timing = off; SET auto_explain.log_level = notice",
    )
    .await
    .unwrap();
    for _ in 0..2 {
        let tx = c.transaction().await.unwrap();
        let claimed = tx
            .query(
                "SELECT * FROM tasklane.claim_local_plain('{noop}', 'w', 10, NULL, NULL, NULL)",
                &[],
            )
            .await
            .unwrap();
        tx.rollback().await.unwrap();
        assert_eq!(claimed.len(), 10);
        let mut plans = Vec::new();
        while let Ok(notice) = notices.try_recv() {
            plans.push(notice);
        }
        let plan = plans
            .iter()
            .find(|plan| plan.contains("WITH picked AS"))
            .unwrap_or_else(|| panic!("no plan of the claim among:\n{}", plans.join("\n")));
        // auto_explain prints costs too: the claimed CTE's line, whatever its estimate.
        let claimed_ten = plan.lines().any(|line| {
            line.contains("CTE Scan on claimed") && line.contains("(actual rows=10 loops=1)")
        });
        assert!(
            plan.contains("Index Scan using task_queue_claimable on task_queue")
                && !plan.contains("Bitmap")
                && claimed_ten,
            "the claim reads the claimable index in order:\n{plan}"
        );
    }
}

/// Claims up to 10 tasks of the fixtures' type through `tasklane.claim_local_plain`, as a
/// session that sets nothing does behind a pooler.
pub(super) async fn claim_plain(c: &tokio_postgres::Client) -> Vec<Lease> {
    let claim = format!(
        "SELECT id, lease_token FROM tasklane.claim_local_plain('{{{TYPE}}}', 'w', 10, NULL, NULL, NULL)"
    );
    c.query(&claim, &[])
        .await
        .unwrap()
        .iter()
        .map(|row| Lease {
            id: row.get(0),
            lease_token: row.get(1),
        })
        .collect()
}

/// Claims through [`claim_plain`], expecting `expected` tasks, and heartbeats them in one
/// batch (through the mirror's update trigger); every lease is extended.
pub(super) async fn claim_and_beat(c: &tokio_postgres::Client, expected: usize) {
    let leases = claim_plain(c).await;
    assert_eq!(leases.len(), expected);
    let beats = lease::extend_many(c, &leases).await.unwrap();
    assert!(beats
        .iter()
        .all(|b| matches!(b, LeaseStatus::Extended { .. })));
}
