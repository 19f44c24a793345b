//! The outbox's set-based statements (V15): the statement trigger writes one
//! notification per row that became terminal in a multi-row UPDATE and none for rows
//! that did not; the claim takes each endpoint up to its allowance, returns the targets,
//! and deletes rows whose endpoint is gone; one settle statement records a round of
//! mixed outcomes, each fenced on its own claim.

use std::time::Duration;

use crate::common;

use common::fixtures::*;
use tasklane::store::outbox::{self, ClaimLimits, Claimed, Settlement};
use tasklane::store::webhooks;
use tasklane::task::owner::Owner;
use tokio_postgres::Client;
use uuid::Uuid;

const ALL: [&str; 3] = ["task.succeeded", "task.failed", "task.cancelled"];

async fn endpoint(c: &Client, app: &str, name: &str) -> Uuid {
    let events: Vec<String> = ALL.iter().map(|e| e.to_string()).collect();
    webhooks::upsert(c, app, name, "http://127.0.0.1:9/", &events)
        .await
        .unwrap()
        .id
}

/// `count` cancelled tasks of APP, so `count` notifications per endpoint; their ids.
async fn cancelled(c: &Client, prefix: &str, count: usize) -> Vec<Uuid> {
    let owner = Owner::app(APP);
    let mut ids = Vec::new();
    for n in 0..count {
        let t = submit(c, &format!("{prefix}-{n}"), serde_json::json!({})).await;
        tasklane::store::cancel::cancel(c, &owner, t.id)
            .await
            .unwrap();
        ids.push(t.id);
    }
    ids
}

fn limits(max: i64, default_allowance: i64, allowance: Vec<(Uuid, i64)>) -> ClaimLimits {
    ClaimLimits {
        max,
        default_allowance,
        claim_for: Duration::from_secs(60),
        allowance,
    }
}

async fn claim(db: &common::TestDb, limits: &ClaimLimits) -> Vec<Claimed> {
    let client = db.pool.get().await.unwrap();
    outbox::claim(&client, limits, None).await.unwrap().rows
}

#[tokio::test]
async fn one_statement_notifies_each_row_that_became_terminal_and_no_other() {
    let db = common::test_db().await;
    let c = db.client().await;
    let all = endpoint(&c, APP, "all").await;
    let queued: Vec<Uuid> = {
        let mut ids = Vec::new();
        for n in 0..3 {
            ids.push(submit(&c, &format!("q{n}"), serde_json::json!({})).await.id);
        }
        ids
    };
    let done = cancelled(&c, "done", 1).await;
    assert_eq!(
        count(&c, "SELECT count(*) FROM tasklane.webhook_deliveries").await,
        1
    );
    // Two queued rows become terminal; one stays queued; an already terminal row is
    // written again: one statement, two notifications.
    let terminal = vec![queued[0], queued[1], done[0]];
    c.execute(
        "UPDATE tasklane.tasks SET state = 'cancelled', finished_at = now(),
                event_seq = event_seq + 1
         WHERE id = ANY($1)",
        &[&terminal],
    )
    .await
    .unwrap();
    c.execute(
        "UPDATE tasklane.tasks SET priority = 1 WHERE id = $1",
        &[&queued[2]],
    )
    .await
    .unwrap();
    let rows = c
        .query(
            "SELECT task_id, endpoint_id, event FROM tasklane.webhook_deliveries
             ORDER BY task_id",
            &[],
        )
        .await
        .unwrap();
    let mut got: Vec<(Uuid, Uuid, String)> = rows
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    got.sort();
    let mut wanted: Vec<(Uuid, Uuid, String)> = [queued[0], queued[1], done[0]]
        .into_iter()
        .map(|t| (t, all, "task.cancelled".to_owned()))
        .collect();
    wanted.sort();
    assert_eq!(got, wanted);
}

#[tokio::test]
async fn with_every_endpoint_disabled_a_terminal_statement_writes_nothing() {
    let db = common::test_db().await;
    let c = db.client().await;
    endpoint(&c, APP, "off").await;
    c.execute("UPDATE tasklane.webhook_endpoints SET disabled = true", &[])
        .await
        .unwrap();
    cancelled(&c, "t", 2).await;
    assert_eq!(
        count(&c, "SELECT count(*) FROM tasklane.webhook_deliveries").await,
        0
    );
}

