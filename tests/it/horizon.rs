//! A held vacuum horizon: a REPEATABLE READ transaction keeps its snapshot open while
//! tasks are submitted, claimed and completed in volume, so no dead row of the queue
//! can be removed. A claim and its settle must not pay for them: the mirror's pages each
//! reads stay those beside a clean queue, however many tasks were claimed since the
//! snapshot was taken, and whatever the planner's statistics say of the queue (never
//! analyzed, analyzed before the hold, or analyzed under it, when its live rows are few
//! and its dead ones many). Counted in the mirror's pages fetched (pg_stat's
//! per-transaction counters), not in time.

use crate::common;

use common::fixtures::*;
use tasklane::store::claim;
use tasklane::store::complete_many::complete_many;
use tasklane::store::{lease, turn_floors};
use tasklane::task::lease::{Lease, LeaseStatus};
use tasklane::task::{Locality, Privacy};

const ROUNDS: usize = 16;
const MIRROR: &str = "tasklane.task_queue";
const PER_ROUND: usize = 100;
const CLAIM: i64 = 10;
/// Claims between two raises of the floors: the maintenance role raises them every
/// 100 ms, about 40 claimed tasks apart at 400 tasks a second.
const CLAIMS_PER_RAISE: usize = 4;

/// Pages of the mirror (its table and its indexes) this connection's transaction has
/// fetched so far (`xact`), or the statistics' count for the whole database: whatever the
/// path (an index scan that steps over dead entries, a sequential scan of dead rows),
/// reading what a held snapshot keeps costs pages.
async fn mirror_pages<C: tokio_postgres::GenericClient + Sync>(c: &C, xact: bool) -> i64 {
    pages(c, MIRROR, xact).await
}

/// Pages of `table` and its indexes, as [`mirror_pages`] counts the mirror's.
async fn pages<C: tokio_postgres::GenericClient + Sync>(c: &C, table: &str, xact: bool) -> i64 {
    let function = if xact {
        "pg_stat_get_xact_blocks_fetched"
    } else {
        "pg_stat_get_blocks_fetched"
    };
    c.query_one(
        &format!(
            "SELECT {function}('{table}'::regclass) \
                    + coalesce(sum({function}(i.indexrelid)), 0)::int8 \
             FROM pg_index i WHERE i.indrelid = '{table}'::regclass"
        ),
        &[],
    )
    .await
    .unwrap()
    .get(0)
}

/// The database's count of the mirror's pages fetched, once this connection has
/// flushed its own statistics (each submit commits in a transaction of its own).
async fn flushed_pages(c: &tokio_postgres::Client) -> i64 {
    flushed_pages_of(c, MIRROR).await
}

/// [`flushed_pages`] of `table`.
async fn flushed_pages_of(c: &tokio_postgres::Client, table: &str) -> i64 {
    c.execute("SELECT pg_stat_force_next_flush()", &[])
        .await
        .unwrap();
    c.execute("SELECT 1", &[]).await.unwrap();
    c.execute("SELECT pg_stat_clear_snapshot()", &[])
        .await
        .unwrap();
    pages(c, table, false).await
}

/// Raises the floors as the floor keeper does over two passes with no writer in flight
/// between them: to the points the first pass read.
async fn raise_floors(keeper: &mut tokio_postgres::Client) -> turn_floors::Raised {
    let earlier = turn_floors::read(keeper).await.unwrap();
    let now = turn_floors::read(keeper).await.unwrap();
    turn_floors::raise(keeper, &turn_floors::ready(&earlier, &now))
        .await
        .unwrap()
}

/// The mirror's pages a round fetched: per claim, per heartbeat and settle of the claim's
/// batch, and per submit.
#[derive(Debug, Clone, Copy, Default)]
struct Pages {
    claim: f64,
    heartbeat: f64,
    settle: f64,
    submit: f64,
    /// The floor keeper's raise (its two readings and the raise).
    raise: f64,
}

