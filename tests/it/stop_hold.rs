//! An emergency stop holds claims, not only submits (admission is checked again where
//! the work starts): queued and retrying tasks of a stopped app (of every app, for a
//! global stop) stay unclaimed, by concurrent claimers on separate connections, by the
//! in-process workers of several replicas and by remote workers, while other apps'
//! tasks run; their queue deadline still applies; lifting the stop lets them be
//! claimed.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::join_all;
use serde_json::json;
use tasklane::admission::EmergencyStopSpec;
use tasklane::store::claim;
use tasklane::task::Locality;
use tokio::sync::Barrier;
use uuid::Uuid;

use crate::common;
use common::api::{self, ALL};
use common::eventually;
use common::fixtures;
use common::in_process::InProcess;
use common::serve::Options;

/// Submits a noop task of `app` (fixtures type, external privacy allowed).
async fn submit(c: &tokio_postgres::Client, app: &str, key: &str) -> Uuid {
    let mut request = fixtures::request(key, json!({}));
    request.privacy = Some(tasklane::task::Privacy::ExternalAllowed);
    let task = request
        .resolve(app, &fixtures::task_type(), 1 << 20)
        .expect("valid request");
    c.batch_execute("BEGIN").await.unwrap();
    let submitted = tasklane::service::submit_in(c, &task)
        .await
        .expect("submit");
    c.batch_execute("COMMIT").await.unwrap();
    submitted.task.id
}

async fn stop(c: &tokio_postgres::Client, app: Option<&str>, enabled: bool) {
    let spec = EmergencyStopSpec {
        enabled,
        app: app.map(str::to_owned),
    };
    tasklane::admission::set_emergency_stop(c, &spec)
        .await
        .expect("set the stop");
}

