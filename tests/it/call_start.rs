//! A provider call's start in one round trip (`Tasklane::start_call`,
//! `sql/call_start.sql`): the route's circuit permit, its one probe and the attempt's
//! budget reservation together. A skipped route reserves nothing; a closed circuit or
//! the probe reserves as `reserve_budget` does; of many concurrent starts on several
//! pools exactly one takes the probe, round after round, and only it reserves; an
//! unreachable database fails safe (closed, but no call without a reservation).

use std::sync::Arc;

use futures_util::future::join_all;
use serde_json::json;
use tasklane::admission::{LimitKind, LimitSpec, RefusalCode};
use tasklane::service::circuits::{CircuitSpec, Permit};
use tasklane::service::{ClaimedTask, ServiceError, Tasklane};
use tokio::sync::Barrier;
use tokio_postgres::Client;

use crate::common;
use common::fixtures;

const ROUTE: &str = "local-vllm";

fn spec(failures: u32) -> CircuitSpec<'static> {
    CircuitSpec {
        route_name: ROUTE,
        failures,
        open_seconds: 3600,
        probe_seconds: 600,
    }
}

fn service(url: &str, size: usize) -> Tasklane {
    common::service::tasklane(common::pool(url, size), [fixtures::task_type()])
}

async fn background_budget(c: &Client, max: i64) {
    let spec = LimitSpec {
        kind: LimitKind::Budget,
        app: Some(fixtures::APP.to_owned()),
        usage_subject: None,
        limit: max,
        window_seconds: None,
    };
    tasklane::admission::set_limit(c, &spec)
        .await
        .expect("set the budget");
}

async fn claimed(c: &Client, prefix: &str, n: usize) -> Vec<ClaimedTask> {
    for i in 0..n {
        fixtures::submit_with(c, &format!("{prefix}{i}"), json!({}), |_| {}).await;
    }
    let claimed = fixtures::claim(c, n as i64).await;
    assert_eq!(claimed.len(), n);
    claimed
}

async fn reserved_units(c: &Client) -> i64 {
    fixtures::count(
        c,
        "SELECT coalesce(sum(units), 0)::bigint FROM tasklane.budget_reservations",
    )
    .await
}

/// Makes the open circuit's open time and probe lease end now.
async fn end_open_time(c: &Client) {
    let n = c
        .execute(
            "UPDATE tasklane.circuits SET retry_at = now() - interval '1 second', \
             probe_until = NULL WHERE route_name = $1 AND opened_at IS NOT NULL",
            &[&ROUTE],
        )
        .await
        .unwrap();
    assert_eq!(n, 1, "the circuit is open");
}

#[tokio::test]
async fn a_call_start_reserves_only_when_the_call_may_go() {
    let db = common::test_db().await;
    let c = db.client().await;
    let service = service(&db.url, 2);
    background_budget(&c, 100).await;
    let tasks = claimed(&c, "t", 4).await;
    let spec = spec(1);

    // Closed (no row): the call goes and the units are reserved; nothing asked,
    // nothing reserved, and the route still has no circuit row.
    let start = service.start_call(&spec, &tasks[0], Some(30)).await;
    assert_eq!(start.permit, Permit::Call { failures: 0 });
    assert!(matches!(start.reservation, Some(Ok(()))));
    let start = service.start_call(&spec, &tasks[0], None).await;
    assert!(start.reservation.is_none());
    assert_eq!(reserved_units(&c).await, 30);
    let rows = fixtures::count(&c, "SELECT count(*) FROM tasklane.circuits").await;
    assert_eq!(rows, 0, "the healthy path writes no circuit row");

    // Open: skipped, and a skipped route reserves nothing.
    service
        .circuit_record(&spec, Permit::Call { failures: 0 }, true)
        .await;
    let start = service.start_call(&spec, &tasks[1], Some(30)).await;
    assert!(matches!(start.permit, Permit::Open { .. }), "{start:?}");
    assert!(start.reservation.is_none());
    assert_eq!(reserved_units(&c).await, 30);

    // Past its open time: this start takes the probe and reserves; the next skips.
    end_open_time(&c).await;
    let start = service.start_call(&spec, &tasks[1], Some(30)).await;
    assert_eq!(start.permit, Permit::Probe);
    assert!(matches!(start.reservation, Some(Ok(()))));
    let start = service.start_call(&spec, &tasks[2], Some(30)).await;
    assert!(matches!(start.permit, Permit::Open { .. }), "{start:?}");
    assert!(start.reservation.is_none());
    assert_eq!(reserved_units(&c).await, 60);

    // The probe closes it; the budget then refuses what does not fit.
    service.circuit_record(&spec, Permit::Probe, false).await;
    let start = service.start_call(&spec, &tasks[2], Some(50)).await;
    assert_eq!(start.permit, Permit::Call { failures: 0 });
    assert!(matches!(start.reservation, Some(Ok(()))));
    let start = service.start_call(&spec, &tasks[3], Some(1)).await;
    match start.reservation {
        Some(Err(ServiceError::Refused(refusal))) => {
            assert_eq!(refusal.code, RefusalCode::BudgetExhausted)
        }
        other => panic!("expected budget_exhausted, got {other:?}"),
    }
    assert_eq!(reserved_units(&c).await, 110);

    // A stale lease and negative units are answered as reserve_budget answers them.
    let mut stale = tasks[3].clone();
    stale.lease_token = uuid::Uuid::new_v4();
    let start = service.start_call(&spec, &stale, Some(1)).await;
    assert!(matches!(
        start.reservation,
        Some(Err(ServiceError::LeaseLost))
    ));
    let start = service.start_call(&spec, &tasks[3], Some(-1)).await;
    let invalid = start.reservation.expect("asked").unwrap_err();
    assert_eq!(invalid.code(), "validation_failed");
}