#[tokio::test]
async fn the_claim_takes_each_listed_endpoint_up_to_its_allowance_and_others_the_window() {
    let db = common::test_db().await;
    let c = db.client().await;
    let a = endpoint(&c, APP, "a").await;
    let b = endpoint(&c, APP, "b").await;
    webhooks::rotate_secret(&c, a, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
        .await
        .unwrap();
    cancelled(&c, "t", 5).await;
    // Window 3: a may take 2 more (its window less what the replica holds); b is not
    // listed, so 3 of b.
    let claimed = claim(&db, &limits(10, 3, vec![(a, 2)])).await;
    let of = |e: Uuid| claimed.iter().filter(|r| r.endpoint_id == e).count();
    assert_eq!((of(a), of(b)), (2, 3));
    let row = claimed.iter().find(|r| r.endpoint_id == a).unwrap();
    assert_eq!(row.target.url, "http://127.0.0.1:9/");
    assert!(!row.target.disabled);
    assert_eq!(
        row.target.secrets,
        vec!["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".to_owned()]
    );
    assert!(claimed.iter().all(|r| r.attempts == 1));
    // The claimed rows are not due again while the claim holds; the rest are.
    let again = claim(&db, &limits(10, 10, vec![])).await;
    assert_eq!(again.len(), 10 - 5);
    assert!(again.iter().all(|r| !claimed.iter().any(|c| c.id == r.id)));
}

/// The claim finds its rows again by id (`id = ANY (ARRAY(...))`), never by scanning
/// the outbox: joined to its candidates, the planner hashed a scan of the whole table
/// or of every due row into a claim, depending on the outbox's size (13.7 ms a claim
/// beside 60,000 rows, against 3.2 ms by id). 1,500 due and 1,500 delivered rows,
/// analyzed, where the joined claim read 4,760 rows: a claim of 64 reads its candidates
/// (four times its limit) and its rows, not the outbox.
#[tokio::test]
async fn the_claim_reads_its_candidates_not_the_outbox() {
    let db = common::test_db().await;
    let c = db.client().await;
    let id = endpoint(&c, APP, "long").await;
    c.batch_execute(&format!(
        "INSERT INTO tasklane.webhook_deliveries \
           (endpoint_id, app, scope_id, task_id, event, status, finished_at) \
         SELECT '{id}', '{APP}', '{SCOPE}', gen_random_uuid(), 'task.succeeded', \
           CASE WHEN g % 2 = 0 THEN 'delivered' ELSE 'pending' END, \
           CASE WHEN g % 2 = 0 THEN now() END \
         FROM generate_series(1, 3000) g; \
         ANALYZE tasklane.webhook_deliveries;"
    ))
    .await
    .unwrap();
    let mut client = db.pool.get().await.unwrap();
    let tx = client.transaction().await.unwrap();
    let claimed = outbox::claim(&tx, &limits(64, 64, vec![]), None)
        .await
        .unwrap()
        .rows;
    let read = rows_read(&*tx, "tasklane.webhook_deliveries").await;
    tx.rollback().await.unwrap();
    assert_eq!(claimed.len(), 64);
    assert!(read <= 1_000, "the claim read {read} outbox rows");
}

#[tokio::test]
async fn a_notification_whose_endpoint_is_gone_is_deleted_by_the_claim() {
    let db = common::test_db().await;
    let c = db.client().await;
    let kept = endpoint(&c, APP, "kept").await;
    cancelled(&c, "t", 1).await;
    // What a terminal transition racing the endpoint's deletion leaves behind.
    c.execute(
        "INSERT INTO tasklane.webhook_deliveries (endpoint_id, app, scope_id, task_id, event)
         VALUES (gen_random_uuid(), $1, $2, gen_random_uuid(), 'task.succeeded')",
        &[&APP, &SCOPE],
    )
    .await
    .unwrap();
    let claimed = claim(&db, &limits(10, 10, vec![])).await;
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].endpoint_id, kept);
    assert_eq!(
        count(&c, "SELECT count(*) FROM tasklane.webhook_deliveries").await,
        1,
        "the orphan is gone"
    );
}

