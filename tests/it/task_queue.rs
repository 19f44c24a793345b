//! The queue mirror (`tasklane.task_queue`, migration V14): the narrow table whose
//! indexes claims and sweeps read, kept by statement triggers on `tasks`. It must hold
//! exactly the live tasks with their current queue fields after every statement that
//! moves one, never cost a write when nothing it holds changed, leave the hot path's
//! updates of `tasks` HOT, and add no deadlock when claims race cancels.

use crate::common;

use std::sync::Arc;

use common::fixtures::*;
use tasklane::store::complete_many::complete_many;
use tasklane::store::lease;
use tasklane::store::{cancel, claim};
use tasklane::task::owner::Owner;
use tasklane::task::settlement::Success;

/// Live tasks as `tasks` has them and as the mirror has them, in both directions: any
/// row in one answer and not the other is a drift.
async fn drift(c: &tokio_postgres::Client) -> Vec<String> {
    let fields = "id, state, priority, run_at, deadline_at, lease_expires_at, task_type, app, \
                  scope_id, privacy, resource";
    let sql = format!(
        "(SELECT 'missing ' || id::text FROM (SELECT {fields} FROM tasklane.tasks \
           WHERE state NOT IN ('succeeded', 'failed', 'cancelled') \
           EXCEPT SELECT {fields} FROM tasklane.task_queue) d) \
         UNION ALL \
         (SELECT 'stale ' || id::text FROM (SELECT {fields} FROM tasklane.task_queue \
           EXCEPT SELECT {fields} FROM tasklane.tasks) d)"
    );
    c.query(&sql, &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

async fn assert_in_step(c: &tokio_postgres::Client, step: &str) {
    let drift = drift(c).await;
    assert!(drift.is_empty(), "after {step}: {drift:?}");
}

#[tokio::test]
async fn the_mirror_follows_every_transition() {
    let db = common::test_db().await;
    let c = db.client().await;
    let owner = Owner::app(APP);
    let a = submit(&c, "a", serde_json::json!({"n": 1})).await;
    let b = submit(&c, "b", serde_json::json!({"n": 2})).await;
    let d = submit(&c, "d", serde_json::json!({"n": 3})).await;
    assert_eq!(
        count(&c, "SELECT count(*) FROM tasklane.task_queue").await,
        3
    );
    assert_in_step(&c, "submit").await;

    let claimed = claim(&c, 2).await;
    assert_eq!(claimed.len(), 2);
    assert_in_step(&c, "claim").await;
    let running: i64 = count(
        &c,
        "SELECT count(*) FROM tasklane.task_queue WHERE state = 'running'",
    )
    .await;
    assert_eq!(running, 2);

    // A heartbeat moves the lease the sweeps read.
    let first = &claimed[0];
    let beat = tasklane::task::lease::Beat::default();
    lease::heartbeat(&c, first.id, first.lease_token, &beat)
        .await
        .unwrap();
    assert_in_step(&c, "heartbeat").await;

    // Success leaves the mirror.
    lease::complete(&c, first.id, first.lease_token, &Success::default())
        .await
        .unwrap();
    assert_in_step(&c, "complete").await;
    let left: i64 = c
        .query_one(
            "SELECT count(*) FROM tasklane.task_queue WHERE id = $1",
            &[&first.id],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(left, 0);

    // A lost lease is requeued by the rescuer, found through the mirror's lease index.
    let second = &claimed[1];
    expire_lease(&c, second.id).await;
    assert_in_step(&c, "expired lease").await;
    assert_eq!(rescue_expired(&c).await, 1);
    assert_in_step(&c, "rescue").await;

    // Cancel: a waiting task at once; a running one goes cancelling.
    let waiting = [a.id, b.id, d.id]
        .into_iter()
        .find(|id| *id != first.id && *id != second.id)
        .unwrap();
    cancel::cancel(&c, &owner, waiting).await.unwrap();
    assert_in_step(&c, "cancel queued").await;
    let again = claim_one(&c).await;
    assert_eq!(again.id, second.id);
    cancel::cancel(&c, &owner, again.id).await.unwrap();
    assert_in_step(&c, "cancel running").await;
    let cancelling: i64 = count(
        &c,
        "SELECT count(*) FROM tasklane.task_queue WHERE state = 'cancelling'",
    )
    .await;
    assert_eq!(cancelling, 1);

    // Any statement on tasks keeps it: a finished task brought back, and a delete.
    c.execute(
        "UPDATE tasklane.tasks SET state = 'queued', finished_at = NULL WHERE id = $1",
        &[&first.id],
    )
    .await
    .unwrap();
    assert_in_step(&c, "a finished task requeued by hand").await;
    c.execute("DELETE FROM tasklane.tasks WHERE id = $1", &[&first.id])
        .await
        .unwrap();
    assert_in_step(&c, "delete").await;
    assert_eq!(
        count(&c, "SELECT count(*) FROM tasklane.task_queue").await,
        1
    );
}

/// An update that changes nothing the mirror holds (progress, phase, a release) writes
/// no mirror row: its row version stays the same.
#[tokio::test]
async fn an_update_of_other_fields_writes_no_mirror_row() {
    let db = common::test_db().await;
    let c = db.client().await;
    let task = submit(&c, "p", serde_json::json!({})).await;
    let version = "SELECT xmin::text FROM tasklane.task_queue WHERE id = $1";
    let before: String = c.query_one(version, &[&task.id]).await.unwrap().get(0);
    c.execute(
        "UPDATE tasklane.tasks SET progress = 40, phase = 'reading' WHERE id = $1",
        &[&task.id],
    )
    .await
    .unwrap();
    let after: String = c.query_one(version, &[&task.id]).await.unwrap().get(0);
    assert_eq!(before, after);
    assert_in_step(&c, "progress").await;
}

/// The point of the mirror: claim and settle update the wide row without touching any of
/// its indexes (a HOT update), which no index on `state` or the lease would allow. A
/// batch claim and a batch settle in their own transactions, as a replica runs them
/// (the page's room for new versions comes from the table's fillfactor and from the
/// versions the previous transition left dead).
#[tokio::test]
async fn claim_and_settle_are_hot_updates_of_tasks() {
    let db = common::test_db().await;
    let c = db.client().await;
    for n in 0..40 {
        submit(&c, &format!("hot{n}"), serde_json::json!({"n": n})).await;
    }
    let counters = "SELECT pg_stat_get_xact_tuples_updated('tasklane.tasks'::regclass), \
                           pg_stat_get_xact_tuples_hot_updated('tasklane.tasks'::regclass)";
    c.batch_execute("BEGIN").await.unwrap();
    let claimed = claim(&c, 40).await;
    let row = c.query_one(counters, &[]).await.unwrap();
    let claims: (i64, i64) = (row.get(0), row.get(1));
    c.batch_execute("COMMIT").await.unwrap();
    c.batch_execute("BEGIN").await.unwrap();
    for task in &claimed {
        lease::complete(&c, task.id, task.lease_token, &Success::default())
            .await
            .unwrap();
    }
    let row = c.query_one(counters, &[]).await.unwrap();
    let settles: (i64, i64) = (row.get(0), row.get(1));
    c.batch_execute("COMMIT").await.unwrap();
    assert_eq!(claims.0, 40);
    assert!(settles.0 >= 40, "{settles:?}");
    assert_eq!(
        (claims.1, settles.1),
        (claims.0, settles.0),
        "every update was HOT"
    );
}

/// The claim and the batch settle write their own tasks' mirror rows (V27), one probe
/// of the mirror's primary key a task beside a backlog of 10,000 (a mirror of a few
/// hundred rows is hashed whole instead, as cheap), and their trigger call then does
/// nothing: run by the trigger, each task cost a second probe (its comparison, or its
/// delete). The setting that tells the trigger so lasts one statement: a hand-written
/// update after them in the same transaction is still mirrored.
#[tokio::test]
async fn the_claim_and_the_batch_settle_write_their_own_mirror_rows() {
    let db = common::test_db().await;
    let c = db.client().await;
    queue_analyzed(&c, 10_000).await;
    c.batch_execute("BEGIN").await.unwrap();
    let before = mirror_scans(&c).await;
    let claimed = claim(&c, 100).await;
    let by_claim = mirror_scans(&c).await - before;
    assert_in_step(&c, "a claim").await;
    c.execute(
        "UPDATE tasklane.tasks SET lease_expires_at = lease_expires_at + interval '1 minute' \
         WHERE id = $1",
        &[&claimed[0].id],
    )
    .await
    .unwrap();
    assert_in_step(&c, "a claim, then a hand-written update").await;
    c.batch_execute("COMMIT").await.unwrap();
    assert_eq!(claimed.len(), 100);
    // One probe a claimed task, and the one or two the planner makes for an index's
    // end; the trigger's work would be a second probe a task.
    assert!(
        (100..110).contains(&by_claim.probes) && by_claim.whole == 0,
        "by the claim: {by_claim:?}"
    );

    let pool = db.pool.get().await.unwrap();
    let batch = successes(&claimed);
    pool.batch_execute("BEGIN").await.unwrap();
    let before = mirror_scans(&pool).await;
    let answers = complete_many(&pool, &batch, None).await.unwrap().answers;
    let by_settle = mirror_scans(&pool).await - before;
    pool.batch_execute("COMMIT").await.unwrap();
    assert!(answers.iter().all(Result::is_ok), "{answers:?}");
    assert!(
        (100..110).contains(&by_settle.probes) && by_settle.whole == 0,
        "by the settle: {by_settle:?}"
    );
    assert_in_step(&c, "a batch settle").await;
    assert_eq!(
        count(&c, "SELECT count(*) FROM tasklane.task_queue").await,
        9_900
    );
}

/// Queues `count` tasks of [`TYPE`] and analyzes them as autovacuum would have them.
async fn queue_analyzed(c: &tokio_postgres::Client, count: usize) {
    c.batch_execute(&format!(
        "{} ANALYZE tasklane.tasks; ANALYZE tasklane.task_queue;",
        queue_sql(count, &format!("'{TYPE}'"), "0", "k")
    ))
    .await
    .unwrap();
}

/// Scans of the mirror this backend has counted so far: probes of its primary key (a
/// nested loop's each), and sequential scans of the whole table.
#[derive(Debug, PartialEq, Clone, Copy)]
struct Scans {
    probes: i64,
    whole: i64,
}

impl std::ops::Sub for Scans {
    type Output = Scans;
    fn sub(self, earlier: Scans) -> Scans {
        Scans {
            probes: self.probes - earlier.probes,
            whole: self.whole - earlier.whole,
        }
    }
}

async fn mirror_scans(c: &tokio_postgres::Client) -> Scans {
    let row = c
        .query_one(
            "SELECT pg_stat_get_xact_numscans('tasklane.task_queue_pkey'::regclass), \
                    pg_stat_get_xact_numscans('tasklane.task_queue'::regclass)",
            &[],
        )
        .await
        .unwrap();
    Scans {
        probes: row.get(0),
        whole: row.get(1),
    }
}

/// The mirror's trigger finds each changed row's mirror row by id (V22), whatever the
/// backlog: joined, the planner hashed a sequential scan of the whole mirror into every
/// claim of 100 beside a backlog of a few thousand to some 30,000 tasks (the V14
/// trigger read 10,202 mirror rows for this claim; beyond that size it probed by id).
/// A claim of 100 and their settles beside 10,000 queued tasks, analyzed as autovacuum
/// would have them: the trigger reads a few rows per task, not the backlog.
#[tokio::test]
async fn the_mirror_trigger_reads_its_rows_by_id_beside_a_long_backlog() {
    let db = common::test_db().await;
    let c = db.client().await;
    queue_analyzed(&c, 10_000).await;
    c.batch_execute("BEGIN").await.unwrap();
    let claimed = claim(&c, 100).await;
    let by_claim = rows_read(&c, "tasklane.task_queue").await;
    for task in &claimed {
        lease::complete(&c, task.id, task.lease_token, &Success::default())
            .await
            .unwrap();
    }
    let by_settles = rows_read(&c, "tasklane.task_queue").await - by_claim;
    c.batch_execute("COMMIT").await.unwrap();
    assert_eq!(claimed.len(), 100);
    // The claim's own index scan reads its 100 candidates; the trigger one probe each.
    assert!(by_claim <= 1_000, "the claim read {by_claim} mirror rows");
    assert!(
        by_settles <= 1_000,
        "100 settles read {by_settles} mirror rows"
    );
    assert_in_step(&c, "after the claim and settles beside a backlog").await;
}

/// A claim reads the tasks of the types it serves, not the backlog of another type
/// queued ahead of them (V23): scanned in priority order over every type, a claim of
/// 100 beside 10,000 older `remote` tasks (no replica's in-process type) read all
/// 10,100 before it could stop.
#[tokio::test]
async fn a_claim_reads_its_own_types_beside_the_backlog_of_another() {
    let db = common::test_db().await;
    let c = db.client().await;
    c.batch_execute(&queue_sql(10_000, "'remote'", "0", "remote"))
        .await
        .unwrap();
    c.batch_execute(&format!(
        "{} ANALYZE tasklane.tasks; ANALYZE tasklane.task_queue;",
        queue_sql(100, &format!("'{TYPE}'"), "0", TYPE)
    ))
    .await
    .unwrap();
    c.batch_execute("BEGIN").await.unwrap();
    let claimed = claim(&c, 100).await;
    let read = rows_read(&c, "tasklane.task_queue").await;
    c.batch_execute("COMMIT").await.unwrap();
    assert_eq!(claimed.len(), 100);
    assert!(read <= 1_000, "the claim read {read} mirror rows");
}

/// Claims run with generic plans (the claim pool's `plan_cache_mode`), which take the
/// claim's `LIMIT` for a tenth of the claimable backlog: joined to that many picked
/// rows, the planner hashed a sequential scan of the whole tasks table into the claim's
/// update. A claim of 1 beside 2,000 queued tasks of one scope, vacuumed and analyzed,
/// reads its task by id (it read all 2,000).
#[tokio::test]
async fn a_generic_claim_finds_its_picked_tasks_by_id() {
    let db = common::test_db().await;
    let c = db.client().await;
    // One scope: the generic plan's estimate of `($6 IS NULL OR scope_id = $6)` is then
    // the whole backlog (over 100 scopes it is 1.5% of it, and the join stays a loop).
    let one_scope =
        queue_sql(2_000, &format!("'{TYPE}'"), "0", "k").replace("'s' || (g % 100)", "'s'");
    c.batch_execute(&one_scope).await.unwrap();
    // Every table with statistics, the empty ones too, as autovacuum leaves them.
    c.batch_execute("VACUUM ANALYZE").await.unwrap();
    c.batch_execute("SET plan_cache_mode = force_generic_plan")
        .await
        .unwrap();
    let types = [TYPE.to_owned()];
    let claimant = claimant(tasklane::task::Locality::Local);
    for slots in ["plain", "aware"] {
        c.batch_execute("BEGIN").await.unwrap();
        let claimed = match slots {
            "plain" => claim::claim_without_resources(&c, &claimant, &types, 1).await,
            _ => claim::claim(&c, &claimant, &types, 1).await,
        }
        .unwrap();
        let read = rows_read(&c, "tasklane.tasks").await;
        c.batch_execute("COMMIT").await.unwrap();
        assert_eq!(claimed.len(), 1, "{slots}");
        assert!(read <= 20, "a claim of 1 ({slots}) read {read} tasks rows");
    }
}

/// Claims lock `tasks` rows found through the mirror; cancels lock `tasks` rows and then
/// the trigger writes the mirror. Sixteen connections racing both on the same tasks,
/// over several rounds: no deadlock, no task claimed twice for one attempt, and the
/// mirror in step at the end of each round.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn claims_racing_cancels_neither_deadlock_nor_drift() {
    let db = common::test_db().await;
    let pool = common::pool(&db.url, 16);
    let c = db.client().await;
    for round in 0..5 {
        let mut ids = Vec::new();
        for n in 0..120 {
            ids.push(
                submit(&c, &format!("r{round}-{n}"), serde_json::json!({"n": n}))
                    .await
                    .id,
            );
        }
        let ids = Arc::new(ids);
        let barrier = Arc::new(tokio::sync::Barrier::new(16));
        let mut handles = Vec::new();
        for worker in 0..16 {
            let pool = pool.clone();
            let barrier = barrier.clone();
            let ids = ids.clone();
            handles.push(tokio::spawn(async move {
                let object = pool.get().await.unwrap();
                let client: &tokio_postgres::Client = &object;
                barrier.wait().await;
                let mut claimed = Vec::new();
                if worker % 2 == 0 {
                    for _ in 0..10 {
                        claimed.extend(claim(client, 5).await.into_iter().map(|t| t.id));
                    }
                } else {
                    let owner = Owner::app(APP);
                    for id in ids.iter().skip(worker).step_by(8) {
                        cancel::cancel(client, &owner, *id).await.unwrap();
                    }
                }
                claimed
            }));
        }
        claimed_once(handles, round).await;
        assert_in_step(&c, &format!("round {round}")).await;
    }
}

/// Claims of two types at once from many connections (V23's per-type scans, each
/// locking up to the claim's limit before the merge cuts it): over repeated rounds every
/// task is claimed exactly once, none is left claimable, and the mirror stays in step.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_claims_of_several_types_take_each_task_once() {
    let db = common::test_db().await;
    let c = db.client().await;
    let types = Arc::new(vec!["a".to_owned(), "b".to_owned()]);
    for round in 0..3 {
        let types_of_g = "CASE WHEN g % 3 = 0 THEN 'a' ELSE 'b' END";
        c.batch_execute(&queue_sql(600, types_of_g, "g % 4", &format!("r{round}-")))
            .await
            .unwrap();
        let barrier = Arc::new(tokio::sync::Barrier::new(8));
        let mut handles = Vec::new();
        for _ in 0..8 {
            let pool = db.pool.clone();
            let barrier = barrier.clone();
            let types = types.clone();
            handles.push(tokio::spawn(async move {
                let object = pool.get().await.unwrap();
                let client: &tokio_postgres::Client = &object;
                let claimant = claimant(tasklane::task::Locality::Local);
                barrier.wait().await;
                let mut claimed = Vec::new();
                loop {
                    let batch = tasklane::store::claim::claim(client, &claimant, &types, 20)
                        .await
                        .unwrap();
                    if batch.is_empty() {
                        break claimed;
                    }
                    claimed.extend(batch.into_iter().map(|t| t.id));
                }
            }));
        }
        let claimed = claimed_once(handles, round).await;
        assert_eq!(claimed.len(), 600, "round {round}: every task claimed");
        assert_eq!(
            count(
                &c,
                "SELECT count(*) FROM tasklane.tasks WHERE state = 'queued'"
            )
            .await,
            0,
            "round {round}: none left claimable"
        );
        assert_in_step(&c, &format!("round {round}")).await;
    }
}

/// What the racing connections claimed in `round`, checked to hold no task twice.
async fn claimed_once(
    handles: Vec<tokio::task::JoinHandle<Vec<uuid::Uuid>>>,
    round: usize,
) -> Vec<uuid::Uuid> {
    let mut claimed = Vec::new();
    for handle in handles {
        claimed.extend(handle.await.unwrap());
    }
    let unique: std::collections::HashSet<_> = claimed.iter().collect();
    assert_eq!(
        unique.len(),
        claimed.len(),
        "round {round}: a task claimed twice"
    );
    claimed
}
