//! Capacity limits under real concurrency: 64 submitters on 64 connections against one
//! app, a sampler watching the non-terminal count in the database, completions giving
//! room back; and every path that ends a task giving its slot back in its transaction.

use crate::admission_support;
use crate::common;

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::Arc;

use admission_support::*;
use common::fixtures::{self, APP};
use tasklane::admission::{LimitKind, RefusalCode};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixty_four_submitters_never_exceed_capacity_ten() {
    let db = common::test_db().await;
    let admin = db.client().await;
    set(
        &admin,
        limit(LimitKind::Capacity, Some(APP), None, 10, None),
    )
    .await;
    let tl = tasklane(&db.url, 64);

    // Sample the non-terminal count from the database for the whole test.
    let stop = Arc::new(AtomicBool::new(false));
    let max_seen = Arc::new(AtomicI64::new(0));
    let samples = Arc::new(AtomicUsize::new(0));
    let sampler = {
        let (stop, max_seen, samples, sampler_client) = (
            stop.clone(),
            max_seen.clone(),
            samples.clone(),
            db.client().await,
        );
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                max_seen.fetch_max(non_terminal(&sampler_client).await, Ordering::Relaxed);
                samples.fetch_add(1, Ordering::Relaxed);
            }
        })
    };

    // The safety-net reconcile runs all along: it must never free a live task's slot.
    let reconciler = {
        let (stop, mut rc) = (stop.clone(), db.client().await);
        tokio::spawn(async move {
            let (mut passes, mut freed) = (0u64, 0u64);
            while !stop.load(Ordering::Relaxed) {
                match tasklane::store::admission::reconcile_slots(&mut rc).await {
                    Ok(n) => freed += n,
                    Err(e) => assert_eq!(
                        e.code(),
                        Some(&tokio_postgres::error::SqlState::T_R_SERIALIZATION_FAILURE)
                    ),
                }
                passes += 1;
            }
            (passes, freed)
        })
    };

    // All at once, nothing finishing: exactly ten get in.
    let first = submit_together(&tl, APP, "a", 64, None).await;
    assert_eq!(
        first.admitted.len(),
        10,
        "refused: {:?}",
        first.refused.len()
    );
    assert!(first
        .refused
        .iter()
        .all(|c| *c == RefusalCode::CapacityExhausted));

    // Now a worker completes tasks while the 64 keep submitting: completions make room.
    let worker_stop = Arc::new(AtomicBool::new(false));
    let worker = {
        let (worker_stop, c) = (worker_stop.clone(), db.client().await);
        tokio::spawn(async move {
            let mut done = 0;
            while !worker_stop.load(Ordering::Relaxed) {
                done += complete_all(&c, None).await;
                tokio::task::yield_now().await;
            }
            done
        })
    };
    let admitted = Arc::new(AtomicUsize::new(10));
    let mut submitters = tokio::task::JoinSet::new();
    for s in 0..64 {
        let (tl, admitted) = (tl.clone(), admitted.clone());
        submitters.spawn(async move {
            let mut refusals = Vec::new();
            let mut i = 0;
            while admitted.load(Ordering::Relaxed) < 60 {
                match submit_one(&tl, &format!("b-{s}-{i}"), None).await {
                    Ok(_) => {
                        admitted.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(code) => refusals.push(code),
                }
                i += 1;
            }
            refusals
        });
    }
    let mut refusals = Vec::new();
    while let Some(r) = submitters.join_next().await {
        refusals.extend(r.unwrap());
    }
    worker_stop.store(true, Ordering::Relaxed);
    let completed = worker.await.unwrap();
    stop.store(true, Ordering::Relaxed);
    sampler.await.unwrap();
    let (passes, freed) = reconciler.await.unwrap();
    assert_eq!(freed, 0, "reconcile freed live slots");
    assert!(passes > 0);

    assert!(admitted.load(Ordering::Relaxed) >= 60);
    assert!(completed >= 50, "completed {completed}");
    assert!(
        refusals
            .iter()
            .all(|c| *c == RefusalCode::CapacityExhausted),
        "{refusals:?}"
    );
    let max = max_seen.load(Ordering::Relaxed);
    assert!(max <= 10, "saw {max} non-terminal tasks");
    assert!(samples.load(Ordering::Relaxed) > 10);
    // Slots held are exactly the tasks still in flight.
    assert_eq!(held_slots(&admin).await, non_terminal(&admin).await);
    println!(
        "capacity: admitted {}, refused {}, completed {completed}, max non-terminal {max}, samples {}",
        admitted.load(Ordering::Relaxed),
        refusals.len(),
        samples.load(Ordering::Relaxed)
    );
}