#[tokio::test]
async fn deleting_an_endpoint_deletes_its_deliveries() {
    let db = common::test_db().await;
    let c = db.client().await;
    let gone = endpoint(&c, APP, "gone").await;
    let kept = endpoint(&c, APP, "kept").await;
    cancelled(&c, "t", 2).await;
    assert!(webhooks::delete(&c, APP, "gone").await.unwrap());
    let left = c
        .query(
            "SELECT DISTINCT endpoint_id FROM tasklane.webhook_deliveries",
            &[],
        )
        .await
        .unwrap();
    let left: Vec<Uuid> = left.iter().map(|r| r.get(0)).collect();
    assert_eq!(left, vec![kept]);
    assert_ne!(gone, kept);
}

#[tokio::test]
async fn one_settle_records_a_round_of_mixed_outcomes_each_fenced_on_its_claim() {
    let db = common::test_db().await;
    let c = db.client().await;
    endpoint(&c, APP, "all").await;
    cancelled(&c, "t", 4).await;
    let claimed = claim(&db, &limits(10, 10, vec![])).await;
    assert_eq!(claimed.len(), 4);
    let mut outcomes = vec![
        (
            claimed[0].id,
            claimed[0].claim_token,
            Settlement::Delivered { status: 204 },
        ),
        (
            claimed[1].id,
            claimed[1].claim_token,
            Settlement::Retry {
                after: Duration::from_secs(300),
                status: Some(500),
                error: Some("HTTP 500".into()),
            },
        ),
        (
            claimed[2].id,
            claimed[2].claim_token,
            Settlement::Failed {
                status: Some(400),
                error: Some("HTTP 400".into()),
            },
        ),
        // A claim that no longer holds (another replica took the row): no effect.
        (
            claimed[3].id,
            Uuid::new_v4(),
            Settlement::Delivered { status: 200 },
        ),
    ];
    let client = db.pool.get().await.unwrap();
    let held = outbox::settle_many(&client, &mut outcomes).await.unwrap();
    assert_eq!(held, 3);
    let state = |id: Uuid| {
        let c = &c;
        async move {
            let row = c
                .query_one(
                    "SELECT status, last_status, claim_token IS NULL AS settled,
                            next_attempt_at > now() + interval '200 seconds' AS later
                     FROM tasklane.webhook_deliveries WHERE id = $1",
                    &[&id],
                )
                .await
                .unwrap();
            (
                row.get::<_, String>(0),
                row.get::<_, Option<i32>>(1),
                row.get::<_, bool>(2),
                row.get::<_, bool>(3),
            )
        }
    };
    assert_eq!(
        state(claimed[0].id).await,
        ("delivered".into(), Some(204), true, false)
    );
    assert_eq!(
        state(claimed[1].id).await,
        ("pending".into(), Some(500), true, true),
        "retried after the delay given"
    );
    assert_eq!(
        state(claimed[2].id).await,
        ("failed".into(), Some(400), true, false)
    );
    assert_eq!(
        state(claimed[3].id).await,
        ("pending".into(), None, false, false),
        "the stale outcome changed nothing"
    );
}

/// V21: a claim writes only columns no index names, so it is a HOT update (the outbox's
/// share of the drain); the claimed rows wait until their claim runs out, then are due
/// again with a new token, and the old token's outcome changes nothing.
#[tokio::test]
async fn the_claim_is_a_hot_update_and_a_claim_that_ran_out_is_due_again() {
    let db = common::test_db().await;
    let c = db.client().await;
    endpoint(&c, APP, "all").await;
    cancelled(&c, "t", 20).await;
    let client = db.pool.get().await.unwrap();
    let counters =
        "SELECT pg_stat_get_xact_tuples_updated('tasklane.webhook_deliveries'::regclass), \
                    pg_stat_get_xact_tuples_hot_updated('tasklane.webhook_deliveries'::regclass)";
    client.batch_execute("BEGIN").await.unwrap();
    let first = outbox::claim(&client, &limits(20, 20, vec![]), None)
        .await
        .unwrap()
        .rows;
    let row = client.query_one(counters, &[]).await.unwrap();
    client.batch_execute("COMMIT").await.unwrap();
    assert_eq!(first.len(), 20);
    assert_eq!(
        (row.get::<_, i64>(0), row.get::<_, i64>(1)),
        (20, 20),
        "every claim was HOT"
    );
    assert!(claim(&db, &limits(20, 20, vec![])).await.is_empty());
    // Half of the claims run out.
    let lapsed: Vec<Uuid> = first.iter().take(10).map(|r| r.id).collect();
    c.execute(
        "UPDATE tasklane.webhook_deliveries SET claimed_until = now() - interval '1 second'
         WHERE id = ANY($1)",
        &[&lapsed],
    )
    .await
    .unwrap();
    let again = claim(&db, &limits(20, 20, vec![])).await;
    let mut ids: Vec<Uuid> = again.iter().map(|r| r.id).collect();
    ids.sort();
    let mut wanted = lapsed.clone();
    wanted.sort();
    assert_eq!(ids, wanted);
    assert!(again.iter().all(|r| r.attempts == 2));
    let mut stale = vec![(
        first[0].id,
        first[0].claim_token,
        Settlement::Delivered { status: 204 },
    )];
    assert_eq!(outbox::settle_many(&client, &mut stale).await.unwrap(), 0);
}