/// One round: `PER_ROUND` single submits, then claims of `CLAIM` at `locality` until none
/// is left, each claimed batch heartbeaten once and completed.
async fn round(
    c: &mut tokio_postgres::Client,
    settle: &mut tasklane::store::Pooled,
    keeper: &mut tokio_postgres::Client,
    n: usize,
    locality: Locality,
) -> Pages {
    let before = flushed_pages(c).await;
    for i in 0..PER_ROUND {
        // External claims take only the tasks that may leave the premises.
        submit_with(c, &format!("r{n}-{i}"), serde_json::json!({}), |r| {
            r.privacy = Some(Privacy::ExternalAllowed)
        })
        .await;
    }
    let submit_pages = flushed_pages(c).await - before;
    let (mut claims, mut claim_pages, mut settle_pages, mut claimed_total) = (0, 0, 0, 0);
    let (mut heartbeat_pages, mut raise_pages, mut raises) = (0, 0, 0);
    loop {
        let tx = c.transaction().await.unwrap();
        let before = mirror_pages(&tx, true).await;
        let claimed = claim::claim(&tx, &claimant(locality), &[TYPE.to_owned()], CLAIM)
            .await
            .unwrap();
        let fetched = mirror_pages(&tx, true).await - before;
        tx.commit().await.unwrap();
        if claimed.is_empty() {
            break;
        }
        claims += 1;
        claim_pages += fetched;
        if claims % CLAIMS_PER_RAISE == 0 {
            // The other sessions' counts flushed first, and then idle: the database's
            // count is the keeper's.
            flushed_pages(c).await;
            flushed_pages(tasklane::store::client(settle)).await;
            let before = flushed_pages(keeper).await;
            raise_floors(keeper).await;
            raise_pages += flushed_pages(keeper).await - before;
            raises += 1;
        }
        claimed_total += claimed.len();
        // A heartbeat of the batch, as a claim loop's batcher sends it: through the
        // mirror's update trigger.
        let leases: Vec<Lease> = claimed
            .iter()
            .map(|t| Lease {
                id: t.id,
                lease_token: t.lease_token,
            })
            .collect();
        let tx = settle.transaction().await.unwrap();
        let before = mirror_pages(&*tx, true).await;
        let beats = lease::extend_many(&*tx, &leases).await.unwrap();
        heartbeat_pages += mirror_pages(&*tx, true).await - before;
        tx.commit().await.unwrap();
        assert!(beats
            .iter()
            .all(|b| matches!(b, LeaseStatus::Extended { .. })));
        let tx = settle.transaction().await.unwrap();
        let before = mirror_pages(&*tx, true).await;
        complete_many(&tx, &successes(&claimed), None)
            .await
            .unwrap();
        settle_pages += mirror_pages(&*tx, true).await - before;
        tx.commit().await.unwrap();
    }
    assert_eq!(claimed_total, PER_ROUND, "round {n}: every task claimed");
    Pages {
        claim: claim_pages as f64 / claims as f64,
        settle: settle_pages as f64 / claims as f64,
        heartbeat: heartbeat_pages as f64 / claims as f64,
        submit: submit_pages as f64 / PER_ROUND as f64,
        raise: raise_pages as f64 / raises.max(1) as f64,
    }
}

/// When the planner's statistics of the tables are taken.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Statistics {
    /// Never: the tables as a new database has them.
    Never,
    /// Once, after a first round and before the hold: a queue of its usual size.
    BeforeTheHold,
    /// Halfway through the hold: few live rows beside many dead ones.
    UnderTheHold,
}

async fn analyze(c: &tokio_postgres::Client) {
    c.batch_execute("ANALYZE tasklane.task_queue, tasklane.tasks, tasklane.turn_floors")
        .await
        .unwrap();
}

#[tokio::test]
async fn claims_do_not_walk_the_dead_rows_a_held_snapshot_keeps() {
    held_snapshot(Locality::Local, Statistics::Never).await;
}

/// Analyzed beside a queue of its usual size, the planner still reads from the floors.
#[tokio::test]
async fn claims_analyzed_before_the_hold_do_not_walk_its_dead_rows() {
    held_snapshot(Locality::Local, Statistics::BeforeTheHold).await;
}

/// Analyzed under the hold, the statistics see a small queue in a large table.
#[tokio::test]
async fn claims_analyzed_under_the_hold_do_not_walk_its_dead_rows() {
    held_snapshot(Locality::Local, Statistics::UnderTheHold).await;
}

/// External claims (remote workers, the external loops) read from the same floors.
#[tokio::test]
async fn external_claims_do_not_walk_the_dead_rows_a_held_snapshot_keeps() {
    held_snapshot(Locality::External, Statistics::Never).await;
}

#[tokio::test]
async fn external_claims_analyzed_under_the_hold_do_not_walk_its_dead_rows() {
    held_snapshot(Locality::External, Statistics::UnderTheHold).await;
}