#[tokio::test]
async fn every_ending_gives_the_slot_back_in_its_transaction() {
    let db = common::test_db().await;
    let mut c = db.client().await;
    set(&c, limit(LimitKind::Capacity, None, None, 3, None)).await;
    set(
        &c,
        limit(LimitKind::Capacity, Some(APP), Some("u"), 2, None),
    )
    .await;
    let tl = tasklane(&db.url, 4);
    let a = submit_one(&tl, "a", Some("u")).await.unwrap().task;
    let b = submit_one(&tl, "b", Some("u")).await.unwrap().task;
    assert_eq!(
        submit_one(&tl, "c", Some("u")).await.unwrap_err(),
        RefusalCode::CapacityExhausted
    );
    let d = submit_one(&tl, "d", None).await.unwrap().task;
    assert_eq!(
        submit_one(&tl, "e", None).await.unwrap_err(),
        RefusalCode::CapacityExhausted
    );
    assert_eq!(held_slots(&c).await, 5); // global 3 + subject 2

    // Cancelling a queued task frees its global and subject slots at once.
    tasklane::store::cancel::cancel(&c, &tasklane::task::owner::Owner::app(APP), a.id)
        .await
        .unwrap();
    assert_eq!(held_slots(&c).await, 3);
    let cc = submit_one(&tl, "c", Some("u")).await.unwrap().task;
    assert_eq!(held_slots(&c).await, 5);

    // Claiming keeps slots; a permanent failure frees them.
    let claimed = fixtures::claim(&c, 10).await;
    assert_eq!(claimed.len(), 3);
    assert_eq!(held_slots(&c).await, 5);
    let failing = claimed.iter().find(|t| t.id == d.id).unwrap();
    let report = tasklane::task::settlement::Report::Error {
        code: "x".into(),
        message: "boom".into(),
        retryable: false,
        retry_after: None,
    };
    tasklane::store::lease::settle(
        &mut c,
        d.id,
        failing.lease_token,
        report,
        &fixtures::fast_backoff(),
    )
    .await
    .unwrap();
    assert_eq!(held_slots(&c).await, 4);

    // Deletion frees what the deleted task held; a rolled-back deletion frees nothing.
    c.batch_execute("BEGIN").await.unwrap();
    c.execute("DELETE FROM tasklane.tasks WHERE id = $1", &[&b.id])
        .await
        .unwrap();
    assert_eq!(held_slots(&c).await, 2);
    c.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(held_slots(&c).await, 4);
    c.execute("DELETE FROM tasklane.tasks WHERE id = $1", &[&b.id])
        .await
        .unwrap();
    assert_eq!(held_slots(&c).await, 2);

    // A lost lease requeues (still holding); the queue deadline then fails it and frees.
    fixtures::expire_lease(&c, cc.id).await;
    assert_eq!(fixtures::rescue_expired(&c).await, 1);
    assert_eq!(held_slots(&c).await, 2);
    c.execute(
        "UPDATE tasklane.tasks SET deadline_at = now() - interval '1 second' WHERE id = $1",
        &[&cc.id],
    )
    .await
    .unwrap();
    assert_eq!(
        tasklane::store::recover::expire_deadlines(&c, 100, None)
            .await
            .unwrap(),
        1
    );
    assert_eq!(held_slots(&c).await, 0);
    assert_eq!(non_terminal(&c).await, 0);
    // And the room is there again.
    submit_one(&tl, "again", Some("u")).await.unwrap();
}

