//! One of two replicas reaches PostgreSQL through a proxy that black-holes its traffic
//! (the connections open at the cut go silent without a close, new ones are taken and
//! never forwarded), for [`CUT_FOR`], then heals. While cut, that replica answers
//! `/readyz` 503 (every probe answered, none left hanging) and `/healthz` 200, stays up
//! with bounded memory, and the tasks it was running are recovered by the other replica
//! after their lease. Healed, it is ready again and finishes tasks on its own, without
//! a restart. No task succeeds twice. The times (to unready, to the first new
//! connection, to ready after the heal) are printed.

use crate::common;

use std::time::{Duration, Instant};

use common::api::{self, ALL};
use common::eventually;
use common::serve::{Options, Serve};
use serde_json::json;
use tasklane::devdb::BlackHoleProxy;

const TYPES: &str = r#"
[[task_type]]
name = "slow"
executor = "sleep"
lease_seconds = 5
max_attempts = 10
on_restart = "retry"
"#;

/// How long the proxy stays cut.
const CUT_FOR: Duration = Duration::from_secs(30);
/// Bounds that only decide how long a broken build takes to fail.
const WITHIN: Duration = Duration::from_secs(90);
const RSS_BOUND_MIB: f64 = 200.0;
const TASKS: usize = 12;