async fn held_snapshot(locality: Locality, statistics: Statistics) {
    let db = common::test_db().await;
    let mut c = db.client().await;
    // As the claim pool's sessions run claims.
    c.batch_execute(tasklane::store::connect::CLAIM_SESSION)
        .await
        .unwrap();
    // The statistics are this test's to set: autovacuum would take them (and re-plan
    // every statement) at moments a busy machine chooses.
    c.batch_execute(
        "ALTER TABLE tasklane.task_queue SET (autovacuum_enabled = false); \
         ALTER TABLE tasklane.tasks SET (autovacuum_enabled = false); \
         ALTER TABLE tasklane.turn_floors SET (autovacuum_enabled = false); \
         ALTER TABLE tasklane.turn_points SET (autovacuum_enabled = false)",
    )
    .await
    .unwrap();
    let mut keeper = db.client().await;
    let mut settle = db.pool.get().await.unwrap();
    let first = round(&mut c, &mut settle, &mut keeper, 0, locality).await;
    if statistics == Statistics::BeforeTheHold {
        analyze(&c).await;
    }

    let mut holder = db.client().await;
    let held = common::hold_snapshot(&mut holder).await;
    let seen = count_in(&held).await;

    let (mut middle, mut last) = (Pages::default(), Pages::default());
    for n in 1..=ROUNDS {
        last = round(&mut c, &mut settle, &mut keeper, n, locality).await;
        if n == ROUNDS / 2 {
            middle = last;
            if statistics == Statistics::UnderTheHold {
                analyze(&c).await;
            }
        }
    }
    // The snapshot was held throughout: it still sees the tasks as they were.
    assert_eq!(count_in(&held).await, seen, "the snapshot held");
    held.rollback().await.unwrap();

    let dead = ROUNDS * PER_ROUND;
    eprintln!(
        "{locality:?}, statistics {statistics:?}: the mirror's pages fetched before the hold, \
         then after {} and {dead} tasks claimed under it: per claim {:.1}, {:.1}, {:.1}; \
         per heartbeat {:.1}, {:.1}, {:.1}; per settle {:.1}, {:.1}, {:.1}; \
         per submit {:.1}, {:.1}, {:.1}; per raise {:.1}, {:.1}, {:.1}",
        dead / 2,
        first.claim,
        middle.claim,
        last.claim,
        first.heartbeat,
        middle.heartbeat,
        last.heartbeat,
        first.settle,
        middle.settle,
        last.settle,
        first.submit,
        middle.submit,
        last.submit,
        first.raise,
        middle.raise,
        last.raise
    );
    // Under the hold each task's own row versions stay (its insert, its claim, its
    // heartbeat), so a probe of its entries reads more pages than beside a clean queue,
    // and a plan made on other statistics may read a few more again (up to 2.5x the
    // middle figure was seen once, on a machine running the whole suite). A claim of 10
    // (its heartbeat, its settle, a submit) walking the dead entries or rows of the
    // 1,600 tasks claimed under the hold fetches thousands of pages.
    for (what, first, middle, last) in [
        ("claim", first.claim, middle.claim, last.claim),
        (
            "heartbeat",
            first.heartbeat,
            middle.heartbeat,
            last.heartbeat,
        ),
        ("settle", first.settle, middle.settle, last.settle),
        ("submit", first.submit, middle.submit, last.submit),
        ("raise", first.raise, middle.raise, last.raise),
    ] {
        assert!(
            last <= 3.0 * middle + 20.0 && last <= 5.0 * first + 40.0,
            "a {what} fetched {last:.1} of the mirror's pages after {dead} tasks under the \
             hold, {middle:.1} after {}, {first:.1} before it",
            dead / 2
        );
    }
}

async fn count_in(tx: &tokio_postgres::Transaction<'_>) -> i64 {
    tx.query_one("SELECT count(*) FROM tasklane.tasks", &[])
        .await
        .unwrap()
        .get(0)
}

async fn mirror_row(c: &tokio_postgres::Client, id: uuid::Uuid) -> (bool, f64, f64) {
    let row = c
        .query_one(
            "SELECT q.behind, q.turn, f.floor FROM tasklane.task_queue q \
             JOIN tasklane.turn_floors f USING (task_type, priority) WHERE q.id = $1",
            &[&id],
        )
        .await
        .unwrap();
    (row.get(0), row.get(1), row.get(2))
}

