//! The cluster-wide circuit breaker (`tasklane.circuits`): several services, each with
//! its own pool (as replicas have), race on one circuit over real connections. It opens
//! once; of many concurrent callers exactly one gets the probe, round after round; a
//! dead prober's lease expires; the probe closes or reopens it; an operator resets it;
//! the healthy path writes nothing; an unreachable database fails safe (closed).

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::join_all;
use tasklane::service::circuits::{CircuitSpec, Permit};
use tasklane::service::Tasklane;
use tokio::sync::Barrier;

use crate::common;
use common::eventually;

const ROUTE: &str = "local-vllm";

fn spec(failures: u32, open_seconds: u32, probe_seconds: u32) -> CircuitSpec<'static> {
    CircuitSpec {
        route_name: ROUTE,
        failures,
        open_seconds,
        probe_seconds,
    }
}

/// `n` services on the database at `url`, each with a pool of `size` connections.
fn replicas(url: &str, n: usize, size: usize) -> Vec<Tasklane> {
    (0..n)
        .map(|_| common::service::tasklane(common::pool(url, size), []))
        .collect()
}

/// Opens every pooled connection once, so a race is not a race to connect.
async fn warm(replicas: &[Tasklane], per_replica: usize) {
    let mut held = Vec::new();
    for replica in replicas {
        for _ in 0..per_replica {
            held.push(replica.pool().get().await.expect("connect"));
        }
    }
}

/// Makes an open circuit's open time and probe lease end now (instead of waiting).
async fn end_open_time(client: &tokio_postgres::Client) {
    let n = client
        .execute(
            "UPDATE tasklane.circuits SET retry_at = now() - interval '1 second', \
             probe_until = NULL WHERE route_name = $1 AND opened_at IS NOT NULL",
            &[&ROUTE],
        )
        .await
        .unwrap();
    assert_eq!(n, 1, "the circuit is open");
}

