//! Fair turns: a claim shares each priority level among apps by weight and, within an
//! app, among its usage subjects, so one tenant's backlog never holds back another's
//! fresh task. The claims here are the real claim statement on a real PostgreSQL; the
//! last test drains a backlog on a worker replica process with two claim loops.

use crate::common;

use std::collections::HashMap;
use std::time::Duration;

use common::eventually;
use common::fixtures::*;
use common::serve::Serve;
use uuid::Uuid;

/// Queues `count` tasks of `app` (and `subject`, NULL when none) in one statement, as a
/// batch submit does: they take consecutive turns.
async fn queue(
    c: &tokio_postgres::Client,
    app: &str,
    subject: Option<&str>,
    count: usize,
    key: &str,
) {
    let subject = subject.map_or("NULL".to_owned(), |s| format!("'{s}'"));
    c.batch_execute(&format!(
        "INSERT INTO tasklane.tasks (id, app, scope_id, effect_key, usage_subject, task_type, \
           request_digest, input, max_attempts, on_restart, privacy, lease_seconds, \
           attempt_timeout_seconds, event_seq) \
         SELECT tasklane.uuid_v7(), '{app}', 's', '{key}' || g, {subject}, '{TYPE}', '\\x00', \
           '{{}}', 3, 'retry', 'local_only', 30, 300, 1 \
         FROM generate_series(1, {count}) g;"
    ))
    .await
    .unwrap();
}

/// Submits one task of `app` through the submit door, as a client's single submit.
async fn submit_one(
    c: &tokio_postgres::Client,
    app: &str,
    subject: Option<&str>,
    key: &str,
) -> Uuid {
    let mut r = request(key, serde_json::json!({}));
    r.usage_subject = subject.map(str::to_owned);
    let task = r
        .resolve(app, &task_type(), 1 << 20)
        .expect("valid request");
    c.batch_execute("BEGIN").await.unwrap();
    let submitted = tasklane::service::submit_in(c, &task)
        .await
        .expect("submit");
    c.batch_execute("COMMIT").await.unwrap();
    submitted.task.id
}

/// The app and usage subject ('' for none) of each claimed task.
async fn owners(c: &tokio_postgres::Client, ids: &[Uuid]) -> Vec<(String, String)> {
    let rows = c
        .query(
            "SELECT t.app, coalesce(t.usage_subject, '') \
             FROM unnest($1::uuid[]) WITH ORDINALITY AS i(id, n) \
             JOIN tasklane.tasks t ON t.id = i.id ORDER BY i.n",
            &[&ids],
        )
        .await
        .unwrap();
    rows.iter().map(|r| (r.get(0), r.get(1))).collect()
}

/// Claims `rounds` times `limit` tasks and counts them by (app, subject).
async fn claimed_counts(
    c: &tokio_postgres::Client,
    rounds: usize,
    limit: i64,
) -> HashMap<(String, String), usize> {
    let mut counts = HashMap::new();
    for _ in 0..rounds {
        let ids: Vec<Uuid> = claim(c, limit).await.iter().map(|t| t.id).collect();
        assert_eq!(ids.len() as i64, limit, "every tenant still has a backlog");
        for owner in owners(c, &ids).await {
            *counts.entry(owner).or_default() += 1;
        }
    }
    counts
}

fn claimed_by(counts: &HashMap<(String, String), usize>, app: &str, subject: &str) -> usize {
    counts
        .get(&(app.to_owned(), subject.to_owned()))
        .copied()
        .unwrap_or(0)
}

/// `got` is `want` within 10%.
fn near(got: usize, want: usize, what: &str) {
    let (got_f, want_f) = (got as f64, want as f64);
    assert!(
        (got_f - want_f).abs() <= want_f * 0.10,
        "{what}: {got} claimed, {want} expected within 10%"
    );
}

#[tokio::test]
async fn a_backlog_of_one_app_does_not_hold_back_another_apps_fresh_task() {
    let db = common::test_db().await;
    let c = db.client().await;
    queue(&c, "big", None, 20_000, "big-").await;
    for i in 0..20 {
        let small = submit_one(&c, "small", None, &format!("small-{i}")).await;
        let claimed: Vec<Uuid> = claim(&c, 100).await.iter().map(|t| t.id).collect();
        assert_eq!(claimed.len(), 100);
        assert!(
            claimed.contains(&small),
            "round {i}: the small app's task waited behind the big app's backlog"
        );
    }
    // The big app kept its place: its tasks went in the order they were queued.
    let left: i64 = count(
        &c,
        "SELECT count(*) FROM tasklane.tasks WHERE app = 'big' AND state = 'queued'",
    )
    .await;
    assert_eq!(left, 20_000 - 20 * 99);
}

