//! Admission over HTTP: the admin routes of real `tasklane serve` processes, refusals
//! with their codes and `Retry-After`, and capacity held exact while three replicas take
//! 64 concurrent HTTP submitters.

use crate::common;

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;

use common::api::{self, Answer, ALL};
use common::in_process::InProcess;
use common::serve::{Options, Serve};
use serde_json::json;

fn retry_after(answer: &Answer) -> u64 {
    answer.headers["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn admin_routes_set_limits_stops_and_resources() {
    let db = common::test_db().await;
    let serve = InProcess::start(&db.url, Options::default()).await;
    let admin = serve.api(&api::token(&db.url, "ops", None, &["admin"]).await);
    let mail = serve.api(&api::token(&db.url, "mail", None, ALL).await);

    // Only admin tokens may.
    let body = json!({"kind": "capacity", "limit": 0});
    let refused = mail
        .send(
            mail.http
                .put(format!("{}/v1/admin/limits", mail.base))
                .json(&body),
        )
        .await;
    assert_eq!(refused.status, 403);
    assert_eq!(mail.get("/v1/admin/overview").await.status, 403);

    let put = |path: &str, body: serde_json::Value| {
        admin.send(admin.http.put(format!("{}{path}", admin.base)).json(&body))
    };
    // Capacity 1 for mail: the second in-flight task is refused until the first ends.
    let set = put(
        "/v1/admin/limits",
        json!({"kind": "capacity", "app": "mail", "limit": 1}),
    )
    .await;
    assert_eq!(set.status, 200, "{:?}", set.body);
    assert!(set.body["id"].is_i64());
    let first = mail.submit("remote", "s", "k1", json!({})).await;
    assert_eq!(first.status, 202);
    let second = mail.submit("remote", "s", "k2", json!({})).await;
    assert_eq!((second.status, second.code()), (429, "capacity_exhausted"));
    assert!(retry_after(&second) >= 1);
    // A join of the in-flight task consumes nothing and is not refused.
    assert_eq!(
        mail.submit("remote", "s", "k1", json!({})).await.status,
        202
    );
    let id = first.body["id"].as_str().unwrap();
    assert_eq!(
        mail.post(&format!("/v1/tasks/{id}/cancel"), &json!({}))
            .await
            .status,
        200
    );
    assert_eq!(
        mail.submit("remote", "s", "k2", json!({})).await.status,
        202
    );

    // Rate: two per hour for another app, the third refused with an honest wait.
    put(
        "/v1/admin/limits",
        json!({"kind": "rate", "app": "rl", "limit": 2, "window_seconds": 3600}),
    )
    .await;
    let rl = serve.api(&api::token(&db.url, "rl", None, ALL).await);
    for key in ["a", "b"] {
        assert_eq!(rl.submit("noop", "s", key, json!({})).await.status, 202);
    }
    let third = rl.submit("noop", "s", "c", json!({})).await;
    assert_eq!((third.status, third.code()), (429, "rate_limited"));
    assert!(
        (3000..=3600).contains(&retry_after(&third)),
        "{}",
        retry_after(&third)
    );

    // Emergency stop for one app, then globally; off again admits.
    let stop = put(
        "/v1/admin/emergency-stop",
        json!({"enabled": true, "app": "mail"}),
    )
    .await;
    assert_eq!(
        (stop.status, stop.body["enabled"].as_bool()),
        (200, Some(true))
    );
    let stopped = mail.submit("remote", "s", "k3", json!({})).await;
    assert_eq!((stopped.status, stopped.code()), (503, "emergency_stop"));
    assert!(retry_after(&stopped) >= 1);
    assert_eq!(rl.get("/v1/tasks").await.status, 200, "other apps go on");
    put(
        "/v1/admin/emergency-stop",
        json!({"enabled": false, "app": "mail"}),
    )
    .await;
    put("/v1/admin/emergency-stop", json!({"enabled": true})).await;
    assert_eq!(
        rl.submit("noop", "s2", "z", json!({})).await.code(),
        "emergency_stop"
    );
    put("/v1/admin/emergency-stop", json!({"enabled": false})).await;

    // Resources and the overview.
    let resource = put("/v1/admin/resources/local-model", json!({"slots": 1})).await;
    assert_eq!(
        (resource.status, resource.body["slots"].as_i64()),
        (200, Some(1))
    );
    let overview = admin.get("/v1/admin/overview").await;
    assert_eq!(overview.status, 200);
    let resources = overview.body["resources"].as_array().unwrap();
    assert!(
        resources
            .iter()
            .any(|r| r["name"] == "local-model" && r["slots"] == 1),
        "{resources:?}"
    );
    assert!(overview.body["limits"].as_array().unwrap().len() >= 2);
    assert!(!overview.body["refusals_today"]
        .as_array()
        .unwrap()
        .is_empty());

    // Bad input changes nothing.
    let no_window = put(
        "/v1/admin/limits",
        json!({"kind": "rate", "app": "x", "limit": 1}),
    )
    .await;
    assert_eq!(
        (no_window.status, no_window.code()),
        (422, "validation_failed")
    );
    let unknown = put(
        "/v1/admin/limits",
        json!({"kind": "capacity", "limit": 1, "colour": 1}),
    )
    .await;
    assert_eq!((unknown.status, unknown.code()), (422, "unknown_field"));
    assert_eq!(
        put("/v1/admin/resources/local-model", json!({"slots": 10_001}))
            .await
            .status,
        422
    );
    assert_eq!(
        put("/v1/admin/resources/local-model", json!({"slots": 10_000}))
            .await
            .status,
        200
    );
}

/// Three replicas (API and workers) and 64 concurrent HTTP submitters against capacity
/// 10: the database never holds more than 10 unfinished tasks of the app, every refusal
/// is a 429 `capacity_exhausted`, and finishing tasks make room for more.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn capacity_holds_across_three_replicas_under_http_load() {
    let db = common::test_db().await;
    let replicas = [
        Serve::start(&db.url, Options::default()).await,
        Serve::start(&db.url, Options::default()).await,
        Serve::start(&db.url, Options::default()).await,
    ];
    let admin = replicas[0].api(&api::token(&db.url, "ops", None, &["admin"]).await);
    let set = admin
        .send(
            admin
                .http
                .put(format!("{}/v1/admin/limits", admin.base))
                .json(&json!({"kind": "capacity", "app": "mail", "limit": 10})),
        )
        .await;
    assert_eq!(set.status, 200);
    let token = api::token(&db.url, "mail", None, ALL).await;

    let done = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(AtomicI64::new(0));
    let sampler = {
        let (done, peak, c) = (done.clone(), peak.clone(), db.client().await);
        tokio::spawn(async move {
            let mut samples = 0;
            while !done.load(Ordering::SeqCst) {
                let row = c
                    .query_one(
                        "SELECT count(*) FROM tasklane.tasks WHERE app = 'mail' \
                         AND state NOT IN ('succeeded', 'failed', 'cancelled')",
                        &[],
                    )
                    .await
                    .unwrap();
                peak.fetch_max(row.get(0), Ordering::SeqCst);
                samples += 1;
            }
            samples
        })
    };
    let mut clients = Vec::new();
    for n in 0..64 {
        let api = replicas[n % 3].api(&token);
        clients.push(tokio::spawn(async move {
            let (mut admitted, mut refused) = (0, 0);
            for i in 0..8 {
                let answer = api
                    .submit(
                        "sleep",
                        "s",
                        &format!("c{n}-{i}"),
                        json!({"input": {"ms": 30}}),
                    )
                    .await;
                match answer.status {
                    202 | 200 => admitted += 1,
                    429 => {
                        assert_eq!(answer.code(), "capacity_exhausted");
                        refused += 1;
                    }
                    status => panic!("unexpected {status}: {:?}", answer.body),
                }
            }
            (admitted, refused)
        }));
    }
    let (mut admitted, mut refused) = (0, 0);
    for client in clients {
        let (a, r) = client.await.unwrap();
        admitted += a;
        refused += r;
    }
    done.store(true, Ordering::SeqCst);
    let samples = sampler.await.unwrap();
    assert!(samples > 10, "the sampler ran ({samples} samples)");
    assert!(
        peak.load(Ordering::SeqCst) <= 10,
        "peak {} unfinished tasks",
        peak.load(Ordering::SeqCst)
    );
    assert!(refused > 0, "the limit was reached");
    assert!(
        admitted > 10,
        "finished tasks made room: {admitted} admitted"
    );
    assert_eq!(admitted + refused, 64 * 8);
}

