//! A held vacuum horizon: a REPEATABLE READ transaction keeps its snapshot open while
//! tasks are submitted, claimed and completed in volume, so no dead row of the queue
//! can be removed. A claim must not pay for them: the index entries it reads stay
//! those of a claim beside a clean queue, however many tasks were claimed since the
//! snapshot was taken. Counted in index tuples read (pg_stat's per-transaction
//! counters), not in time.

use crate::common;

use common::fixtures::*;
use tasklane::store::claim;
use tasklane::store::complete_many::complete_many;
use tasklane::store::turn_floors;
use tasklane::task::{Locality, Privacy};

const ROUNDS: usize = 16;
const PER_ROUND: usize = 100;
const CLAIM: i64 = 10;
/// Claims between two raises of the floors: the maintenance role raises them every
/// 100 ms, about 40 claimed tasks apart at 400 tasks a second.
const CLAIMS_PER_RAISE: usize = 4;

/// Index entries of the mirror's indexes read, as this connection's transaction counts
/// them so far (`xact`) or as the statistics count them for the whole database.
async fn index_reads<C: tokio_postgres::GenericClient + Sync>(c: &C, xact: bool) -> i64 {
    let function = if xact {
        "pg_stat_get_xact_tuples_returned"
    } else {
        "pg_stat_get_tuples_returned"
    };
    c.query_one(
        &format!(
            "SELECT coalesce(sum({function}(i.indexrelid)), 0)::int8 \
             FROM pg_index i WHERE i.indrelid = 'tasklane.task_queue'::regclass"
        ),
        &[],
    )
    .await
    .unwrap()
    .get(0)
}

/// The database's count of the mirror's index entries read, once this connection has
/// flushed its own statistics (each submit commits in a transaction of its own).
async fn flushed_reads(c: &tokio_postgres::Client) -> i64 {
    c.execute("SELECT pg_stat_force_next_flush()", &[])
        .await
        .unwrap();
    c.execute("SELECT 1", &[]).await.unwrap();
    c.execute("SELECT pg_stat_clear_snapshot()", &[])
        .await
        .unwrap();
    index_reads(c, false).await
}

/// One round: `PER_ROUND` single submits, then claims of `CLAIM` at `locality` until none
/// is left, each claimed batch completed. Returns the index entries read per claim and
/// per submit.
async fn round(
    c: &mut tokio_postgres::Client,
    settle: &tasklane::store::Pooled,
    keeper: &mut tokio_postgres::Client,
    n: usize,
    locality: Locality,
) -> (f64, f64) {
    let before = flushed_reads(c).await;
    for i in 0..PER_ROUND {
        // External claims take only the tasks that may leave the premises.
        submit_with(c, &format!("r{n}-{i}"), serde_json::json!({}), |r| {
            r.privacy = Some(Privacy::ExternalAllowed)
        })
        .await;
    }
    let submit_reads = flushed_reads(c).await - before;
    let (mut claims, mut claim_reads, mut claimed_total) = (0, 0, 0);
    loop {
        let tx = c.transaction().await.unwrap();
        let before = index_reads(&tx, true).await;
        let claimed = claim::claim(&tx, &claimant(locality), &[TYPE.to_owned()], CLAIM)
            .await
            .unwrap();
        let read = index_reads(&tx, true).await - before;
        tx.commit().await.unwrap();
        if claimed.is_empty() {
            break;
        }
        claims += 1;
        claim_reads += read;
        if claims % CLAIMS_PER_RAISE == 0 {
            turn_floors::raise(keeper).await.unwrap();
        }
        claimed_total += claimed.len();
        complete_many(settle, &successes(&claimed), None)
            .await
            .unwrap();
    }
    assert_eq!(claimed_total, PER_ROUND, "round {n}: every task claimed");
    (
        claim_reads as f64 / claims as f64,
        submit_reads as f64 / PER_ROUND as f64,
    )
}

#[tokio::test]
async fn claims_do_not_walk_the_dead_rows_a_held_snapshot_keeps() {
    held_snapshot(Locality::Local).await;
}

/// External claims (remote workers, the external loops) read from the same floors.
#[tokio::test]
async fn external_claims_do_not_walk_the_dead_rows_a_held_snapshot_keeps() {
    held_snapshot(Locality::External).await;
}

async fn held_snapshot(locality: Locality) {
    let db = common::test_db().await;
    let mut c = db.client().await;
    // As the claim pool's sessions run claims.
    c.batch_execute(tasklane::store::connect::CLAIM_SESSION)
        .await
        .unwrap();
    let mut keeper = db.client().await;
    let settle = db.pool.get().await.unwrap();
    let (first_claim, first_submit) = round(&mut c, &settle, &mut keeper, 0, locality).await;

    let mut holder = db.client().await;
    let held = holder
        .build_transaction()
        .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
        .start()
        .await
        .unwrap();
    // A real read, so the transaction has its snapshot from here on.
    let seen = count_in(&held).await;

    let mut last = (0.0, 0.0);
    for n in 1..=ROUNDS {
        last = round(&mut c, &settle, &mut keeper, n, locality).await;
    }
    // The snapshot was held throughout: it still sees the tasks as they were.
    assert_eq!(count_in(&held).await, seen, "the snapshot held");
    held.rollback().await.unwrap();

    let (last_claim, last_submit) = last;
    let dead = ROUNDS * PER_ROUND;
    eprintln!(
        "{locality:?}: index entries read per claim: {first_claim:.1} before the hold, {last_claim:.1} after \
         {dead} tasks claimed under it; per submit {first_submit:.1} -> {last_submit:.1}"
    );
    // A claim of 10 walking the dead entries of the 1,600 tasks claimed under the hold
    // reads hundreds; one that skips them reads about what it read before.
    assert!(
        last_claim <= 2.0 * first_claim + 20.0,
        "a claim read {last_claim:.1} index entries under the hold, {first_claim:.1} before"
    );
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
    let raised = turn_floors::raise(&mut keeper).await.unwrap();
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
    turn_floors::raise(&mut keeper).await.unwrap();
    // Due, `later` keeps its turn and stays behind, and is claimed from there.
    make_due(&c, later.id).await;
    let (still_behind, _, _) = mirror_row(&c, later.id).await;
    assert!(still_behind, "a kept turn below the floor stays behind");
    assert_eq!(
        claim(&c, 10).await.iter().map(|t| t.id).collect::<Vec<_>>(),
        vec![later.id]
    );
}
