//! A PostgreSQL failover under two running replicas. The primary has a synchronous
//! streaming standby; while submits and short tasks flow (300 ms sleeps in two steps,
//! so some are mid-run, holding a lease, when it happens), the primary dies as in a
//! crash, stays down until the replicas have failed a submit for want of a host that
//! takes writes, and the standby is promoted (`tasklane::devdb::Replicated`). The
//! replicas' database URL names both hosts with `target_session_attrs=read-write`, once
//! in the URL form and once in the key=value form, so every new connection finds
//! whichever host takes writes.
//!
//! Asserted: neither replica exits and each stays under [`RSS_BOUND`]; every
//! acknowledged task is on the new primary and succeeds, once, with contiguous events
//! and attempts; submits are acknowledged after the promotion and those tasks succeed.
//! A submit that failed or timed out is retried with the same effect key, as a client
//! should: it joins the task if the first try committed after all.

use crate::common;

use std::time::{Duration, Instant};

use common::api::{self, ALL};
use common::eventually;
use common::serve::{Options, Serve};
use flow::{Ack, Flow};
use tasklane::devdb::{self, ClusterOptions, Replicated};

mod flow;
mod history;

/// In MiB: far above a replica's normal few tens, far below a runaway's gigabytes.
const RSS_BOUND: f64 = 200.0;
/// The least time the primary stays down: the replicas keep failing to find a host
/// that takes writes for a while, as while an HA manager makes up its mind.
const OUTAGE: Duration = Duration::from_secs(1);
/// How long the flow, the recovery and the final drain each get: generous, for a
/// loaded two-core machine (a lost lease alone takes `lease_seconds` to expire).
const WITHIN: Duration = Duration::from_secs(90);
/// Submits acknowledged after the promotion before the flow stops.
const AFTER_PROMOTION: usize = 20;
const DATABASE: &str = "failover";

/// A task whose worker cannot settle it in time (its connection went with the old
/// primary) loses its lease; it comes back after the lease and runs again.
const TYPES: &str = r#"
[[task_type]]
name = "sleep"
executor = "sleep"
lease_seconds = 5
max_attempts = 10
on_restart = "retry"
"#;

/// How the replicas are told about the two hosts.
#[derive(Clone, Copy, Debug)]
enum Form {
    Url,
    KeyValue,
}