#[tokio::test(flavor = "multi_thread")]
async fn a_black_holed_replica_turns_unready_its_tasks_are_recovered_and_it_rejoins_after_healing()
{
    let db = common::test_db().await;
    let (proxy, cut_url) = BlackHoleProxy::in_front_of(&db.url).await.unwrap();
    let options = |name: &str| Options {
        name: Some(name.into()),
        task_types: Some(TYPES),
        ..Default::default()
    };
    let cut = Serve::start(&cut_url, options("cut")).await;
    let token = api::token(&db.url, "holes", None, ALL).await;
    let client = db.client().await;

    // Submitted through the replica about to be cut, before the other replica starts,
    // so these run there: with both up, the other replica's wake-up (or poll) races the
    // cut one's claims, which pass through the proxy, and on a busy machine it took them
    // all, leaving the cut replica nothing to lose.
    let cut_api = cut.api(&token);
    let mut ids = Vec::new();
    for n in 0..TASKS {
        let input = json!({"input": {"ms": 3000, "steps": 3}});
        let answer = cut_api.submit("slow", "s", &format!("k{n}"), input).await;
        assert_eq!(answer.status, 202, "{:?}", answer.body);
        ids.push(answer.body["id"].as_str().unwrap().to_owned());
    }
    let running_on_cut = || async {
        let rows = client
            .query(
                "SELECT t.id::text FROM tasklane.tasks t JOIN tasklane.replicas r
                   ON r.id = t.replica_id
                 WHERE r.name = 'cut' AND t.state = 'running'",
                &[],
            )
            .await
            .map_err(|e| e.to_string())?;
        let ids: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
        match ids.is_empty() {
            true => Err("none yet".to_owned()),
            false => Ok(ids),
        }
    };
    let cut_tasks = eventually(WITHIN, "the cut replica to run tasks", running_on_cut).await;
    let mut direct = Serve::start(&db.url, options("direct")).await;
    let direct_api = direct.api(&token);

    let cut_at = Instant::now();
    proxy.cut();
    let probes = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    let readyz = format!("{}/readyz", cut.base);
    let unready_after = eventually(WITHIN, "the cut replica to answer 503", || async {
        let answer = probes.get(&readyz).send().await;
        let status = answer
            .unwrap_or_else(|e| panic!("/readyz of the cut replica did not answer: {e}"))
            .status();
        match status.as_u16() {
            503 => Ok(cut_at.elapsed()),
            other => Err(other),
        }
    })
    .await;

    // The tasks it ran when cut are recovered by the other replica after their lease.
    for id in &cut_tasks {
        let what = format!("task {id}, cut mid-run, to succeed on the other replica");
        eventually(WITHIN, &what, || async {
            let rows = client
                .query(
                    "SELECT r.name FROM tasklane.task_attempts a
                     JOIN tasklane.replicas r ON r.id = a.replica_id
                     WHERE a.task_id = $1::text::uuid AND a.outcome = 'succeeded'",
                    &[id],
                )
                .await
                .map_err(|e| e.to_string())?;
            let by: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
            match by.as_slice() {
                [name] if name == "direct" => Ok(()),
                other => Err(format!("succeeded by {other:?}")),
            }
        })
        .await;
    }

    // Cut for the rest of CUT_FOR: up, bounded, live, unready.
    let healthz = format!("{}/healthz", cut.base);
    while cut_at.elapsed() < CUT_FOR {
        let rss = cut.rss_mib();
        assert!(rss < RSS_BOUND_MIB, "the cut replica holds {rss:.0} MiB");
        assert!(direct.rss_mib() < RSS_BOUND_MIB);
        let health = probes.get(&healthz).send().await.expect("/healthz answers");
        assert_eq!(health.status(), 200, "liveness stays 200 while cut");
        let ready = probes.get(&readyz).send().await.expect("/readyz answers");
        assert_eq!(ready.status(), 503, "unready while cut");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let tried_new = proxy
        .accepted_since(cut_at)
        .first()
        .map(|at| at.duration_since(cut_at));

    proxy.heal();
    let healed_at = Instant::now();
    eventually(WITHIN, "the healed replica to be ready again", || async {
        let answer = probes.get(&readyz).send().await;
        answer
            .map(|r| r.status().as_u16())
            .map_err(|e| e.to_string())
            .and_then(|status| match status {
                200 => Ok(()),
                other => Err(other.to_string()),
            })
    })
    .await;
    let ready_again_after = healed_at.elapsed();

    // Every task succeeds, once.
    for id in &ids {
        let what = format!("task {id} to succeed");
        eventually(WITHIN, &what, || async {
            let answer = direct_api.get(&format!("/v1/tasks/{id}")).await;
            match answer.body["state"].as_str() {
                Some("succeeded") => Ok(()),
                other => Err(format!("{other:?}")),
            }
        })
        .await;
    }

    // With the other replica gone, the healed one finishes tasks on its own.
    direct.terminate();
    direct.wait_exit(WITHIN).await;
    let mut after = Vec::new();
    for n in 0..4 {
        let input = json!({"input": {"ms": 10}});
        let answer = cut_api
            .submit("slow", "s", &format!("after-{n}"), input)
            .await;
        assert_eq!(answer.status, 202, "{:?}", answer.body);
        after.push(answer.body["id"].as_str().unwrap().to_owned());
    }
    for id in &after {
        let what = format!("task {id}, submitted after the heal, to succeed");
        eventually(WITHIN, &what, || async {
            let answer = cut_api.get(&format!("/v1/tasks/{id}")).await;
            match answer.body["state"].as_str() {
                Some("succeeded") => Ok(()),
                other => Err(format!("{other:?}")),
            }
        })
        .await;
    }
    let twice = client
        .query(
            "SELECT task_id FROM tasklane.task_attempts WHERE outcome = 'succeeded'
             GROUP BY task_id HAVING count(*) > 1",
            &[],
        )
        .await
        .unwrap();
    assert!(twice.is_empty(), "{} tasks succeeded twice", twice.len());
    assert!(cut.rss_mib() < RSS_BOUND_MIB);
    println!(
        "black hole: unready after {:.1} s; first new connection tried after {:?}; \
         ready {:.1} s after the heal ({} tasks were running on the cut replica)",
        unready_after.as_secs_f64(),
        tried_new.map(|d| format!("{:.1} s", d.as_secs_f64())),
        ready_again_after.as_secs_f64(),
        cut_tasks.len()
    );
}

/// The issue's own trial: a proxy that stops forwarding on the connections it holds but
/// forwards new ones (a load balancer that forgot its connections). The replica finds
/// its connections dead, replaces them, and a submit sent at the cut is acknowledged and
/// its task runs, without a restart.
#[tokio::test(flavor = "multi_thread")]
async fn a_replica_whose_open_connections_go_silent_replaces_them_and_works_on() {
    let db = common::test_db().await;
    let (proxy, cut_url) = BlackHoleProxy::in_front_of(&db.url).await.unwrap();
    let replica = Serve::start(
        &cut_url,
        Options {
            task_types: Some(TYPES),
            ..Default::default()
        },
    )
    .await;
    let api = replica.api(&api::token(&db.url, "silent", None, ALL).await);
    // Every connection of the replica is open and pooled before the cut.
    for n in 0..8 {
        let answer = api
            .submit(
                "slow",
                "s",
                &format!("warm-{n}"),
                json!({"input": {"ms": 10}}),
            )
            .await;
        assert_eq!(answer.status, 202, "{:?}", answer.body);
    }
    let cut_at = Instant::now();
    proxy.cut_open_connections();
    let answer = api
        .submit("slow", "s", "at-the-cut", json!({"input": {"ms": 10}}))
        .await;
    let acknowledged_after = cut_at.elapsed();
    assert_eq!(answer.status, 202, "{:?}", answer.body);
    let id = answer.body["id"].as_str().unwrap().to_owned();
    eventually(
        WITHIN,
        "the task submitted at the cut to succeed",
        || async {
            let task = api.get(&format!("/v1/tasks/{id}")).await.body;
            match task["state"].as_str() {
                Some("succeeded") => Ok(()),
                other => Err(format!("{other:?}")),
            }
        },
    )
    .await;
    let finished_after = cut_at.elapsed();
    assert!(replica.rss_mib() < RSS_BOUND_MIB);
    println!(
        "open connections cut: submit acknowledged after {:.1} s, its task finished after {:.1} s",
        acknowledged_after.as_secs_f64(),
        finished_after.as_secs_f64()
    );
}