/// The tasks a floor passes are not lost: one not yet due when the claims passed it is
/// marked behind and claimed once due; one another transaction holds at the raise
/// stops the floor below it and is claimed from the claimable index.
#[tokio::test]
async fn tasks_the_floor_passes_are_still_claimed() {
    let db = common::test_db().await;
    let c = db.client().await;
    let mut keeper = db.client().await;
    let later = submit(&c, "later", serde_json::json!({})).await;
    let held = submit(&c, "held", serde_json::json!({})).await;
    let rest = submit(&c, "rest", serde_json::json!({})).await;
    c.execute(
        "UPDATE tasklane.tasks SET run_at = now() + interval '1 hour' WHERE id = $1",
        &[&later.id],
    )
    .await
    .unwrap();

    // A claim passes `later` (not due) and `held` (another transaction holds its row).
    let mut other = db.client().await;
    let locker = other.transaction().await.unwrap();
    locker
        .execute(
            "SELECT 1 FROM tasklane.tasks WHERE id = $1 FOR UPDATE",
            &[&held.id],
        )
        .await
        .unwrap();
    let claimed = claim(&c, 10).await;
    assert_eq!(
        claimed.iter().map(|t| t.id).collect::<Vec<_>>(),
        vec![rest.id]
    );
    let raised = raise_floors(&mut keeper).await;
    assert_eq!(raised.floors, 1, "{raised:?}");
    // `held` was not waited for: the floor stops at it, and `later` is behind.
    let (held_behind, held_turn, floor) = mirror_row(&c, held.id).await;
    assert!(
        !held_behind && floor <= held_turn,
        "held: turn {held_turn}, floor {floor}"
    );
    let (later_behind, later_turn, _) = mirror_row(&c, later.id).await;
    assert!(
        later_behind && later_turn < floor,
        "later: turn {later_turn}, floor {floor}"
    );
    locker.rollback().await.unwrap();

    // Released, `held` is claimed from its floor; the next raise passes nothing new.
    assert_eq!(
        claim(&c, 10).await.iter().map(|t| t.id).collect::<Vec<_>>(),
        vec![held.id]
    );
    raise_floors(&mut keeper).await;
    // Due, `later` keeps its turn and stays behind, and is claimed from there.
    make_due(&c, later.id).await;
    let (still_behind, _, _) = mirror_row(&c, later.id).await;
    assert!(still_behind, "a kept turn below the floor stays behind");
    assert_eq!(
        claim(&c, 10).await.iter().map(|t| t.id).collect::<Vec<_>>(),
        vec![later.id]
    );
}

/// Submits in a transaction left open: a writer in flight, until `COMMIT` on `c`.
async fn submit_open(c: &tokio_postgres::Client, key: &str) -> uuid::Uuid {
    let task = request(key, serde_json::json!({}))
        .resolve(APP, &task_type(), 1 << 20)
        .unwrap();
    c.batch_execute("BEGIN").await.unwrap();
    tasklane::service::submit_in(c, &task)
        .await
        .unwrap()
        .task
        .id
}

/// A raise waits for the writers of claimable rows in flight when it read the claims'
/// point, and for no other: writers that overlap one another (at a steady rate of
/// submits one is always in flight) do not keep a floor down, and a task whose turn a
/// writer took before the claims moved past it ends behind the raised floor, not lost.
#[tokio::test]
async fn floors_rise_past_overlapping_writers_and_lose_none_of_their_tasks() {
    let db = common::test_db().await;
    let c = db.client().await;
    let mut keeper = db.client().await;
    let (first, second) = (db.client().await, db.client().await);
    // The floor and the point exist before the writers (the first writer of a floor
    // creates its row, which a second would wait for).
    submit(&c, "first", serde_json::json!({})).await;
    assert_eq!(claim(&c, 10).await.len(), 1);
    // `early` takes the next turn and stays uncommitted; the tasks after it, claimed,
    // move the claims' point past that turn.
    let early = submit_open(&first, "early").await;
    for i in 0..3 {
        submit(&c, &format!("next-{i}"), serde_json::json!({})).await;
    }
    assert_eq!(claim(&c, 10).await.len(), 3);
    let reading = turn_floors::read(&keeper).await.unwrap();
    assert_eq!(reading.len(), 1, "{reading:?}");
    assert_eq!(
        reading[0].writers.len(),
        1,
        "`early` in flight: {reading:?}"
    );
    assert!(reading[0].point > reading[0].floor, "{reading:?}");
    // While it is in flight the floor may not rise past its turn.
    let again = turn_floors::read(&keeper).await.unwrap();
    assert!(turn_floors::ready(&reading, &again).is_empty());

    // `early` commits as `late` starts: the floor rises, `late` in flight.
    first.batch_execute("COMMIT").await.unwrap();
    let late = submit_open(&second, "late").await;
    let now = turn_floors::read(&keeper).await.unwrap();
    assert_eq!(now[0].writers.len(), 1, "`late` in flight: {now:?}");
    let raised = turn_floors::raise(&mut keeper, &turn_floors::ready(&reading, &now))
        .await
        .unwrap();
    assert_eq!(
        raised,
        turn_floors::Raised {
            floors: 1,
            behind: 1
        }
    );
    let (early_behind, early_turn, floor) = mirror_row(&c, early).await;
    assert_eq!(floor, reading[0].point, "risen to the point read");
    assert!(
        early_behind && early_turn < floor,
        "early: turn {early_turn}, floor {floor}"
    );
    second.batch_execute("COMMIT").await.unwrap();
    let (late_behind, late_turn, _) = mirror_row(&c, late).await;
    assert!(
        !late_behind && late_turn >= floor,
        "late: turn {late_turn}, floor {floor}"
    );
    let mut claimed: Vec<_> = claim(&c, 10).await.iter().map(|t| t.id).collect();
    let mut expected = vec![early, late];
    claimed.sort();
    expected.sort();
    assert_eq!(claimed, expected, "both claimed");
}