#[tokio::test]
async fn lowering_a_limit_below_use_admits_nothing_until_under_it() {
    let db = common::test_db().await;
    let c = db.client().await;
    set(&c, limit(LimitKind::Capacity, Some(APP), None, 4, None)).await;
    let tl = tasklane(&db.url, 4);
    for i in 0..4 {
        submit_one(&tl, &format!("k{i}"), None).await.unwrap();
    }
    set(&c, limit(LimitKind::Capacity, Some(APP), None, 2, None)).await;
    // Four held, limit two: the next admission needs three to finish, whichever slots
    // (retired or not) the finishing tasks held.
    for finished in 1..=3 {
        let task = fixtures::claim_one(&c).await;
        let success = tasklane::task::settlement::Success::default();
        tasklane::store::lease::complete(&c, task.id, task.lease_token, &success)
            .await
            .unwrap();
        assert_eq!(held_slots(&c).await, 4 - finished);
        let admitted = submit_one(&tl, &format!("after-{finished}"), None)
            .await
            .is_ok();
        assert_eq!(admitted, finished == 3, "after {finished} finished");
    }
    assert_eq!(non_terminal(&c).await, 2);
    assert_eq!(held_slots(&c).await, 2);
    assert_eq!(
        count(&c, "SELECT count(*) FROM tasklane.capacity_slots").await,
        2
    );
    assert_eq!(
        submit_one(&tl, "full", None).await.unwrap_err(),
        RefusalCode::CapacityExhausted
    );
    // Raising it again admits at once.
    set(&c, limit(LimitKind::Capacity, Some(APP), None, 3, None)).await;
    submit_one(&tl, "raised", None).await.unwrap();
    assert_eq!(held_slots(&c).await, 3);
}

#[tokio::test]
async fn a_retried_task_goes_through_admission_again() {
    let db = common::test_db().await;
    let c = db.client().await;
    set(&c, limit(LimitKind::Capacity, Some(APP), None, 1, None)).await;
    let tl = tasklane(&db.url, 2);
    let first = submit_one(&tl, "a", None).await.unwrap().task;
    let owner = tasklane::task::owner::Owner::app(APP);
    tasklane::store::cancel::cancel(&c, &owner, first.id)
        .await
        .unwrap();
    let second = submit_one(&tl, "b", None).await.unwrap().task;
    // No room: the retry of the cancelled task is refused and nothing changes.
    c.batch_execute("BEGIN").await.unwrap();
    let refused = tasklane::admission::readmit(&c, first.id, APP, None)
        .await
        .unwrap();
    assert_eq!(refused.unwrap_err().code, RefusalCode::CapacityExhausted);
    c.batch_execute("ROLLBACK").await.unwrap();
    // Room again: the retry takes the slot, and gives it back when the task ends.
    tasklane::store::cancel::cancel(&c, &owner, second.id)
        .await
        .unwrap();
    c.batch_execute("BEGIN").await.unwrap();
    tasklane::admission::readmit(&c, first.id, APP, None)
        .await
        .unwrap()
        .unwrap();
    c.execute(
        "UPDATE tasklane.tasks SET state = 'queued', finished_at = NULL WHERE id = $1",
        &[&first.id],
    )
    .await
    .unwrap();
    c.batch_execute("COMMIT").await.unwrap();
    assert_eq!(held_slots(&c).await, 1);
    assert_eq!(
        submit_one(&tl, "c", None).await.unwrap_err(),
        RefusalCode::CapacityExhausted
    );
    tasklane::store::cancel::cancel(&c, &owner, first.id)
        .await
        .unwrap();
    assert_eq!(held_slots(&c).await, 0);
}

