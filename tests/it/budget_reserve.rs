//! The budget recheck before a provider call (`Tasklane::reserve_budget`): refused with
//! `budget_exhausted` when the task's budget is spent (today's usage plus what
//! in-flight attempts reserved); many attempts reserving at once from separate
//! connections overshoot the budget by less than one reservation; the reservation of an
//! attempt that ended (settled, lost) no longer counts and is pruned.

use std::sync::Arc;

use futures_util::future::join_all;
use serde_json::json;
use tasklane::admission::{LimitKind, LimitSpec, RefusalCode};
use tasklane::service::{ClaimedTask, ServiceError, Success, Tasklane};
use tokio::sync::Barrier;
use tokio_postgres::Client;

use crate::common;
use common::fixtures;

fn service(url: &str, size: usize) -> Tasklane {
    common::service::tasklane(common::pool(url, size), [fixtures::task_type()])
}

async fn budget(c: &Client, subject: Option<&str>, max: i64) -> i64 {
    let spec = LimitSpec {
        kind: LimitKind::Budget,
        app: Some(fixtures::APP.to_owned()),
        usage_subject: subject.map(str::to_owned),
        limit: max,
        window_seconds: None,
    };
    tasklane::admission::set_limit(c, &spec)
        .await
        .expect("set the budget")
}

/// Submits `n` tasks of `subject` (None: background) and claims them all.
async fn claimed(c: &Client, prefix: &str, subject: Option<&str>, n: usize) -> Vec<ClaimedTask> {
    for i in 0..n {
        fixtures::submit_with(c, &format!("{prefix}{i}"), json!({}), |r| {
            r.usage_subject = subject.map(str::to_owned);
        })
        .await;
    }
    let claimed = fixtures::claim(c, n as i64).await;
    assert_eq!(claimed.len(), n);
    claimed
}

async fn complete(service: &Tasklane, task: &ClaimedTask, units: i64) {
    let success = Success {
        result: json!({}),
        usage_units: Some(units),
        ..Success::default()
    };
    service
        .complete(None, task.id, task.lease_token, &success)
        .await
        .expect("complete");
}

fn exhausted(result: Result<(), ServiceError>) -> i64 {
    match result {
        Err(ServiceError::Refused(refusal)) => {
            assert_eq!(refusal.code, RefusalCode::BudgetExhausted);
            let wait = refusal.retry_after.as_secs();
            assert!(
                (1..=86_400).contains(&wait),
                "until the next UTC day: {wait}"
            );
            refusal.limit_id.expect("the refusing budget")
        }
        other => panic!("expected budget_exhausted, got {other:?}"),
    }
}

async fn reservations(c: &Client) -> i64 {
    fixtures::count(c, "SELECT count(*) FROM tasklane.budget_reservations").await
}

#[tokio::test]
async fn a_spent_budget_refuses_the_provider_call() {
    let db = common::test_db().await;
    let c = db.client().await;
    let service = service(&db.url, 2);
    let background = budget(&c, None, 100).await;
    budget(&c, Some("alice"), 50).await;
    // Submitted while the budgets have room (admission would refuse them after).
    let tasks = claimed(&c, "bg", None, 2).await;
    let alice = claimed(&c, "alice", Some("alice"), 2).await;
    let bob = claimed(&c, "bob", Some("bob"), 1).await;

    service.reserve_budget(&tasks[0], 30).await.expect("room");
    assert_eq!(reservations(&c).await, 1);
    complete(&service, &tasks[0], 100).await;
    let refused = exhausted(service.reserve_budget(&tasks[1], 1).await);
    assert_eq!(
        refused, background,
        "the app's background budget refused it"
    );
    let written = fixtures::count(
        &c,
        &format!(
            "SELECT count(*) FROM tasklane.budget_reservations WHERE task_id = '{}'",
            tasks[1].id
        ),
    )
    .await;
    assert_eq!(written, 0, "a refusal writes nothing");

    // A subject's own budget pays for its tasks: the spent background one does not
    // refuse them, their own does.
    service
        .reserve_budget(&alice[0], 50)
        .await
        .expect("alice has room");
    exhausted(service.reserve_budget(&alice[1], 1).await);
    // No budget for bob: nothing to reserve, nothing written.
    let before = reservations(&c).await;
    service
        .reserve_budget(&bob[0], 1_000_000)
        .await
        .expect("unlimited");
    assert_eq!(reservations(&c).await, before);

    // A stale lease, a deleted task, negative units.
    let mut stale = alice[1].clone();
    stale.lease_token = uuid::Uuid::new_v4();
    assert!(matches!(
        service.reserve_budget(&stale, 1).await,
        Err(ServiceError::LeaseLost)
    ));
    stale.id = uuid::Uuid::new_v4();
    assert!(matches!(
        service.reserve_budget(&stale, 1).await,
        Err(ServiceError::TaskGone)
    ));
    let negative = service.reserve_budget(&alice[1], -1).await.unwrap_err();
    assert_eq!(negative.code(), "validation_failed");
}