#[tokio::test]
async fn within_an_app_a_subjects_backlog_does_not_hold_back_another_subjects_task() {
    let db = common::test_db().await;
    let c = db.client().await;
    queue(&c, APP, Some("heavy-user"), 5_000, "heavy-").await;
    for i in 0..10 {
        let light = submit_one(&c, APP, Some("light-user"), &format!("light-{i}")).await;
        let claimed: Vec<Uuid> = claim(&c, 50).await.iter().map(|t| t.id).collect();
        assert!(
            claimed.contains(&light),
            "round {i}: the light user's task waited"
        );
    }
    // Tasks without a subject share one turn: a single one is not held back either.
    let anonymous = submit_one(&c, APP, None, "anonymous").await;
    let claimed: Vec<Uuid> = claim(&c, 50).await.iter().map(|t| t.id).collect();
    assert!(claimed.contains(&anonymous));
}

#[tokio::test]
async fn weights_share_the_claims_between_backlogged_apps() {
    let db = common::test_db().await;
    let c = db.client().await;
    // Stored as `PUT /v1/admin/apps/heavy/weight` stores it.
    tasklane::store::app_weights::set_weight(&c, "heavy", 3)
        .await
        .unwrap();
    // Queued in turns, as two apps submitting batches at the same time would.
    for part in 0..3 {
        queue(&c, "heavy", None, 3_000, &format!("h{part}-")).await;
        queue(&c, "light", None, 1_000, &format!("l{part}-")).await;
    }
    // Claims of 100, then claims of 1 (a saturated worker freeing one slot at a time).
    for (rounds, limit) in [(40, 100), (400, 1)] {
        let counts = claimed_counts(&c, rounds, limit).await;
        let total = rounds * limit as usize;
        near(claimed_by(&counts, "heavy", ""), total * 3 / 4, "weight 3");
        near(claimed_by(&counts, "light", ""), total / 4, "weight 1");
    }
}

#[tokio::test]
async fn an_apps_subjects_share_its_turns_so_apps_stay_even() {
    let db = common::test_db().await;
    let c = db.client().await;
    queue(&c, "solo", None, 4_000, "solo-").await;
    // Four users of one app queue at once (one statement), like a batch submit.
    c.batch_execute(
        "INSERT INTO tasklane.tasks (id, app, scope_id, effect_key, usage_subject, task_type, \
           request_digest, input, max_attempts, on_restart, privacy, lease_seconds, \
           attempt_timeout_seconds, event_seq) \
         SELECT tasklane.uuid_v7(), 'crowd', 's', 'k' || g, 'user-' || (g % 4), 'summarize', \
           '\\x00', '{}', 3, 'retry', 'local_only', 30, 300, 1 \
         FROM generate_series(1, 4000) g;",
    )
    .await
    .unwrap();
    let counts = claimed_counts(&c, 20, 100).await;
    near(
        claimed_by(&counts, "solo", ""),
        1_000,
        "the app with one subject",
    );
    for user in 0..4 {
        near(
            claimed_by(&counts, "crowd", &format!("user-{user}")),
            250,
            "each of the crowd's users",
        );
    }
}

/// An app's subjects are counted up to 100 when a task takes its turn: a subject's next
/// task is spaced by 99 of 99 busy subjects, 100 of 100, and still 100 of 150.
#[tokio::test]
async fn an_apps_busy_subjects_are_counted_up_to_100() {
    let db = common::test_db().await;
    let c = db.client().await;
    for subjects in [99, 100, 150] {
        c.batch_execute(&format!(
            "INSERT INTO tasklane.tasks (id, app, scope_id, effect_key, usage_subject, task_type, \
               request_digest, input, max_attempts, on_restart, privacy, lease_seconds, \
               attempt_timeout_seconds, event_seq) \
             SELECT tasklane.uuid_v7(), 'app-{subjects}', 's', 'k' || g, 'user-' || g, '{TYPE}', \
               '\\x00', '{{}}', 3, 'retry', 'local_only', 30, 300, 1 \
             FROM generate_series(1, {subjects}) g;"
        ))
        .await
        .unwrap();
        let app = format!("app-{subjects}");
        let next = submit_one(&c, &app, Some("user-1"), "next").await;
        let row = c
            .query_one(
                "SELECT (SELECT turn FROM tasklane.task_queue WHERE id = $1) - \
                        (SELECT q.turn FROM tasklane.task_queue q JOIN tasklane.tasks t ON t.id = q.id \
                         WHERE t.app = $2 AND t.effect_key = 'k1')",
                &[&next, &app],
            )
            .await
            .unwrap();
        let step: f64 = row.get(0);
        assert_eq!(step, subjects.min(100) as f64, "{subjects} busy subjects");
    }
}