impl Form {
    fn database_url(self, primary: u16, standby: u16) -> String {
        match self {
            Form::Url => format!(
                "postgres://postgres@127.0.0.1:{primary},127.0.0.1:{standby}/{DATABASE}\
                 ?target_session_attrs=read-write"
            ),
            Form::KeyValue => format!(
                "host=127.0.0.1,127.0.0.1 port={primary},{standby} user=postgres \
                 dbname={DATABASE} target_session_attrs=read-write"
            ),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_follow_a_failover_named_in_a_multi_host_url() {
    fail_over_under_load(Form::Url).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_follow_a_failover_named_in_a_multi_host_key_value_string() {
    fail_over_under_load(Form::KeyValue).await;
}

async fn fail_over_under_load(form: Form) {
    let pair = Replicated::start(&ClusterOptions {
        durable: true,
        ..ClusterOptions::default()
    })
    .await
    .unwrap_or_else(|e| panic!("start a primary and its standby: {e:#}"));
    let admin = tasklane::store::connect::connect(pair.primary.url())
        .await
        .expect("connect to the primary");
    admin
        .batch_execute(&format!("CREATE DATABASE {DATABASE}"))
        .await
        .expect("create the database");
    let url = form.database_url(pair.primary.port(), pair.standby.port());
    tasklane::store::migrate::run(&url).await.expect("migrate");
    let token = api::token(&url, "failover", None, ALL).await;
    let options = || Options {
        task_types: Some(TYPES),
        ..Options::default()
    };
    let (one, two) = tokio::join!(Serve::start(&url, options()), Serve::start(&url, options()));
    let replicas = [one, two];
    let flow = Flow::start(replicas.iter().map(|r| r.api(&token)).collect());

    let primary = tasklane::store::connect::connect(&url).await.unwrap();
    let what = format!("tasks flowing before the failover ({form:?})");
    eventually(WITHIN, &what, || async {
        let acked = ids(&flow.acks());
        let done = succeeded(&primary, &acked).await;
        if acked.len() >= 20 && done >= 5 {
            Ok(())
        } else {
            Err(format!("{} acknowledged, {done} succeeded", acked.len()))
        }
    })
    .await;
    drop(primary);

    // The primary stays down until the replicas have failed a submit for want of a
    // host that takes writes, and for at least OUTAGE.
    let outage = async {
        let stopped = Instant::now();
        let what = format!("a submit to fail while the primary is down ({form:?})");
        eventually(WITHIN, &what, || async { flow.failed_after(stopped) > 0 }).await;
        tokio::time::sleep(OUTAGE.saturating_sub(stopped.elapsed())).await;
    };
    let failover = pair.fail_over(outage).await.expect("fail over");
    let promoted = failover.promoted;
    let new_primary = devdb::url_with_database(pair.standby.url(), DATABASE);
    let client = tasklane::store::connect::connect(&new_primary)
        .await
        .expect("connect to the new primary");
    let mut peak = watch(&replicas, async {
        let what = format!("{AFTER_PROMOTION} submits acknowledged after the promotion ({form:?})");
        let first = eventually(WITHIN, &what, || async {
            let mut after = flow.acked_after(promoted);
            after.truncate(AFTER_PROMOTION);
            if after.len() == AFTER_PROMOTION {
                Ok(after)
            } else {
                Err(format!("{} acknowledged", after.len()))
            }
        })
        .await;
        let what = format!("the first {AFTER_PROMOTION} of them to succeed ({form:?})");
        eventually(WITHIN, &what, || async {
            let done = succeeded(&client, &first).await;
            if done == first.len() as i64 {
                Ok(())
            } else {
                Err(format!("{done} succeeded"))
            }
        })
        .await
    })
    .await;
    let after_promotion = flow.acked_after(promoted).len();
    let all = flow.stop().await;

    let all_ids = ids(&all);
    peak = peak.max(
        watch(&replicas, async {
            let what = format!("{} acknowledged tasks to succeed ({form:?})", all_ids.len());
            eventually(WITHIN, &what, || async {
                let done = succeeded(&client, &all_ids).await;
                if done == all_ids.len() as i64 {
                    Ok(())
                } else {
                    Err(format!("{done} of {} succeeded", all_ids.len()))
                }
            })
            .await
        })
        .await,
    );
    history::check(&client, &all_ids).await;
    let first_ack = all.iter().map(|a| a.at).filter(|at| *at > promoted).min();
    eprintln!(
        "failover ({form:?}): {} acknowledged ({} joined a task an earlier try had made), \
         {after_promotion} after the promotion; primary down {:.2} s; first acknowledged \
         submit {:.2} s after the promotion; peak RSS {peak:.0} MiB",
        all.len(),
        all.iter().filter(|a| a.joined).count(),
        (promoted - failover.primary_stopped).as_secs_f64(),
        first_ack.map_or(f64::NAN, |at| (at - promoted).as_secs_f64()),
    );
}

/// Runs `work` while sampling both replicas every 100 ms: fails the test if either
/// exited or holds more than [`RSS_BOUND`]; the largest RSS seen.
async fn watch(replicas: &[Serve], work: impl std::future::Future<Output = ()>) -> f64 {
    let sample = || {
        replicas.iter().fold(0.0_f64, |peak, replica| {
            let rss = replica.rss_mib();
            assert!(
                rss < RSS_BOUND,
                "a replica holds {rss:.0} MiB, bound {RSS_BOUND} MiB"
            );
            peak.max(rss)
        })
    };
    let mut peak = sample();
    tokio::pin!(work);
    let mut ticks = tokio::time::interval(Duration::from_millis(100));
    loop {
        tokio::select! {
            () = &mut work => break,
            _ = ticks.tick() => peak = peak.max(sample()),
        }
    }
    peak.max(sample())
}

fn ids(acks: &[Ack]) -> Vec<String> {
    acks.iter().map(|a| a.id.clone()).collect()
}

/// How many of `ids` have succeeded; a task of `ids` missing fails the test.
async fn succeeded(client: &tokio_postgres::Client, ids: &[String]) -> i64 {
    let row = client
        .query_one(
            "SELECT count(*), count(*) FILTER (WHERE state = 'succeeded')
             FROM tasklane.tasks WHERE id = ANY($1::text[]::uuid[])",
            &[&ids],
        )
        .await
        .expect("count succeeded tasks");
    let distinct: std::collections::BTreeSet<&String> = ids.iter().collect();
    assert_eq!(
        row.get::<_, i64>(0),
        distinct.len() as i64,
        "an acknowledged task is missing"
    );
    row.get(1)
}