/// The pages of `relation` (and its indexes) one batch submit of `n` tasks of one
/// subject fetched (in a transaction of its own on `pooled`), the tasks then claimed and
/// completed: a queue drained as fast as it fills, where the subject never has a
/// claimable task when its next tasks take their turns.
async fn drained_batch(
    c: &tokio_postgres::Client,
    pooled: &tasklane::store::Pooled,
    relation: &str,
    round: usize,
    n: usize,
) -> i64 {
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            request(&format!("b{round}-{i}"), serde_json::json!({}))
                .resolve(APP, &task_type(), 1 << 20)
                .unwrap()
        })
        .collect();
    let items: Vec<_> = tasks
        .iter()
        .map(|task| (tasklane::task::new_task_id(), task))
        .collect();
    pooled.batch_execute("BEGIN").await.unwrap();
    let before = pages(tasklane::store::client(pooled), relation, true).await;
    let answers = tasklane::store::submit_batch::submit_many(pooled, &items)
        .await
        .unwrap();
    let fetched = pages(tasklane::store::client(pooled), relation, true).await - before;
    pooled.batch_execute("COMMIT").await.unwrap();
    assert!(answers.iter().all(|a| a.is_ok()), "{answers:?}");
    let claimed = claim(c, n as i64).await;
    assert_eq!(claimed.len(), n, "round {round}");
    complete_many(pooled, &successes(&claimed), None)
        .await
        .unwrap();
    fetched
}

/// A queue drained as fast as it fills, under a held snapshot: each batch of one
/// subject's tasks counts the app's subjects with claimable tasks for its step, and that
/// count reads from the floor, so it does not visit the rows of every task the subject
/// had claimed under the hold.
#[tokio::test]
async fn a_drained_queue_s_batch_submits_do_not_walk_the_dead_rows_a_held_snapshot_keeps() {
    const BATCH: usize = 10;
    const BATCHES: usize = 160;
    let db = common::test_db().await;
    let c = db.client().await;
    let mut keeper = db.client().await;
    let pooled = db.pool.get().await.unwrap();
    let first = drained_batch(&c, &pooled, MIRROR, 0, BATCH).await;
    raise_floors(&mut keeper).await;

    let mut holder = db.client().await;
    let held = common::hold_snapshot(&mut holder).await;
    let seen = count_in(&held).await;
    let (mut middle, mut last) = (0, 0);
    for round in 1..=BATCHES {
        last = drained_batch(&c, &pooled, MIRROR, round, BATCH).await;
        if round % CLAIMS_PER_RAISE == 0 {
            raise_floors(&mut keeper).await;
        }
        if round == BATCHES / 2 {
            middle = last;
        }
    }
    assert_eq!(count_in(&held).await, seen, "the snapshot held");
    held.rollback().await.unwrap();
    eprintln!(
        "a batch submit of {BATCH} fetched {first} of the mirror's pages before the hold, \
         {middle} and {last} after {} and {} tasks under it",
        BATCH * BATCHES / 2,
        BATCH * BATCHES
    );
    // Stepping over the subject's entries below the floor costs an index page per
    // 150 tasks or so, visiting their dead rows about a page per 25 (seen: 87, 113 and
    // 148 pages with the count read from the start; 87, 85 and 90 from the floor). The
    // rows of one batch share pages here; in a busy queue each dead row is a page.
    let dead = (BATCH * BATCHES) as i64;
    assert!(
        last <= first + dead / 100,
        "a batch submit fetched {last} of the mirror's pages after {dead} tasks under the \
         hold, {middle} after half of them, {first} before it"
    );
}

/// The rows one task type and priority has, raised again and again: under a held snapshot
/// each raise leaves a version of the row, and a read that found it by its key would
/// visit every one of them.
#[derive(Debug, Clone, Copy)]
enum Row {
    /// Where the claims have got (`tasklane.turn_points`), raised by every claim.
    Point,
    /// The claims' floor (`tasklane.turn_floors`), raised by the floor keeper.
    Floor,
}

const RAISES: usize = 3_000;

/// What a submit, its task's claim and a floor keeper's reading fetched of the raised
/// table's pages, and the reading, after `RAISES` raises under a held snapshot.
struct AfterRaises {
    submit: i64,
    claim: i64,
    reading_pages: i64,
    reading: Vec<turn_floors::Reading>,
}