/// The pruner reads each endpoint's log by id (V21: no index on finished_at): delivered
/// and failed rows finished before the retention go, of every endpoint; pending rows and
/// rows finished within it stay, whatever their age.
#[tokio::test]
async fn the_pruner_deletes_finished_rows_past_the_retention_of_every_endpoint() {
    let db = common::test_db().await;
    let c = db.client().await;
    endpoint(&c, APP, "a").await;
    endpoint(&c, APP, "b").await;
    let tasks = cancelled(&c, "t", 4).await;
    // Written ten days ago (the id's timestamp too, as the writer's clock made it), then:
    // tasks[0] delivered and tasks[1] failed nine days ago, tasks[2] still pending,
    // tasks[3] delivered an hour ago after its retries.
    c.execute(
        "UPDATE tasklane.webhook_deliveries
         SET id = encode(substring(int8send((extract(epoch FROM now() - interval '10 days')
                                             * 1000)::bigint) FROM 3)
                         || substring(uuid_send(id) FROM 7), 'hex')::uuid,
             created_at = now() - interval '10 days'",
        &[],
    )
    .await
    .unwrap();
    for (task, status, ago) in [
        (tasks[0], "delivered", "9 days"),
        (tasks[1], "failed", "9 days"),
        (tasks[3], "delivered", "1 hour"),
    ] {
        c.execute(
            "UPDATE tasklane.webhook_deliveries
             SET status = $2, finished_at = now() - $3::text::interval
             WHERE task_id = $1",
            &[&task, &status, &ago],
        )
        .await
        .unwrap();
    }
    let day = Duration::from_secs(86_400);
    let pruned = outbox::prune(&c, day, 3, None).await.unwrap();
    assert_eq!(pruned.count, 3, "at most the limit");
    // A pass from where the first got to finds the one left after it.
    let rest = outbox::prune(&c, day, 100, pruned.reached).await.unwrap();
    assert_eq!(rest.count, 1);
    assert!(rest.reached > pruned.reached, "{rest:?} after {pruned:?}");
    assert_eq!(outbox::prune(&c, day, 100, None).await.unwrap().count, 0);
    let rows = c
        .query(
            "SELECT task_id, count(*) FROM tasklane.webhook_deliveries
             GROUP BY task_id ORDER BY task_id",
            &[],
        )
        .await
        .unwrap();
    let mut left: Vec<(Uuid, i64)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    left.sort();
    let mut wanted = vec![(tasks[2], 2), (tasks[3], 2)];
    wanted.sort();
    assert_eq!(left, wanted);
}