/// 16 starts at once on 4 services (as replicas) of 5 connections each, on a circuit
/// whose open time is over, 20 rounds: exactly one takes the probe and only it
/// reserves; the others skip the route.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn exactly_one_probe_per_round_among_concurrent_call_starts() {
    let db = common::test_db().await;
    let c = db.client().await;
    let replicas: Vec<Tasklane> = (0..4).map(|_| service(&db.url, 5)).collect();
    let mut held = Vec::new();
    for replica in &replicas {
        for _ in 0..4 {
            held.push(replica.pool().get().await.expect("connect"));
        }
    }
    drop(held);
    background_budget(&c, 1_000_000).await;
    let tasks = Arc::new(claimed(&c, "p", 16).await);
    let spec = spec(1);
    replicas[0]
        .circuit_record(&spec, Permit::Call { failures: 0 }, true)
        .await;

    for round in 0..20_i64 {
        end_open_time(&c).await;
        let barrier = Arc::new(Barrier::new(16));
        let starts = (0..16).map(|i| {
            let replica = replicas[i % 4].clone();
            let barrier = barrier.clone();
            let tasks = tasks.clone();
            async move {
                barrier.wait().await;
                replica.start_call(&spec, &tasks[i], Some(1)).await
            }
        });
        let starts = join_all(starts).await;
        let probes = starts.iter().filter(|s| s.permit == Permit::Probe).count();
        let open = starts
            .iter()
            .filter(|s| matches!(s.permit, Permit::Open { .. }) && s.reservation.is_none())
            .count();
        assert_eq!((probes, open), (1, 15), "round {round}: {starts:?}");
        let prober = starts.iter().find(|s| s.permit == Permit::Probe).unwrap();
        assert!(matches!(prober.reservation, Some(Ok(()))));
        assert_eq!(reserved_units(&c).await, round + 1, "round {round}");
        // The probe fails: open again.
        replicas[round as usize % 4]
            .circuit_record(&spec, Permit::Probe, true)
            .await;
    }
}

#[tokio::test]
async fn an_unreachable_database_fails_safe_but_reserves_nothing() {
    let db = common::test_db().await;
    let c = db.client().await;
    let task = claimed(&c, "u", 1).await.remove(0);
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let url = format!("postgres://tasklane@127.0.0.1:{port}/nowhere");
    let service = common::service::tasklane(common::pool(&url, 2), []);
    // The circuit counts as closed; a reservation asked for is an error: no call.
    let start = service.start_call(&spec(1), &task, None).await;
    assert_eq!(start.permit, Permit::Call { failures: 0 });
    assert!(start.reservation.is_none());
    let start = service.start_call(&spec(1), &task, Some(5)).await;
    assert_eq!(start.permit, Permit::Call { failures: 0 });
    let error = start.reservation.expect("asked").unwrap_err();
    assert!(!error.is_refusal(), "{error:?}");
}