/// Raises `row` to turns 1, 2, … `RAISES` under a held snapshot, each raise in a
/// transaction of its own as a claim or the keeper makes it, then counts the pages.
async fn after_raises(row: Row) -> AfterRaises {
    let db = common::test_db().await;
    let c = db.client().await;
    let mut keeper = db.client().await;
    let pooled = db.pool.get().await.unwrap();
    // The submit makes the floor, the first claim the point.
    submit(&c, "first", serde_json::json!({})).await;
    let first = claim_one(&c).await;
    complete_many(&pooled, &successes(&[first]), None)
        .await
        .unwrap();

    let mut holder = db.client().await;
    let held = common::hold_snapshot(&mut holder).await;
    let seen = count_in(&held).await;
    let raise_point = c
        .prepare("SELECT tasklane.raise_points(ARRAY[$1::text], ARRAY[0::int2], ARRAY[$2::float8])")
        .await
        .unwrap();
    for turn in 1..=RAISES {
        let rows = match row {
            Row::Point => c
                .query_one(&raise_point, &[&TYPE, &(turn as f64)])
                .await
                .unwrap()
                .get::<_, i32>(0) as i64,
            Row::Floor => {
                let target = turn_floors::Target {
                    task_type: TYPE.to_owned(),
                    priority: 0,
                    turn: turn as f64,
                };
                turn_floors::raise(&mut keeper, &[target])
                    .await
                    .unwrap()
                    .floors
            }
        };
        assert_eq!(rows, 1, "{row:?} raised to {turn}");
    }

    let table = match row {
        Row::Point => "tasklane.turn_points",
        Row::Floor => "tasklane.turn_floors",
    };
    flushed_pages_of(&keeper, table).await;
    let before = flushed_pages_of(&c, table).await;
    let task = submit(&c, "after", serde_json::json!({})).await;
    let submitted = flushed_pages_of(&c, table).await - before;
    let claimed = claim_one(&c).await;
    let claim_pages = flushed_pages_of(&c, table).await - before - submitted;
    assert_eq!(claimed.id, task.id);
    let before = flushed_pages_of(&keeper, table).await;
    let reading = turn_floors::read(&mut keeper).await.unwrap();
    let reading_pages = flushed_pages_of(&keeper, table).await - before;
    assert_eq!(count_in(&held).await, seen, "the snapshot held");
    held.rollback().await.unwrap();
    eprintln!(
        "after {RAISES} raises of the {row:?} under the hold, its pages fetched: a submit \
         {submitted}, a claim {claim_pages}, a floor keeper's reading {reading_pages}"
    );
    AfterRaises {
        submit: submitted,
        claim: claim_pages,
        reading_pages,
        reading,
    }
}

/// Every submit's turn, every claim's raise and every floor keeper's reading read where
/// the claims have got from the top of its index, one or two pages however often it was
/// raised.
#[tokio::test]
async fn the_claims_point_is_read_in_a_few_pages_however_often_a_held_snapshot_kept_it_raised() {
    let after = after_raises(Row::Point).await;
    // The submitted task took its turn at the point, and its claim left the point there.
    let points: Vec<_> = after.reading.iter().map(|r| r.point).collect();
    assert_eq!(points, [RAISES as f64], "{:?}", after.reading);
    // By the key each read visits a page of versions for every 150 raises or so (20
    // here); from the top, the current version and the index's path to it.
    for (what, fetched) in [
        ("submit", after.submit),
        ("claim", after.claim),
        ("floor keeper's reading", after.reading_pages),
    ] {
        assert!(
            fetched <= 8,
            "a {what} fetched {fetched} of the point's pages after {RAISES} raises under the hold"
        );
    }
}

/// Every writer of claimable rows and every claim read a floor from the top of its index
/// (the claim through `tasklane.floors_of`), and the keeper raises it by its address.
#[tokio::test]
async fn the_floors_are_read_in_a_few_pages_however_often_a_held_snapshot_kept_them_raised() {
    let after = after_raises(Row::Floor).await;
    let floors: Vec<_> = after
        .reading
        .iter()
        .map(|r| (r.task_type.as_str(), r.priority, r.floor))
        .collect();
    assert_eq!(
        floors,
        [(TYPE, 0, RAISES as f64)],
        "one floor, where the last raise put it"
    );
    // By the key each read visits a page of versions for every 150 raises or so (20
    // here), and a submit reads its floor three times (42 pages, seen); from the top, the
    // current version and the index's path to it. The keeper's reading reads every row of
    // the table, the versions too (a few passes a second, not one a task): not bounded.
    for (what, fetched, bound) in [("submit", after.submit, 16), ("claim", after.claim, 8)] {
        assert!(
            fetched <= bound,
            "a {what} fetched {fetched} of the floor's pages after {RAISES} raises under the hold"
        );
    }
}