#[tokio::test]
async fn a_new_limit_counts_the_tasks_already_in_flight() {
    let db = common::test_db().await;
    let c = db.client().await;
    let tl = tasklane(&db.url, 2);
    for i in 0..4 {
        submit_one(&tl, &format!("k{i}"), Some("u")).await.unwrap();
    }
    let done = fixtures::claim_one(&c).await;
    tasklane::store::lease::complete(&c, done.id, done.lease_token, &Default::default())
        .await
        .unwrap();
    // Three in flight, then a limit of two for the subject: nothing until one ends.
    set(
        &c,
        limit(LimitKind::Capacity, Some(APP), Some("u"), 2, None),
    )
    .await;
    assert_eq!(held_slots(&c).await, 3);
    assert_eq!(
        submit_one(&tl, "more", Some("u")).await.unwrap_err(),
        RefusalCode::CapacityExhausted
    );
    submit_one(&tl, "other-subject", Some("v")).await.unwrap();
    // The next of u's and v's task (claimed first: its subject had none queued) end.
    for task in fixtures::claim(&c, 2).await {
        tasklane::store::lease::complete(&c, task.id, task.lease_token, &Default::default())
            .await
            .unwrap();
    }
    assert_eq!(
        submit_one(&tl, "more", Some("u")).await.unwrap_err(),
        RefusalCode::CapacityExhausted
    );
    // One more of u's ends (cancelled while queued): one in flight, room for one.
    let queued: uuid::Uuid = c
        .query_one("SELECT id FROM tasklane.tasks WHERE usage_subject = 'u' AND state = 'queued' ORDER BY id LIMIT 1", &[])
        .await
        .unwrap()
        .get(0);
    tasklane::store::cancel::cancel(&c, &tasklane::task::owner::Owner::app(APP), queued)
        .await
        .unwrap();
    submit_one(&tl, "more", Some("u")).await.unwrap();
    assert_eq!(
        submit_one(&tl, "more-2", Some("u")).await.unwrap_err(),
        RefusalCode::CapacityExhausted
    );
}

#[tokio::test]
async fn reconcile_frees_slots_that_bypassed_the_triggers() {
    let db = common::test_db().await;
    let mut c = db.client().await;
    set(&c, limit(LimitKind::Capacity, Some(APP), None, 3, None)).await;
    tasklane::admission::set_resource(&c, "gpu", 1)
        .await
        .unwrap();
    let tl = tasklane(&db.url, 2);
    let kept = submit_one(&tl, "kept", None).await.unwrap().task;
    let lost = submit_one(&tl, "lost", None).await.unwrap().task;
    // Something deletes a task with the triggers off, and a slot is held by nobody.
    c.batch_execute("SET session_replication_role = replica")
        .await
        .unwrap();
    c.execute("DELETE FROM tasklane.tasks WHERE id = $1", &[&lost.id])
        .await
        .unwrap();
    c.batch_execute("RESET session_replication_role")
        .await
        .unwrap();
    c.execute(
        "UPDATE tasklane.resource_slots SET task_id = gen_random_uuid()",
        &[],
    )
    .await
    .unwrap();
    assert_eq!(held_slots(&c).await, 2);
    assert_eq!(
        tasklane::store::admission::reconcile_slots(&mut c)
            .await
            .unwrap(),
        2
    );
    assert_eq!(held_slots(&c).await, 1);
    assert_eq!(
        count(
            &c,
            "SELECT count(*) FROM tasklane.resource_slots WHERE task_id IS NOT NULL"
        )
        .await,
        0
    );
    // The live task keeps its slot, and a second pass finds nothing.
    assert_eq!(
        count(
            &c,
            "SELECT count(*) FROM tasklane.capacity_slots WHERE task_id IS NOT NULL"
        )
        .await,
        1
    );
    assert_eq!(
        tasklane::store::admission::reconcile_slots(&mut c)
            .await
            .unwrap(),
        0
    );
    assert!(fixtures::get(&c, kept.id).await.state == tasklane::task::TaskState::Queued);
}