/// `n` claimers, each on its own connection, start together and claim batches of 4
/// (alternating local and external routes) until one comes back empty; returns the
/// apps and ids of everything claimed.
async fn race(clients: &[tokio_postgres::Client]) -> Vec<(String, Uuid)> {
    let barrier = Arc::new(Barrier::new(clients.len()));
    let claimers = clients.iter().enumerate().map(|(i, c)| {
        let barrier = barrier.clone();
        async move {
            let route = if i % 2 == 0 {
                Locality::Local
            } else {
                Locality::External
            };
            barrier.wait().await;
            let mut claimed = Vec::new();
            loop {
                let batch = claim::claim(
                    c,
                    &fixtures::claimant(route),
                    &[fixtures::TYPE.to_owned()],
                    4,
                )
                .await
                .expect("claim");
                if batch.is_empty() {
                    return claimed;
                }
                claimed.extend(batch.into_iter().map(|t| (t.app, t.id)));
            }
        }
    });
    join_all(claimers).await.into_iter().flatten().collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_claimers_take_nothing_stopped_and_resume_after_the_lift() {
    let db = common::test_db().await;
    let c = db.client().await;
    // The stopped app's tasks first: every claim that takes the other app's tasks has
    // passed them over in claim order.
    let mut mail = HashSet::new();
    let mut news = HashSet::new();
    for i in 0..24 {
        mail.insert(submit(&c, "mail", &format!("m{i}")).await);
    }
    for i in 0..24 {
        news.insert(submit(&c, "news", &format!("n{i}")).await);
    }
    let mut clients = Vec::new();
    for _ in 0..6 {
        clients.push(db.client().await);
    }

    stop(&c, None, true).await;
    assert_eq!(
        race(&clients).await,
        vec![],
        "a global stop holds every app"
    );

    stop(&c, None, false).await;
    stop(&c, Some("mail"), true).await;
    let claimed = race(&clients).await;
    let ids: HashSet<Uuid> = claimed.iter().map(|(_, id)| *id).collect();
    assert_eq!(ids.len(), claimed.len(), "no task claimed twice");
    assert_eq!(ids, news, "exactly the other app's tasks were claimed");
    let queued = fixtures::count(
        &c,
        "SELECT count(*) FROM tasklane.tasks WHERE app = 'mail' AND state = 'queued' AND attempt = 0",
    )
    .await;
    assert_eq!(queued, 24, "the stopped app's tasks wait untouched");

    // A retrying task of the stopped app is held as well: a new attempt is new work.
    stop(&c, Some("mail"), false).await;
    let retrying = fixtures::claim_one(&c).await;
    assert_eq!(retrying.app, "mail");
    c.execute(
        "UPDATE tasklane.tasks SET state = 'waiting_for_retry', lease_token = NULL, \
         lease_expires_at = NULL, run_at = now() WHERE id = $1",
        &[&retrying.id],
    )
    .await
    .unwrap();
    stop(&c, Some("mail"), true).await;
    assert_eq!(
        race(&clients).await,
        vec![],
        "nothing of mail, retrying or not"
    );

    stop(&c, Some("mail"), false).await;
    let claimed = race(&clients).await;
    let ids: HashSet<Uuid> = claimed.iter().map(|(_, id)| *id).collect();
    assert_eq!(ids.len(), claimed.len(), "no task claimed twice");
    assert_eq!(ids, mail, "after the lift every held task is claimed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_and_remote_workers_hold_a_stopped_app_until_the_lift() {
    let db = common::test_db().await;
    let mut replicas = Vec::new();
    for _ in 0..3 {
        replicas.push(InProcess::start(&db.url, Options::default()).await);
    }
    let admin = replicas[0].api(&api::token(&db.url, "ops", None, &["admin"]).await);
    let mail = replicas[1].api(&api::token(&db.url, "mail", None, ALL).await);
    let news = replicas[2].api(&api::token(&db.url, "news", None, ALL).await);
    let put = |path: &str, body: serde_json::Value| {
        let request = admin.http.put(format!("{}{path}", admin.base)).json(&body);
        admin.send(request)
    };

    // Submitted while the type is paused (no replica takes them yet); then mail is
    // stopped and the type resumed.
    let paused = put("/v1/admin/task-types/noop/pause", json!({"paused": true})).await;
    assert_eq!(paused.status, 200, "{:?}", paused.body);
    let mut held = Vec::new();
    for i in 0..12 {
        let answer = mail.submit("noop", "s", &format!("m{i}"), json!({})).await;
        assert_eq!(answer.status, 202, "{:?}", answer.body);
        held.push(answer.body["id"].as_str().unwrap().to_owned());
    }
    let expiring = mail
        .submit("noop", "s", "expiring", json!({"deadline_seconds": 2}))
        .await;
    let expiring = expiring.body["id"].as_str().unwrap().to_owned();
    let mut others = Vec::new();
    for i in 0..12 {
        let answer = news.submit("noop", "s", &format!("n{i}"), json!({})).await;
        others.push(answer.body["id"].as_str().unwrap().to_owned());
    }
    let stopped = put(
        "/v1/admin/emergency-stop",
        json!({"enabled": true, "app": "mail"}),
    )
    .await;
    assert_eq!(stopped.status, 200, "{:?}", stopped.body);
    let resumed = put("/v1/admin/task-types/noop/pause", json!({"paused": false})).await;
    assert_eq!(resumed.status, 200, "{:?}", resumed.body);

    // The other app runs on the replicas, passing the held tasks over.
    for id in &others {
        news.wait_for(id, |t| t["state"] == "succeeded").await;
    }
    // A remote worker with the stopped app's token is given nothing either.
    for route in ["local", "external"] {
        let claim = mail
            .post(
                "/v1/worker/claim",
                &json!({"worker_id": "w", "task_types": ["noop"], "route": route, "max": 10}),
            )
            .await;
        assert_eq!(claim.status, 200, "{:?}", claim.body);
        assert_eq!(claim.body["tasks"], json!([]), "{route}: {:?}", claim.body);
    }
    // The queue deadline still applies to a held task.
    let failed = mail.wait_for(&expiring, |t| t["state"] == "failed").await;
    assert_eq!(failed["error"]["code"], "queue_deadline_exceeded");
    let c = db.client().await;
    let touched = fixtures::count(
        &c,
        "SELECT count(*) FROM tasklane.tasks WHERE app = 'mail' AND (attempt > 0 OR state <> 'queued') \
         AND effect_key <> 'expiring'",
    )
    .await;
    assert_eq!(touched, 0, "no replica claimed a task of the stopped app");

    let lifted = put(
        "/v1/admin/emergency-stop",
        json!({"enabled": false, "app": "mail"}),
    )
    .await;
    assert_eq!(lifted.status, 200, "{:?}", lifted.body);
    eventually(
        Duration::from_secs(30),
        "the held tasks to run after the lift",
        || async {
            let done = fixtures::count(
                &c,
                "SELECT count(*) FROM tasklane.tasks WHERE app = 'mail' AND state = 'succeeded'",
            )
            .await;
            if done == 12 {
                Ok(())
            } else {
                Err(done)
            }
        },
    )
    .await;
}