#[tokio::test]
async fn a_higher_priority_still_goes_first_and_a_retry_takes_a_new_turn() {
    let db = common::test_db().await;
    let c = db.client().await;
    queue(&c, "big", None, 500, "big-").await;
    let urgent = submit_with(&c, "urgent", serde_json::json!({}), |r| {
        r.priority = Some(5)
    })
    .await;
    let first: Vec<Uuid> = claim(&c, 1).await.iter().map(|t| t.id).collect();
    assert_eq!(first, [urgent.id], "priority before turns");
    // A task that goes back to the queue takes a new turn: behind what its own tenant
    // has queued (its old turn was the first), as a new task of the tenant would.
    let retried = claim_one(&c).await;
    c.execute(
        "UPDATE tasklane.tasks SET state = 'waiting_for_retry', lease_token = NULL, \
           lease_expires_at = NULL WHERE id = $1",
        &[&retried.id],
    )
    .await
    .unwrap();
    let turns = c
        .query_one(
            "SELECT (SELECT turn FROM tasklane.task_queue WHERE id = $1), \
                    (SELECT max(turn) FROM tasklane.task_queue \
                     WHERE state = 'queued' AND app = 'big')",
            &[&retried.id],
        )
        .await
        .unwrap();
    let (retry_turn, last_queued): (f64, f64) = (turns.get(0), turns.get(1));
    assert_eq!(retry_turn, last_queued + 1.0, "the retry's turn");
}

const NOOP: &str = r#"
[[task_type]]
name = "summarize"
executor = "noop"
"#;

/// Two claim loops of 100 drain a 20,000 backlog of one app on a replica process while
/// another app submits one task at a time: each of its tasks is claimed by the first
/// claims that start after its submit committed, so at most one claim of each loop
/// (200 tasks) of the backlog is taken between its submit and its claim.
#[tokio::test]
async fn on_a_replica_a_small_apps_tasks_are_claimed_within_one_round_of_a_draining_backlog() {
    let db = common::test_db().await;
    let c = db.client().await;
    queue(&c, "big", None, 20_000, "big-").await;
    let _worker = Serve::workers(
        &db.url,
        "fair-worker",
        NOOP,
        &[
            "--claimers",
            "2",
            "--claim-batch",
            "100",
            "--concurrency",
            "256",
        ],
    );
    eventually(
        Duration::from_secs(60),
        "the replica to start draining",
        || async {
            let started = count(
                &c,
                "SELECT count(*) FROM tasklane.tasks WHERE app = 'big' AND state <> 'queued'",
            )
            .await;
            if started > 0 {
                Ok(())
            } else {
                Err(started)
            }
        },
    )
    .await;
    let mut measured = 0;
    for i in 0..1000 {
        let small = submit_one(&c, "small", None, &format!("small-{i}")).await;
        let acknowledged: f64 = c
            .query_one("SELECT extract(epoch FROM clock_timestamp())::float8", &[])
            .await
            .unwrap()
            .get(0);
        let claimed_at: f64 = eventually(Duration::from_secs(60), "the small task claimed", || async {
            let row = c
                .query_one(
                    "SELECT extract(epoch FROM started_at)::float8 FROM tasklane.tasks WHERE id = $1",
                    &[&small],
                )
                .await
                .unwrap();
            row.get::<_, Option<f64>>(0).ok_or("queued")
        })
        .await;
        let between: i64 = c
            .query_one(
                "SELECT count(*) FROM tasklane.tasks WHERE app = 'big' \
                   AND started_at > to_timestamp($1) AND started_at < to_timestamp($2)",
                &[&acknowledged, &claimed_at],
            )
            .await
            .unwrap()
            .get(0);
        let waiting: i64 = c
            .query_one(
                "SELECT count(*) FROM tasklane.tasks WHERE app = 'big' \
                   AND (started_at IS NULL OR started_at > to_timestamp($1))",
                &[&claimed_at],
            )
            .await
            .unwrap()
            .get(0);
        if waiting == 0 {
            break; // the backlog is gone: the rest would prove nothing
        }
        assert!(
            between <= 200,
            "small task {i}: {between} of the backlog were claimed between its submit and its claim"
        );
        measured += 1;
    }
    assert!(
        measured >= 5,
        "only {measured} small tasks ran beside the backlog"
    );
}