/// The circuit's state as the admin list shows it.
async fn state(service: &Tasklane) -> Option<(String, i32)> {
    service
        .circuits()
        .await
        .unwrap()
        .into_iter()
        .find(|c| c.route_name == ROUTE)
        .map(|c| (c.state, c.consecutive_failures))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_failures_open_the_circuit_once() {
    let db = common::test_db().await;
    let replicas = replicas(&db.url, 4, 5);
    warm(&replicas, 4).await;
    // 16 callers on 4 replicas fail at once; the threshold is 5: the failure that
    // reaches it opens the circuit, the others only count. Through the store, which
    // says which failure opened it.
    let barrier = Arc::new(Barrier::new(16));
    let calls = (0..16).map(|i| {
        let replica = replicas[i % 4].clone();
        let barrier = barrier.clone();
        async move {
            let client = replica.pool().get().await.unwrap();
            barrier.wait().await;
            tasklane::store::circuits::count_failure(tasklane::store::client(&client), ROUTE, 5, 30)
                .await
                .unwrap()
        }
    });
    let opened = join_all(calls).await;
    assert_eq!(opened.iter().filter(|o| **o).count(), 1, "{opened:?}");
    assert_eq!(state(&replicas[0]).await, Some(("open".to_owned(), 16)));
    // Every replica now skips the route, without a call.
    for replica in &replicas {
        assert!(matches!(
            replica.circuit_permit(&spec(5, 30, 60)).await,
            Permit::Open { .. }
        ));
    }

    // Through the service too: 5 concurrent transient failures on a fresh route open it.
    let other = CircuitSpec {
        route_name: "other",
        ..spec(5, 30, 60)
    };
    let permits = join_all((0..5).map(|i| replicas[i % 4].circuit_permit(&other))).await;
    assert!(permits.iter().all(|p| *p == Permit::Call { failures: 0 }));
    let fails = permits
        .into_iter()
        .enumerate()
        .map(|(i, permit)| replicas[i % 4].circuit_record(&other, permit, true));
    join_all(fails).await;
    assert!(matches!(
        replicas[3].circuit_permit(&other).await,
        Permit::Open { .. }
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn exactly_one_probe_per_round_among_concurrent_callers() {
    let db = common::test_db().await;
    let replicas = replicas(&db.url, 4, 5);
    warm(&replicas, 4).await;
    let client = db.client().await;
    let spec = spec(1, 3600, 600);
    let permit = replicas[0].circuit_permit(&spec).await;
    replicas[0].circuit_record(&spec, permit, true).await;
    assert_eq!(state(&replicas[0]).await.unwrap().0, "open");

    for round in 0..20 {
        end_open_time(&client).await;
        assert_eq!(state(&replicas[0]).await.unwrap().0, "half_open");
        let barrier = Arc::new(Barrier::new(16));
        let callers = (0..16).map(|i| {
            let replica = replicas[i % 4].clone();
            let barrier = barrier.clone();
            async move {
                barrier.wait().await;
                replica.circuit_permit(&spec).await
            }
        });
        let permits = join_all(callers).await;
        let probes = permits.iter().filter(|p| **p == Permit::Probe).count();
        let open = permits
            .iter()
            .filter(|p| matches!(p, Permit::Open { .. }))
            .count();
        assert_eq!((probes, open), (1, 15), "round {round}: {permits:?}");
        // The probe fails: open again for the open time, nobody may probe.
        replicas[round % 4]
            .circuit_record(&spec, Permit::Probe, true)
            .await;
        assert_eq!(
            state(&replicas[0]).await.unwrap().0,
            "open",
            "round {round}"
        );
        assert!(matches!(
            replicas[1].circuit_permit(&spec).await,
            Permit::Open { .. }
        ));
    }
}

#[tokio::test]
async fn a_dead_probers_lease_expires_and_the_next_caller_probes() {
    let db = common::test_db().await;
    let service = common::service::tasklane(db.pool.clone(), []);
    let client = db.client().await;
    // A one-second probe lease: the prober "dies" (never records).
    let spec = spec(1, 3600, 1);
    service
        .circuit_record(&spec, Permit::Call { failures: 0 }, true)
        .await;
    end_open_time(&client).await;
    assert_eq!(service.circuit_permit(&spec).await, Permit::Probe);
    // While the lease runs, others skip the route until its end.
    let Permit::Open { retry_at } = service.circuit_permit(&spec).await else {
        panic!("the probe is taken");
    };
    assert!(retry_at > chrono::Utc::now() - chrono::Duration::seconds(5));
    // Once it expired, exactly the next caller probes.
    eventually(
        Duration::from_secs(30),
        "the probe lease to expire",
        || async { service.circuit_permit(&spec).await == Permit::Probe },
    )
    .await;
    assert!(matches!(
        service.circuit_permit(&spec).await,
        Permit::Open { .. }
    ));
    // That probe succeeds: closed, nothing counted.
    service.circuit_record(&spec, Permit::Probe, false).await;
    assert_eq!(state(&service).await, Some(("closed".to_owned(), 0)));
    assert_eq!(
        service.circuit_permit(&spec).await,
        Permit::Call { failures: 0 }
    );
}

#[tokio::test]
async fn closed_counts_consecutive_failures_and_a_success_resets_them() {
    let db = common::test_db().await;
    let service = common::service::tasklane(db.pool.clone(), []);
    let spec = spec(3, 1, 60);
    for n in 0..2 {
        let permit = service.circuit_permit(&spec).await;
        assert_eq!(permit, Permit::Call { failures: n });
        service.circuit_record(&spec, permit, true).await;
    }
    // A success (or a permanent rejection: the route is up) starts the count again.
    let permit = service.circuit_permit(&spec).await;
    assert_eq!(permit, Permit::Call { failures: 2 });
    service.circuit_record(&spec, permit, false).await;
    assert_eq!(state(&service).await, Some(("closed".to_owned(), 0)));
    // Three in a row open it; after its open time (1 s) one probe goes.
    for _ in 0..3 {
        let permit = service.circuit_permit(&spec).await;
        service.circuit_record(&spec, permit, true).await;
    }
    assert_eq!(state(&service).await.unwrap().0, "open");
    eventually(Duration::from_secs(30), "the open time to end", || async {
        service.circuit_permit(&spec).await == Permit::Probe
    })
    .await;
    service.circuit_record(&spec, Permit::Probe, false).await;
    assert_eq!(state(&service).await, Some(("closed".to_owned(), 0)));
}

#[tokio::test]
async fn an_operator_reset_closes_it_for_every_replica() {
    let db = common::test_db().await;
    let replicas = replicas(&db.url, 2, 2);
    let spec = spec(1, 3600, 60);
    replicas[0]
        .circuit_record(&spec, Permit::Call { failures: 0 }, true)
        .await;
    assert!(matches!(
        replicas[1].circuit_permit(&spec).await,
        Permit::Open { .. }
    ));
    let reset = replicas[1].reset_circuit(ROUTE).await.unwrap();
    assert_eq!(
        (reset.state.as_str(), reset.consecutive_failures),
        ("closed", 0)
    );
    assert_eq!(
        replicas[0].circuit_permit(&spec).await,
        Permit::Call { failures: 0 }
    );
    assert_eq!(state(&replicas[0]).await, None);
    // A name without a circuit is not found (a mistyped name is not silently "reset").
    let unknown = replicas[0].reset_circuit("nope").await.unwrap_err();
    assert_eq!(unknown.code(), "not_found");
}

/// Installs a trigger that logs every write to `tasklane.circuits` (test database only).
async fn log_writes(client: &tokio_postgres::Client) {
    client
        .batch_execute(
            "CREATE TABLE circuit_writes (op text NOT NULL);
             CREATE FUNCTION log_circuit_write() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN INSERT INTO circuit_writes VALUES (TG_OP); RETURN NULL; END $$;
             CREATE TRIGGER log_writes AFTER INSERT OR UPDATE OR DELETE ON tasklane.circuits
             FOR EACH ROW EXECUTE FUNCTION log_circuit_write();",
        )
        .await
        .unwrap();
}

async fn xmin(client: &tokio_postgres::Client) -> String {
    client
        .query_one(
            "SELECT xmin::text FROM tasklane.circuits WHERE route_name = $1",
            &[&ROUTE],
        )
        .await
        .unwrap()
        .get(0)
}

async fn writes(client: &tokio_postgres::Client) -> i64 {
    client
        .query_one("SELECT count(*) FROM circuit_writes", &[])
        .await
        .unwrap()
        .get(0)
}

#[tokio::test]
async fn the_healthy_path_writes_nothing() {
    let db = common::test_db().await;
    let service = common::service::tasklane(db.pool.clone(), []);
    let client = db.client().await;
    // One route that once failed and closed again (it has a row), one that never did.
    let spec = spec(1, 3600, 60);
    service
        .circuit_record(&spec, Permit::Call { failures: 0 }, true)
        .await;
    end_open_time(&client).await;
    assert_eq!(service.circuit_permit(&spec).await, Permit::Probe);
    service.circuit_record(&spec, Permit::Probe, false).await;
    let fresh = CircuitSpec {
        route_name: "never-failed",
        ..spec
    };
    log_writes(&client).await;
    let before = xmin(&client).await;

    for _ in 0..100 {
        for spec in [&spec, &fresh] {
            let permit = service.circuit_permit(spec).await;
            assert_eq!(permit, Permit::Call { failures: 0 });
            service.circuit_record(spec, permit, false).await;
        }
    }
    assert_eq!(writes(&client).await, 0, "no write on the healthy path");
    assert_eq!(xmin(&client).await, before);
    assert_eq!(state(&service).await, Some(("closed".to_owned(), 0)));
    // The log sees writes when there are some: one failure is one write.
    service
        .circuit_record(&fresh, Permit::Call { failures: 0 }, true)
        .await;
    assert_eq!(writes(&client).await, 1);
}

#[tokio::test]
async fn an_unreachable_database_fails_safe_as_closed() {
    // A port nothing listens on: connections are refused at once.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let url = format!("postgres://tasklane@127.0.0.1:{port}/nowhere");
    let service = common::service::tasklane(common::pool(&url, 2), []);
    let spec = spec(1, 30, 60);
    assert_eq!(
        service.circuit_permit(&spec).await,
        Permit::Call { failures: 0 }
    );
    // Records are dropped (with a warning), never an error or a hang.
    service
        .circuit_record(&spec, Permit::Call { failures: 0 }, true)
        .await;
    service.circuit_record(&spec, Permit::Probe, false).await;

    // A server that accepts and never answers: the permit gives up after its timeout.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = silent.local_addr().unwrap().port();
    let held = tokio::spawn(async move {
        let mut sockets = Vec::new();
        while let Ok((socket, _)) = silent.accept().await {
            sockets.push(socket);
        }
    });
    let url = format!("postgres://tasklane@127.0.0.1:{port}/nowhere");
    let service = common::service::tasklane(common::pool(&url, 2), []);
    assert_eq!(
        service.circuit_permit(&spec).await,
        Permit::Call { failures: 0 }
    );
    held.abort();
}