/// The stored weights, by app.
async fn stored_weights(db: &common::TestDb) -> Vec<(String, i16)> {
    db.client()
        .await
        .query(
            "SELECT app, weight FROM tasklane.app_weights ORDER BY app",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect()
}

/// `PUT /v1/admin/apps/{app}/weight` stores (and replaces) an app's weight and
/// `GET /v1/admin/apps` lists it beside every app with a token (weight 1, never set);
/// each bad input is refused with its code and changes nothing; only admin tokens may.
#[tokio::test]
async fn app_weights_are_set_listed_and_bad_input_changes_nothing() {
    let db = common::test_db().await;
    let serve = InProcess::start(&db.url, Options::default()).await;
    let admin = serve.api(&api::token(&db.url, "ops", None, &["admin"]).await);
    let mail = serve.api(&api::token(&db.url, "mail", None, ALL).await);
    let put = |api: &api::Api, app: &str, body: serde_json::Value| {
        let request = api
            .http
            .put(format!("{}/v1/admin/apps/{app}/weight", api.base))
            .json(&body);
        let api = api.clone();
        async move { api.send(request).await }
    };

    // Before any weight: the apps with a token, by app, each weighing 1, never set.
    let listed = admin.get("/v1/admin/apps").await;
    assert_eq!(listed.status, 200, "{:?}", listed.body);
    assert_eq!(
        listed.body,
        json!({"items": [{"app": "mail", "weight": 1, "updated_at": null},
                         {"app": "ops", "weight": 1, "updated_at": null}]})
    );

    let set = put(&admin, "mail", json!({"weight": 3})).await;
    assert_eq!(set.status, 200, "{:?}", set.body);
    assert_eq!(set.body, json!({"app": "mail", "weight": 3}));
    let again = put(&admin, "mail", json!({"weight": 5})).await;
    assert_eq!(again.body, json!({"app": "mail", "weight": 5}), "an upsert");
    // An app without a token yet can be weighed ahead of its first task.
    let edge = put(&admin, "batch", json!({"weight": 100})).await;
    assert_eq!(edge.body, json!({"app": "batch", "weight": 100}));
    assert_eq!(put(&admin, "ops", json!({"weight": 1})).await.status, 200);
    let expected = vec![
        ("batch".to_owned(), 100),
        ("mail".to_owned(), 5),
        ("ops".to_owned(), 1),
    ];
    assert_eq!(stored_weights(&db).await, expected);
    let listed = admin.get("/v1/admin/apps").await.body;
    let items = listed["items"].as_array().unwrap();
    let pairs: Vec<(&str, i64)> = items
        .iter()
        .map(|i| (i["app"].as_str().unwrap(), i["weight"].as_i64().unwrap()))
        .collect();
    assert_eq!(pairs, [("batch", 100), ("mail", 5), ("ops", 1)]);
    assert!(
        items.iter().all(|i| i["updated_at"].is_string()),
        "{items:?}"
    );

    // Each bad input: 422 with its code and field, and nothing changed.
    let long = "a".repeat(201);
    let weight = |w: serde_json::Value| json!({ "weight": w });
    let cases = [
        ("mail", weight(json!(0)), "validation_failed", "weight"),
        ("mail", weight(json!(101)), "validation_failed", "weight"),
        ("mail", weight(json!(-1)), "validation_failed", "weight"),
        ("mail", weight(json!(2.5)), "validation_failed", "weight"),
        ("mail", weight(json!("3")), "validation_failed", "weight"),
        ("mail", weight(json!(null)), "validation_failed", "weight"),
        ("mail", json!({}), "validation_failed", "weight"),
        (
            "mail",
            json!({"weight": 3, "colour": 1}),
            "unknown_field",
            "colour",
        ),
        ("", weight(json!(3)), "validation_failed", "app"),
        (&long, weight(json!(3)), "validation_failed", "app"),
        ("a%00b", weight(json!(3)), "validation_failed", "app"),
    ];
    for (app, body, code, field) in cases {
        let refused = put(&admin, app, body.clone()).await;
        let got = (
            refused.status,
            refused.code(),
            refused.body["field"].as_str(),
        );
        assert_eq!(got, (422, code, Some(field)), "{body} for {app:.20}");
    }
    let not_json = admin
        .send(
            admin
                .http
                .put(format!("{}/v1/admin/apps/mail/weight", admin.base))
                .header("content-type", "application/json")
                .body("{"),
        )
        .await;
    assert_eq!((not_json.status, not_json.code()), (400, "malformed_json"));
    assert_eq!(stored_weights(&db).await, expected);

    // Only admin tokens may set or list.
    let forbidden = put(&mail, "mail", json!({"weight": 9})).await;
    assert_eq!((forbidden.status, forbidden.code()), (403, "forbidden"));
    let listing = mail.get("/v1/admin/apps").await;
    assert_eq!((listing.status, listing.code()), (403, "forbidden"));
    assert_eq!(stored_weights(&db).await, expected);
}