/// A row released unsent (its turn came too late for its claim) is due again at once,
/// its attempt not counted and its last answer kept; the release is fenced on the claim
/// like any outcome.
#[tokio::test]
async fn a_released_row_is_due_again_at_once_with_its_attempt_taken_back() {
    let db = common::test_db().await;
    let c = db.client().await;
    endpoint(&c, APP, "all").await;
    cancelled(&c, "t", 2).await;
    let first = claim(&db, &limits(10, 10, vec![])).await;
    assert_eq!(first.len(), 2);
    let client = db.pool.get().await.unwrap();
    let mut retried = vec![(
        first[0].id,
        first[0].claim_token,
        Settlement::Retry {
            after: Duration::ZERO,
            status: Some(503),
            error: Some("HTTP 503".into()),
        },
    )];
    assert_eq!(outbox::settle_many(&client, &mut retried).await.unwrap(), 1);
    let second = claim(&db, &limits(10, 10, vec![])).await;
    assert_eq!(second.len(), 1);
    assert_eq!((second[0].id, second[0].attempts), (first[0].id, 2));
    let mut released = vec![
        (second[0].id, second[0].claim_token, Settlement::Released),
        (first[1].id, Uuid::new_v4(), Settlement::Released),
    ];
    assert_eq!(
        outbox::settle_many(&client, &mut released).await.unwrap(),
        1,
        "only the release holding the claim counts"
    );
    let row = c
        .query_one(
            "SELECT status, attempts, last_status, claim_token IS NULL,
                    claimed_until IS NULL, finished_at IS NULL
             FROM tasklane.webhook_deliveries WHERE id = $1",
            &[&first[0].id],
        )
        .await
        .unwrap();
    assert_eq!(
        (
            row.get::<_, String>(0),
            row.get::<_, i32>(1),
            row.get::<_, Option<i32>>(2),
            row.get::<_, bool>(3),
            row.get::<_, bool>(4),
            row.get::<_, bool>(5),
        ),
        ("pending".into(), 1, Some(503), true, true, true)
    );
    let third = claim(&db, &limits(10, 10, vec![])).await;
    assert_eq!(
        third.len(),
        1,
        "due again at once; the other is still claimed"
    );
    assert_eq!((third[0].id, third[0].attempts), (first[0].id, 2));
}