/// A batch of one subject's tasks counts its app's subjects with claimable tasks for its
/// step. The subject it names is probed from the floor up, so a subject that has had
/// thousands of tasks claimed under a held snapshot is counted without stepping over
/// their entries, whose number grows for as long as the snapshot is held.
#[tokio::test]
async fn a_batch_counts_its_subject_without_walking_the_subject_s_history_under_a_held_snapshot() {
    const HISTORY: usize = 6_000;
    const CHUNK: usize = 500;
    let db = common::test_db().await;
    let c = db.client().await;
    let mut keeper = db.client().await;
    let pooled = db.pool.get().await.unwrap();
    // The index the count reads, after a first batch has made the plans.
    const TURNS: &str = "tasklane.task_queue_turns";
    drained_batch(&c, &pooled, TURNS, 0, 2).await;
    let first = drained_batch(&c, &pooled, TURNS, 1, 2).await;
    raise_floors(&mut keeper).await;

    let mut holder = db.client().await;
    let held = common::hold_snapshot(&mut holder).await;
    let seen = count_in(&held).await;
    for round in 2..HISTORY / CHUNK + 2 {
        drained_batch(&c, &pooled, TURNS, round, CHUNK).await;
    }
    // Twice: a raise goes to the point the previous reading saw.
    raise_floors(&mut keeper).await;
    raise_floors(&mut keeper).await;
    let last = drained_batch(&c, &pooled, TURNS, HISTORY / CHUNK + 2, 2).await;
    assert_eq!(count_in(&held).await, seen, "the snapshot held");
    held.rollback().await.unwrap();
    eprintln!(
        "a batch submit of 2 fetched {first} pages of the turns index before the hold, \
         {last} after {HISTORY} tasks of its subject were claimed under it"
    );
    // The index is deeper by then, so each probe reads a page more (6 more pages in
    // all, seen); stepping over the subject's entries below the floor reads the pages
    // that hold them as well (40 more, seen, and more for as long as a hold lasts).
    assert!(
        last <= first + 15,
        "a batch submit fetched {last} pages of the turns index after {HISTORY} tasks of \
         its subject were claimed under the hold, {first} before it"
    );
}

/// The lease sweeps read the leased index from where the last sweep found nothing more
/// (the rescuer's from that clock, the attempt-deadline sweep's a grace before it), and
/// the queue-deadline sweep its deadline index likewise: what ended before is left for
/// the next sweep from the start.
#[tokio::test]
async fn sweeps_read_from_where_they_got_to_and_a_full_one_finds_the_rest() {
    use tasklane::store::{attempts, clock, recover};
    let db = common::test_db().await;
    let c = db.client().await;
    let expired = submit(&c, "expired", serde_json::json!({})).await;
    let overdue = submit(&c, "overdue", serde_json::json!({})).await;
    assert_eq!(claim(&c, 10).await.len(), 2);
    c.execute(
        "UPDATE tasklane.tasks SET lease_expires_at = now() - interval '1 hour' WHERE id = $1",
        &[&expired.id],
    )
    .await
    .unwrap();
    c.execute(
        "UPDATE tasklane.tasks SET lease_expires_at = now() - interval '1 hour', \
                attempt_deadline_at = now() - interval '1 hour' WHERE id = $1",
        &[&overdue.id],
    )
    .await
    .unwrap();
    let now = clock::now(&c).await.unwrap();
    let minute_ago = Some(now - chrono::Duration::minutes(1));

    let found = |from| {
        let c = &c;
        async move {
            attempts::overdue(c, 10, 5.0, from)
                .await
                .unwrap()
                .iter()
                .map(|o| o.id)
                .collect::<Vec<_>>()
        }
    };
    assert!(found(minute_ago).await.is_empty(), "behind the start");
    let within_grace = Some(now - chrono::Duration::minutes(60) + chrono::Duration::seconds(3));
    assert_eq!(
        found(within_grace).await,
        vec![overdue.id],
        "a grace before it"
    );
    assert_eq!(found(None).await, vec![overdue.id], "from the start");

    let rescue = |from| {
        let c = &c;
        async move {
            c.batch_execute("BEGIN").await.unwrap();
            let n = recover::recover(c, &recover::Lost::Expired { from }, 100)
                .await
                .unwrap();
            c.batch_execute("COMMIT").await.unwrap();
            n
        }
    };
    assert_eq!(rescue(minute_ago).await, 0, "behind the start");
    assert_eq!(rescue(None).await, 1, "from the start: `expired` alone");

    // The queue-deadline sweep: a waiting task whose deadline passed an hour ago.
    let late = submit(&c, "late", serde_json::json!({})).await;
    c.execute(
        "UPDATE tasklane.tasks SET deadline_at = now() - interval '1 hour' WHERE id = $1",
        &[&late.id],
    )
    .await
    .unwrap();
    assert_eq!(
        recover::expire_deadlines(&c, 100, minute_ago)
            .await
            .unwrap(),
        0,
        "behind the start"
    );
    assert_eq!(
        recover::expire_deadlines(&c, 100, None).await.unwrap(),
        1,
        "from the start"
    );
}

