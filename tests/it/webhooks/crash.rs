//! At least once through failures: a replica killed (-9) while its deliveries are in
//! flight, and database connections dropped under a delivering replica. Every
//! notification is delivered in the end; a repeat carries the same webhook-id.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use common::serve::{Options, Serve};

use super::{log_until, noop, register, replica, Receiver, Reply};
use crate::common;

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

fn options(name: &str) -> Options {
    Options {
        name: Some(name.to_owned()),
        env: vec![
            ("TASKLANE_WEBHOOK_ALLOW_CIDRS", "127.0.0.0/8".into()),
            (
                "TASKLANE_WEBHOOK_RETRY_SCHEDULE",
                "100ms,100ms,100ms".into(),
            ),
            // A killed replica's claims run out after 6 s. A claim must outlast an
            // attempt's timeout; 5 s is long enough that the first replica, killed as
            // soon as its five requests arrive, never retries them itself.
            ("TASKLANE_WEBHOOK_CLAIM_SECONDS", "6".into()),
            ("TASKLANE_WEBHOOK_TIMEOUT_SECONDS", "5".into()),
        ],
        ..Default::default()
    }
}

#[tokio::test]
async fn deliveries_in_flight_at_a_kill_9_are_sent_again_by_another_replica() {
    let db = common::test_db().await;
    let receiver = Receiver::start().await;
    receiver.secrets(&[SECRET]);
    let mut first = Serve::start(&db.url, options("first")).await;
    let token = common::api::token(&db.url, "mail", None, &["submit", "read", "webhooks"]).await;
    let api = first.api(&token);
    register(&api, "main", &receiver.url, Some(SECRET)).await;
    // The first five requests hang: they are in flight when the replica dies.
    receiver.script((0..5).map(|_| Reply::status(200).delay(Duration::from_secs(120))));
    for n in 0..5 {
        noop(&api, &format!("k{n}")).await;
    }
    let in_flight = receiver.until(5, super::SOON).await;
    first.kill9();

    let second = Serve::start(&db.url, options("second")).await;
    let api = second.api(&token);
    let rows = log_until(&api, "main", 5, "delivered").await;
    let received = receiver.received();
    let mut seen: HashMap<String, usize> = HashMap::new();
    for message in &received {
        assert_eq!(message.verified, [true], "every request is signed");
        *seen.entry(message.id.clone()).or_default() += 1;
    }
    let first_ids: HashSet<&String> = in_flight.iter().map(|m| &m.id).collect();
    assert_eq!(first_ids.len(), 5, "five notifications were in flight");
    for row in &rows {
        let id = row["id"].as_str().unwrap();
        assert!(
            first_ids.contains(&id.to_owned()),
            "{id} was in flight at the kill"
        );
        assert!(
            seen[id] >= 2,
            "{id} was sent again, with the same webhook-id"
        );
    }
}

#[tokio::test]
async fn dropped_database_connections_lose_no_notification() {
    let db = common::test_db().await;
    let (_replica, api) = replica(
        &db,
        &[
            ("TASKLANE_WEBHOOK_CLAIM_SECONDS", "3"),
            ("TASKLANE_WEBHOOK_TIMEOUT_SECONDS", "2"),
        ],
    )
    .await;
    let receiver = Receiver::start().await;
    register(&api, "main", &receiver.url, Some(SECRET)).await;
    receiver.secrets(&[SECRET]);
    // Slow answers keep deliveries in flight while connections drop.
    receiver.script((0..20).map(|_| Reply::status(200).delay(Duration::from_millis(300))));
    let mut tasks = HashSet::new();
    for n in 0..20 {
        tasks.insert(noop(&api, &format!("k{n}")).await);
    }
    let admin = db.client().await;
    let name = db.name().to_owned();
    for _ in 0..4 {
        admin
            .execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                 WHERE datname = $1 AND pid <> pg_backend_pid()",
                &[&name],
            )
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let rows = common::eventually(
        Duration::from_secs(60),
        "20 deliveries delivered",
        || async {
            let rows = admin
                .query(
                    "SELECT task_id::text, status FROM tasklane.webhook_deliveries",
                    &[],
                )
                .await
                .map_err(|e| e.to_string())?;
            let delivered: Vec<String> = rows
                .iter()
                .filter(|r| r.get::<_, String>(1) == "delivered")
                .map(|r| r.get(0))
                .collect();
            if delivered.len() == 20 {
                Ok(delivered)
            } else {
                Err(format!("{} of {} delivered", delivered.len(), rows.len()))
            }
        },
    )
    .await;
    assert_eq!(rows.into_iter().collect::<HashSet<_>>(), tasks);
    let got: HashSet<String> = receiver
        .received()
        .iter()
        .map(|m| {
            assert_eq!(m.verified, [true]);
            m.body["data"]["id"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(got, tasks, "the receiver heard of every task");
}

/// A graceful stop releases the rows still waiting for a slot: due again at once, their
/// claimed attempt taken back, instead of waiting out the claim (60 s here).
#[tokio::test]
async fn a_stopping_replica_releases_the_rows_still_waiting_for_a_slot() {
    let db = common::test_db().await;
    let receiver = Receiver::start().await;
    receiver.secrets(&[SECRET]);
    let mut options = options("stopping");
    options
        .env
        .retain(|(k, _)| !k.starts_with("TASKLANE_WEBHOOK_CLAIM"));
    options
        .env
        .push(("TASKLANE_WEBHOOK_ENDPOINT_CONCURRENCY", "1".into()));
    let mut replica = Serve::start(&db.url, options).await;
    let token = common::api::token(&db.url, "mail", None, &["submit", "read", "webhooks"]).await;
    let api = replica.api(&token);
    register(&api, "main", &receiver.url, Some(SECRET)).await;
    // The first request hangs: the other row waits for the endpoint's one slot.
    receiver.script([Reply::status(200).delay(Duration::from_secs(120))]);
    noop(&api, "k1").await;
    noop(&api, "k2").await;
    let sent = receiver.until(1, super::SOON).await;
    let c = db.client().await;
    common::eventually(Duration::from_secs(20), "both rows claimed", || async {
        let row = c
            .query_one(
                "SELECT count(*) FROM tasklane.webhook_deliveries WHERE claimed_until > now()",
                &[],
            )
            .await
            .map_err(|e| e.to_string())?;
        match row.get::<_, i64>(0) {
            2 => Ok(()),
            n => Err(format!("{n} claimed")),
        }
    })
    .await;
    replica.terminate();
    // Its one delivery in flight ends at the 5 s webhook timeout, within the 5 s grace;
    // the bound is for a loaded machine.
    replica.wait_exit(Duration::from_secs(120)).await;
    let rows = c
        .query(
            "SELECT id::text, attempts, claimed_until IS NULL FROM tasklane.webhook_deliveries",
            &[],
        )
        .await
        .unwrap();
    let waiting: Vec<(i32, bool)> = rows
        .iter()
        .filter(|r| r.get::<_, String>(0) != sent[0].id)
        .map(|r| (r.get(1), r.get(2)))
        .collect();
    assert_eq!(
        waiting,
        [(0, true)],
        "released: no claim, no attempt counted"
    );
}