/// A batch settle asked to claim (V31, the hand-off to the replica's own deliverer)
/// writes its notifications claimed and returns them, leaves those of a busy endpoint
/// unclaimed, and NOTIFYs only for those: a deliverer woken for a claimed row would
/// find nothing. Another deliverer's claim skips the claimed rows until the claim runs
/// out.
#[tokio::test]
async fn a_batch_settle_claims_its_notifications_for_its_replica_except_a_busy_endpoints() {
    use tasklane::store::complete_many::{complete_many, NotificationClaim};
    let db = common::test_db().await;
    let c = db.client().await;
    let free = endpoint(&c, APP, "free").await;
    let busy = endpoint(&c, APP, "busy").await;
    let mut tasks = Vec::new();
    for n in 0..3 {
        tasks.push(submit(&c, &format!("t{n}"), serde_json::json!({})).await.id);
    }
    let claimed = common::fixtures::claim(&c, 3).await;
    assert_eq!(claimed.len(), 3);
    let (_listener, mut wakeups) = listen(&db.url, outbox::WEBHOOKS_CHANNEL).await;

    let token = Uuid::new_v4();
    let object = db.pool.get().await.unwrap();
    let mut batch = successes(&claimed);
    batch.sort_by_key(|c| c.id);
    let busy_list = [busy];
    let settled = complete_many(
        &object,
        &batch,
        Some(NotificationClaim {
            token,
            claim_for: Duration::from_secs(30),
            busy: &busy_list,
        }),
    )
    .await
    .unwrap();
    assert!(settled.answers.iter().all(Result::is_ok));
    let mut handed: Vec<(Uuid, Uuid)> = settled
        .claimed
        .iter()
        .map(|n| (n.task_id, n.endpoint_id))
        .collect();
    handed.sort();
    let mut wanted: Vec<(Uuid, Uuid)> = tasks.iter().map(|t| (*t, free)).collect();
    wanted.sort();
    assert_eq!(handed, wanted, "the free endpoint's rows, each task once");

    let rows = c
        .query(
            "SELECT id, endpoint_id, attempts, claim_token,
                    extract(epoch FROM claimed_until - now())::float8, created_at
             FROM tasklane.webhook_deliveries",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(rows.len(), 6);
    for row in &rows {
        let endpoint: Uuid = row.get(1);
        let (attempts, claim): (i32, Option<Uuid>) = (row.get(2), row.get(3));
        let left: Option<f64> = row.get(4);
        if endpoint == free {
            assert_eq!(
                (attempts, claim),
                (1, Some(token)),
                "claimed, attempt counted"
            );
            let left = left.unwrap();
            assert!(left > 0.0 && left <= 30.0, "claimed for 30 s: {left}");
            let id: Uuid = row.get(0);
            let returned = settled.claimed.iter().find(|n| n.id == id).unwrap();
            assert_eq!(
                returned.created_at,
                row.get::<_, chrono::DateTime<chrono::Utc>>(5)
            );
        } else {
            assert_eq!(
                (attempts, claim, left),
                (0, None, None),
                "left to any deliverer"
            );
        }
    }
    // The busy endpoint's rows woke the deliverers (once: one transaction).
    c.execute("NOTIFY tasklane_webhooks, 'marker'", &[])
        .await
        .unwrap();
    assert_eq!(wakeups.recv().await.unwrap(), "");
    assert_eq!(wakeups.recv().await.unwrap(), "marker");

    // Another deliverer finds only the busy endpoint's rows.
    let others = claim(&db, &limits(10, 10, vec![])).await;
    assert!(others.iter().all(|r| r.endpoint_id == busy), "{others:?}");
    assert_eq!(others.len(), 3);
}

/// Settled with every row claimed, the statement sends no wake-up at all.
#[tokio::test]
async fn a_batch_settle_whose_rows_are_all_claimed_wakes_no_deliverer() {
    use tasklane::store::complete_many::{complete_many, NotificationClaim};
    let db = common::test_db().await;
    let c = db.client().await;
    endpoint(&c, APP, "free").await;
    submit(&c, "t", serde_json::json!({})).await;
    let claimed = common::fixtures::claim(&c, 1).await;
    let (_listener, mut wakeups) = listen(&db.url, outbox::WEBHOOKS_CHANNEL).await;
    let object = db.pool.get().await.unwrap();
    let settled = complete_many(
        &object,
        &successes(&claimed),
        Some(NotificationClaim {
            token: Uuid::new_v4(),
            claim_for: Duration::from_secs(30),
            busy: &[],
        }),
    )
    .await
    .unwrap();
    assert_eq!(settled.claimed.len(), 1);
    c.execute("NOTIFY tasklane_webhooks, 'marker'", &[])
        .await
        .unwrap();
    assert_eq!(
        wakeups.recv().await.unwrap(),
        "marker",
        "no wake-up before it"
    );
}

/// Notifications of one endpoint, written and due `seconds_ago` seconds ago (the rows a
/// terminal move writes are due at its transaction's start); their ids in due order.
async fn due_ago(c: &Client, endpoint: Uuid, seconds_ago: &[i64]) -> Vec<Uuid> {
    let mut ids = Vec::new();
    for ago in seconds_ago {
        let row = c
            .query_one(
                "INSERT INTO tasklane.webhook_deliveries \
                   (endpoint_id, app, scope_id, task_id, event, created_at, \
                    next_attempt_at) \
                 SELECT $1, $2, $3, gen_random_uuid(), 'task.succeeded', at, at \
                 FROM (SELECT now() - $4 * interval '1 second' AS at) a \
                 RETURNING id",
                &[&endpoint, &APP, &SCOPE, &(*ago as f64)],
            )
            .await
            .unwrap();
        ids.push(row.get(0));
    }
    ids
}

/// The deliverer's claims read the due index from where the rows still pending begin
/// (`Start::pending`), so no pending row is ever behind the start: one left for its
/// endpoint's window, or claimed by a deliverer that died, keeps the start at it
/// while rows after it are claimed and delivered, and the claim that may take it
/// finds it. The start then moves past what was delivered.
#[tokio::test]
async fn the_deliverers_start_never_passes_a_pending_row() {
    use tasklane::maintenance::start::Start;
    let db = common::test_db().await;
    let c = db.client().await;
    let slow = endpoint(&c, APP, "slow").await;
    let fast = endpoint(&c, APP, "fast").await;
    let start = Start::default();
    let client = db.pool.get().await.unwrap();
    let claim = |allowance: Vec<(Uuid, i64)>| {
        let (client, start) = (&client, &start);
        async move {
            let from = start.next(std::time::Instant::now());
            let claim = outbox::claim(client, &limits(10, 10, allowance), from)
                .await
                .unwrap();
            start.pending(claim.clock.unwrap(), claim.pending_from);
            let mut ids: Vec<Uuid> = claim.rows.iter().map(|r| r.id).collect();
            ids.sort();
            (claim.rows, ids, from)
        }
    };
    let delivered = |rows: Vec<Claimed>| {
        let client = &client;
        async move {
            let mut outcomes: Vec<_> = rows
                .iter()
                .map(|r| (r.id, r.claim_token, Settlement::Delivered { status: 204 }))
                .collect();
            outbox::settle_many(client, &mut outcomes).await.unwrap()
        }
    };
    let sorted = |mut ids: Vec<Uuid>| {
        ids.sort();
        ids
    };

    // An hour ago: one row of the slow endpoint, whose window is full; then the fast
    // endpoint's rows after it, claimed and delivered round after round.
    let left = due_ago(&c, slow, &[3_600]).await[0];
    let mut behind = None;
    for round in 0..3 {
        let fast_rows = due_ago(&c, fast, &[3_000 - round * 600, 2_900 - round * 600]).await;
        let (rows, ids, from) = claim(vec![(slow, 0)]).await;
        assert_eq!(ids, sorted(fast_rows), "round {round}");
        if round > 0 {
            assert!(
                from.is_some(),
                "round {round} starts where the rows pending begin"
            );
            behind = from;
        }
        assert_eq!(delivered(rows).await, 2);
    }
    let behind = behind.unwrap();
    let (rows, ids, from) = claim(vec![]).await;
    assert_eq!(from, Some(behind), "the left row kept the start");
    assert_eq!(ids, vec![left], "the window free, the left row is claimed");

    // Claimed by a deliverer that dies: the start stays at it until its claim runs out.
    let later = due_ago(&c, fast, &[1_000]).await;
    let (fast_rows, ids, from) = claim(vec![]).await;
    assert_eq!((ids, from), (later, Some(behind)));
    assert_eq!(delivered(fast_rows).await, 1);
    c.execute(
        "UPDATE tasklane.webhook_deliveries SET claimed_until = now() - interval '1 second' \
         WHERE id = $1",
        &[&left],
    )
    .await
    .unwrap();
    let (again, ids, from) = claim(vec![]).await;
    assert_eq!((ids, from), (vec![left], Some(behind)), "its claim ran out");
    assert_eq!((again[0].attempts, rows[0].attempts), (2, 1));
    assert_eq!(delivered(again).await, 1);

    // Nothing pending: the start moves to a margin before the clock, past every row
    // delivered.
    let (rows, _, from) = claim(vec![]).await;
    assert!(rows.is_empty() && from == Some(behind));
    let clock = tasklane::store::clock::now(&c).await.unwrap();
    let (_, _, from) = claim(vec![]).await;
    let from = from.unwrap();
    assert!(
        from > clock - chrono::Duration::seconds(60) && from <= clock,
        "{from} against the clock {clock}"
    );
}

/// The overview's gauges count the pending rows from where the deliverer's claims start
/// (none pending is behind it) and the failed ones from their own index, not from the
/// delivered rows of the log.
#[tokio::test]
async fn the_overview_counts_pending_rows_from_a_start_and_failed_ones_by_their_index() {
    let db = common::test_db().await;
    let c = db.client().await;
    let id = endpoint(&c, APP, "counted").await;
    due_ago(&c, id, &[3_600, 60]).await;
    c.batch_execute(&format!(
        "INSERT INTO tasklane.webhook_deliveries \
           (endpoint_id, app, scope_id, task_id, event, status, finished_at) \
         SELECT '{id}', '{APP}', '{SCOPE}', gen_random_uuid(), 'task.succeeded', \
           CASE WHEN g = 1 THEN 'failed' ELSE 'delivered' END, now() \
         FROM generate_series(1, 500) g; \
         ANALYZE tasklane.webhook_deliveries;"
    ))
    .await
    .unwrap();
    let all = outbox::overview(&c, None).await.unwrap();
    assert_eq!((all.pending, all.failed), (2, 1));
    assert!(
        all.oldest_pending_seconds >= 3_600,
        "{}",
        all.oldest_pending_seconds
    );
    let clock = tasklane::store::clock::now(&c).await.unwrap();
    let recent = outbox::overview(&c, Some(clock - chrono::Duration::seconds(120)))
        .await
        .unwrap();
    assert_eq!((recent.pending, recent.failed), (1, 1));
    assert!(recent.oldest_pending_seconds < 3_600);
    let plan: Vec<String> = c
        .query(
            "EXPLAIN SELECT count(*) FROM tasklane.webhook_deliveries WHERE status = 'failed'",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    let plan = plan.join("\n");
    assert!(
        plan.contains("webhook_deliveries_failed"),
        "the failed rows are counted from their index:\n{plan}"
    );
}