/// Writes a round of `PER_ROUND` notifications of `endpoint`, the round `n`th (due a
/// tenth of a second apart, from an hour ago), claims them from `start` (or from the
/// index's front) and settles them delivered; the outbox's pages the claim fetched.
async fn delivered_round(
    c: &tokio_postgres::Client,
    db: &common::TestDb,
    start: &tasklane::maintenance::start::Start<chrono::DateTime<chrono::Utc>>,
    endpoint: uuid::Uuid,
    n: i64,
    from_front: bool,
) -> i64 {
    use tasklane::store::outbox::{self, ClaimLimits, Settlement};
    const PER_ROUND: i64 = 50;
    c.execute(
        "INSERT INTO tasklane.webhook_deliveries \
           (endpoint_id, app, scope_id, task_id, event, next_attempt_at) \
         SELECT $1, $2, $3, gen_random_uuid(), 'task.succeeded', \
                now() - interval '1 hour' + ($4::int8 * $5::int8 + g) * interval '100 ms' \
         FROM generate_series(1, $5::int8) g",
        &[&endpoint, &APP, &SCOPE, &n, &PER_ROUND],
    )
    .await
    .unwrap();
    let limits = ClaimLimits {
        max: PER_ROUND,
        default_allowance: PER_ROUND,
        claim_for: std::time::Duration::from_secs(60),
        allowance: vec![],
    };
    let from = match from_front {
        true => None,
        false => start.next(std::time::Instant::now()),
    };
    let mut client = db.pool.get().await.unwrap();
    let tx = client.transaction().await.unwrap();
    let before = pages(&*tx, "tasklane.webhook_deliveries", true).await;
    let claim = outbox::claim(&tx, &limits, from).await.unwrap();
    let fetched = pages(&*tx, "tasklane.webhook_deliveries", true).await - before;
    tx.commit().await.unwrap();
    start.pending(claim.clock.unwrap(), claim.pending_from);
    assert_eq!(claim.rows.len() as i64, PER_ROUND, "round {n}");
    let mut outcomes: Vec<_> = claim
        .rows
        .iter()
        .map(|r| (r.id, r.claim_token, Settlement::Delivered { status: 204 }))
        .collect();
    let settled = outbox::settle_many(&client, &mut outcomes).await.unwrap();
    assert_eq!(settled as i64, PER_ROUND);
    fetched
}

/// The deliverer's claims under a held snapshot: a delivered notification leaves the due
/// index's predicate, but its entry stays while the snapshot is held, and a claim that
/// reads the index from its front steps over every notification delivered since. Kept
/// where the rows still pending begin (`Start::pending`), the claims step over those
/// delivered since the oldest pending one. Rows are due a tenth of a second apart from
/// an hour ago, so the clock's margin does not reach back over them.
#[tokio::test]
async fn the_deliverers_claims_do_not_walk_the_notifications_delivered_under_a_held_snapshot() {
    const ROUNDS: i64 = 80;
    let db = common::test_db().await;
    let c = db.client().await;
    let endpoint: uuid::Uuid = c
        .query_one(
            "INSERT INTO tasklane.webhook_endpoints (id, app, name, url, events) \
             VALUES (gen_random_uuid(), $1, 'held', 'http://127.0.0.1:9/', \
                     '{task.succeeded}') RETURNING id",
            &[&APP],
        )
        .await
        .unwrap()
        .get(0);
    let start = tasklane::maintenance::start::Start::default();
    delivered_round(&c, &db, &start, endpoint, 0, false).await;
    let first = delivered_round(&c, &db, &start, endpoint, 1, false).await;

    let mut holder = db.client().await;
    let held = common::hold_snapshot(&mut holder).await;
    let seen: i64 = held
        .query_one("SELECT count(*) FROM tasklane.webhook_deliveries", &[])
        .await
        .unwrap()
        .get(0);
    let mut last = 0;
    for n in 2..ROUNDS {
        last = delivered_round(&c, &db, &start, endpoint, n, false).await;
    }
    let front = delivered_round(&c, &db, &start, endpoint, ROUNDS, true).await;
    let still: i64 = held
        .query_one("SELECT count(*) FROM tasklane.webhook_deliveries", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(still, seen, "the snapshot held");
    held.rollback().await.unwrap();
    let dead = (ROUNDS - 2) * 50;
    eprintln!(
        "a claim of 50 fetched {first} of the outbox's pages before the hold, {last} after \
         {dead} notifications delivered under it; from the index's front, {front}"
    );
    // The walk from the front visits each dead entry's row: a page for every few rows.
    assert!(
        front >= first + dead / 10,
        "the claim from the front fetched {front} pages beside {dead} dead entries: \
         the hold did not keep them"
    );
    assert!(
        last <= 2 * first + 20,
        "a claim from the kept start fetched {last} of the outbox's pages after {dead} \
         notifications delivered under the hold, {first} before it"
    );
}