/// 40 attempts reserve at once, spread over 4 services (as replicas) of 10 connections
/// each: the grants stop as soon as the reservations reach the budget, so the budget
/// is overshot by less than one reservation, never by all of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_reservations_overshoot_by_less_than_one() {
    let db = common::test_db().await;
    let c = db.client().await;
    let services: Vec<Tasklane> = (0..4).map(|_| service(&db.url, 10)).collect();
    let mut held = Vec::new();
    for service in &services {
        for _ in 0..10 {
            held.push(service.pool().get().await.expect("connect"));
        }
    }
    drop(held);
    const MAX: i64 = 1_000;
    for (round, units) in [300_i64, 100, 250, 7].into_iter().enumerate() {
        let subject = format!("s{round}");
        budget(&c, Some(&subject), MAX).await;
        let tasks = claimed(&c, &format!("r{round}-"), Some(&subject), 40).await;
        let barrier = Arc::new(Barrier::new(tasks.len()));
        let calls = tasks.iter().enumerate().map(|(i, task)| {
            let service = &services[i % services.len()];
            let barrier = barrier.clone();
            async move {
                barrier.wait().await;
                service.reserve_budget(task, units).await
            }
        });
        let results = join_all(calls).await;
        let granted = results.iter().filter(|r| r.is_ok()).count() as i64;
        for result in results.into_iter().filter(|r| r.is_err()) {
            exhausted(result);
        }
        // Grants go on while the reserved units are below the max: ceil(MAX / units),
        // or every attempt when they all fit.
        let expected = ((MAX + units - 1) / units).min(40);
        assert_eq!(granted, expected, "round {round}: {units} units each");
        let reserved: i64 = c
            .query_one(
                "SELECT coalesce(sum(units), 0)::bigint FROM tasklane.budget_reservations \
                 WHERE usage_subject = $1",
                &[&subject],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(reserved, granted * units);
        assert!(reserved < MAX + units, "round {round}: {reserved} reserved");
        for task in &tasks {
            complete(&services[0], task, 0).await;
        }
    }
}

#[tokio::test]
async fn reservations_of_ended_attempts_no_longer_count() {
    let db = common::test_db().await;
    let c = db.client().await;
    let service = service(&db.url, 2);
    budget(&c, None, 1_000).await;
    let tasks = claimed(&c, "t", None, 3).await;

    service
        .reserve_budget(&tasks[0], 1_000)
        .await
        .expect("room");
    exhausted(service.reserve_budget(&tasks[1], 1).await);
    // The attempt settles having used 200: its charge counts, its reservation not.
    complete(&service, &tasks[0], 200).await;
    service
        .reserve_budget(&tasks[1], 800)
        .await
        .expect("200 spent");
    assert_eq!(
        reservations(&c).await,
        1,
        "the settled attempt's was pruned"
    );
    exhausted(service.reserve_budget(&tasks[2], 1).await);

    // tasks[1]'s worker is lost: its attempt ended, its reservation stops counting.
    fixtures::expire_lease(&c, tasks[1].id).await;
    assert_eq!(fixtures::rescue_expired(&c).await, 1);
    service
        .reserve_budget(&tasks[2], 800)
        .await
        .expect("the lost one's is gone");
    exhausted(service.reserve_budget(&tasks[2], 1).await);

    // Its next attempt starts afresh; the pruner forgets what ended.
    fixtures::make_due(&c, tasks[1].id).await;
    let again = fixtures::claim_one(&c).await;
    assert_eq!((again.id, again.attempt), (tasks[1].id, 2));
    complete(&service, &tasks[2], 0).await;
    service
        .reserve_budget(&again, 10)
        .await
        .expect("room again");
    complete(&service, &again, 0).await;
    assert!(
        reservations(&c).await >= 1,
        "not pruned without a reservation"
    );
    tasklane::store::admission::prune(&c, 100).await.unwrap();
    assert_eq!(
        reservations(&c).await,
        0,
        "the pruner deleted the ended ones"
    );
}
