//! Pausing a task type: no claim takes its tasks (in-process workers and remote workers
//! alike) while submits are still queued; the queue deadline still applies; resuming
//! lets them run. Shown in the admin overview.

use serde_json::json;

use crate::common;
use common::api::{self, ALL};
use common::in_process::InProcess;
use common::serve::Options;

#[tokio::test]
async fn a_paused_type_waits_queued_until_resumed() {
    let db = common::test_db().await;
    let serve = InProcess::start(&db.url, Options::default()).await;
    let admin = serve.api(&api::token(&db.url, "ops", None, &["admin"]).await);
    let mail = serve.api(&api::token(&db.url, "mail", None, ALL).await);
    let pause = |paused: bool| {
        let request = admin
            .http
            .put(format!("{}/v1/admin/task-types/noop/pause", admin.base))
            .json(&json!({ "paused": paused }));
        admin.send(request)
    };
    let paused = pause(true).await;
    assert_eq!(paused.status, 200, "{:?}", paused.body);
    assert_eq!(paused.body, json!({"task_type": "noop", "paused": true}));
    let overview = admin.get("/v1/admin/overview").await;
    assert_eq!(overview.body["paused_task_types"][0]["task_type"], "noop");

    // A noop task, then a sleep task: the worker claims oldest first, so once the
    // sleep task has run, a claim has passed the noop task over.
    let held = mail.submit("noop", "s", "held", json!({})).await;
    assert_eq!(held.status, 202, "submits are still accepted");
    let held = held.body["id"].as_str().unwrap().to_owned();
    let later = mail
        .submit("sleep", "s", "later", json!({"input": {"ms": 1}}))
        .await;
    let later = later.body["id"].as_str().unwrap().to_owned();
    mail.wait_for(&later, |t| t["state"] == "succeeded").await;
    assert_eq!(
        mail.get(&format!("/v1/tasks/{held}")).await.body["state"],
        "queued"
    );

    // Remote workers are refused it too.
    let claim = mail
        .post(
            "/v1/worker/claim",
            &json!({"worker_id": "w", "task_types": ["noop"], "route": "local", "max": 10}),
        )
        .await;
    assert_eq!(claim.body["tasks"], json!([]), "{:?}", claim.body);

    // The queue deadline still applies to a paused type.
    let expiring = mail
        .submit("noop", "s", "expiring", json!({"deadline_seconds": 1}))
        .await;
    let expiring = expiring.body["id"].as_str().unwrap().to_owned();
    let failed = mail.wait_for(&expiring, |t| t["state"] == "failed").await;
    assert_eq!(failed["error"]["code"], "queue_deadline_exceeded");

    let resumed = pause(false).await;
    assert_eq!(resumed.body, json!({"task_type": "noop", "paused": false}));
    mail.wait_for(&held, |t| t["state"] == "succeeded").await;
    let overview = admin.get("/v1/admin/overview").await;
    assert_eq!(overview.body["paused_task_types"], json!([]));
}

#[tokio::test]
async fn pausing_refuses_unknown_types_bad_bodies_and_non_admins() {
    let db = common::test_db().await;
    let serve = InProcess::start(&db.url, Options::default()).await;
    let admin = serve.api(&api::token(&db.url, "ops", None, &["admin"]).await);
    let mail = serve.api(&api::token(&db.url, "mail", None, ALL).await);
    let put = |api: &api::Api, name: &str, body: serde_json::Value| {
        let request = api
            .http
            .put(format!("{}/v1/admin/task-types/{name}/pause", api.base))
            .json(&body);
        let api = api.clone();
        async move { api.send(request).await }
    };
    let unknown = put(&admin, "nope", json!({"paused": true})).await;
    assert_eq!((unknown.status, unknown.code()), (422, "unknown_task_type"));
    let bad = put(&admin, "noop", json!({"paused": true, "until": 5})).await;
    assert_eq!((bad.status, bad.code()), (422, "unknown_field"));
    let forbidden = put(&mail, "noop", json!({"paused": true})).await;
    assert_eq!(forbidden.status, 403);
    let c = db.client().await;
    let rows = common::fixtures::count(&c, "SELECT count(*) FROM tasklane.paused_task_types").await;
    assert_eq!(rows, 0, "nothing was paused by a refused request");
}
