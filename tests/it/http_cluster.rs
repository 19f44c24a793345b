//! Two real replicas on one database: `?wait=` and event streams on one replica see a
//! task finish on the other promptly; a remote worker drives claim → heartbeat →
//! complete; stale leases and deleted tasks are refused; SIGTERM ends streams cleanly.

use crate::common;

use std::time::{Duration, Instant};

use common::api::{self, Api, ALL};
use common::eventually;
use common::in_process::InProcess;
use common::serve::{Options, Serve};
use serde_json::{json, Value};
use tasklane::http::watch::SAFETY_POLL;

/// Replica A serves the API only (no workers); B runs everything.
async fn two_replicas(db: &common::TestDb) -> (Serve, Serve) {
    let a = Serve::start(
        &db.url,
        Options {
            roles: Some("api"),
            ..Default::default()
        },
    )
    .await;
    let b = Serve::start(&db.url, Options::default()).await;
    (a, b)
}

/// One parsed Server-Sent Event: (id, event, data).
fn parse_sse(text: &str) -> Vec<(i64, String, Value)> {
    text.split("\n\n")
        .filter_map(|block| {
            let (mut id, mut event, mut data) = (None, String::new(), Value::Null);
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("id:") {
                    id = v.trim().parse().ok();
                } else if let Some(v) = line.strip_prefix("event:") {
                    event = v.trim().to_owned();
                } else if let Some(v) = line.strip_prefix("data:") {
                    data = serde_json::from_str(v.trim()).unwrap_or(Value::Null);
                }
            }
            id.map(|id| (id, event, data))
        })
        .collect()
}

/// Opens a task's event stream, from the start or after `last_event_id`.
async fn open_stream(api: &Api, id: &str, last_event_id: Option<i64>) -> reqwest::Response {
    let mut request = api
        .http
        .get(format!("{}/v1/tasks/{id}/events", api.base))
        .header("accept", "text/event-stream");
    if let Some(last) = last_event_id {
        request = request.header("last-event-id", last.to_string());
    }
    let response = api.execute(request).await;
    assert_eq!(response.status(), 200);
    assert!(response.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/event-stream"));
    response
}

/// Reads a whole event stream (it ends after the terminal event), bounded.
async fn read_stream(api: &Api, id: &str, last_event_id: Option<i64>) -> String {
    let response = open_stream(api, id, last_event_id).await;
    tokio::time::timeout(Duration::from_secs(30), response.text())
        .await
        .expect("stream ended")
        .unwrap()
}

/// Reads an open stream into `text` until `text` holds `needle` (each chunk bounded).
async fn read_until(response: &mut reqwest::Response, text: &mut String, needle: &str) {
    while !text.contains(needle) {
        let chunk = tokio::time::timeout(Duration::from_secs(5), response.chunk())
            .await
            .expect("event in time");
        text.push_str(&String::from_utf8_lossy(
            &chunk.unwrap().expect("stream open"),
        ));
    }
}

fn claim_body(route: &str, wait: u64) -> Value {
    json!({"worker_id": "remote-w", "task_types": ["remote"], "route": route, "max": 1, "wait_seconds": wait})
}

async fn claim_one(api: &Api) -> (String, String) {
    let claimed = api.post("/v1/worker/claim", &claim_body("local", 10)).await;
    assert_eq!(claimed.status, 200, "{:?}", claimed.body);
    let task = &claimed.body["tasks"][0];
    (
        task["id"].as_str().expect("a task was claimed").to_owned(),
        task["lease_token"].as_str().unwrap().to_owned(),
    )
}

#[tokio::test]
async fn wait_sees_a_task_finish_on_the_other_replica() {
    let db = common::test_db().await;
    let (a, _b) = two_replicas(&db).await;
    let api = a.api(&api::token(&db.url, "mail", None, ALL).await);
    let body = json!({"task_type": "sleep", "scope_id": "s", "effect_key": "k1", "input": {"ms": 300, "steps": 2}});
    let started = Instant::now();
    let answer = api.post("/v1/tasks?wait=30", &body).await;
    let elapsed = started.elapsed();
    assert_eq!(
        (answer.status, answer.body["state"].as_str()),
        (200, Some("succeeded")),
        "{:?}",
        answer.body
    );
    assert_eq!(answer.body["result"], json!({"slept_ms": 300}));
    // Woken by a source (the notification, or the shared poll), not by the waiter's
    // safety net: a bound that holds on a loaded machine and still fails if neither
    // source reaches the replica that waits.
    assert!(elapsed < SAFETY_POLL, "took {elapsed:?}");

    // A client giving up stops only its own wait: the task goes on.
    let remote = json!({"task_type": "remote", "scope_id": "s", "effect_key": "k2", "input": {}});
    let impatient = api
        .http
        .post(format!("{}/v1/tasks?wait=30", api.base))
        .bearer_auth(&api.token)
        .json(&remote);
    assert!(impatient
        .timeout(Duration::from_millis(300))
        .send()
        .await
        .is_err());
    let listed = api.get("/v1/tasks?task_type=remote").await;
    assert_eq!(listed.body["items"][0]["state"], "queued");
    // ?wait= on an unfinished task answers 202 when the wait runs out.
    let short = api.post("/v1/tasks?wait=1", &remote).await;
    assert_eq!(
        (short.status, short.body["state"].as_str()),
        (202, Some("queued"))
    );
}

#[tokio::test]
async fn remote_worker_events_stream_across_replicas_and_resume() {
    let db = common::test_db().await;
    let (a, b) = two_replicas(&db).await;
    let token = api::token(&db.url, "mail", None, ALL).await;
    let (on_a, on_b) = (a.api(&token), b.api(&token));
    let submitted = on_a
        .submit("remote", "s", "k1", json!({"input": {"q": "hi"}}))
        .await;
    let id = submitted.body["id"].as_str().unwrap().to_owned();
    let stream = {
        let on_a = on_a.clone();
        let id = id.clone();
        tokio::spawn(async move { read_stream(&on_a, &id, None).await })
    };

    let claimed = on_b
        .post("/v1/worker/claim", &claim_body("local", 10))
        .await;
    let task = &claimed.body["tasks"][0];
    assert_eq!(
        (task["id"].as_str(), task["attempt"].as_i64()),
        (Some(id.as_str()), Some(1))
    );
    assert_eq!(task["input"], json!({"q": "hi"}));
    let lease = task["lease_token"].as_str().unwrap().to_owned();
    let beat = json!({"lease_token": lease, "progress": 50, "phase": "running",
        "snapshot": {"at": 1}, "events": [{"type": "task.output", "data": {"chunk": "hel"}}]});
    let answer = on_b
        .post(&format!("/v1/worker/tasks/{id}/heartbeat"), &beat)
        .await;
    assert_eq!(
        (answer.status, answer.body["cancel_requested"].as_bool()),
        (200, Some(false)),
        "{:?}",
        answer.body
    );
    let done = json!({"lease_token": lease, "result": {"text": "hello"},
        "usage": {"input_tokens": 5, "output_tokens": 7, "total_tokens": 12},
        "provenance": {"provider": "local", "model": "tiny", "route_name": "gpu-1"}});
    assert_eq!(
        on_b.post(&format!("/v1/worker/tasks/{id}/complete"), &done)
            .await
            .status,
        200
    );

    let events = parse_sse(&stream.await.unwrap());
    let ids: Vec<i64> = events.iter().map(|e| e.0).collect();
    assert_eq!(ids, (1..=ids.len() as i64).collect::<Vec<_>>());
    let kinds: Vec<&str> = events.iter().map(|e| e.1.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "task.queued",
            "task.running",
            "task.progress",
            "task.output",
            "task.succeeded"
        ]
    );
    assert_eq!(events[3].2["data"], json!({"chunk": "hel"}));

    let resumed = parse_sse(&read_stream(&on_a, &id, Some(2)).await);
    assert_eq!(resumed.iter().map(|e| e.0).collect::<Vec<_>>(), [3, 4, 5]);
    let page = on_a
        .get(&format!("/v1/tasks/{id}/events?after=1&limit=2"))
        .await;
    let seqs: Vec<i64> = page.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["seq"].as_i64().unwrap())
        .collect();
    assert_eq!(seqs, [2, 3]);
    assert_eq!(
        on_a.get(&format!("/v1/tasks/{id}/events?limit=101"))
            .await
            .status,
        422
    );
    let view = on_a.get(&format!("/v1/tasks/{id}")).await.body;
    assert_eq!(view["result"], json!({"text": "hello"}));
    assert_eq!(view["provenance"]["model"], "tiny");
    assert_eq!(view["provenance"]["route_name"], "gpu-1");
    assert_eq!(view["usage"]["total_tokens"], 12);
}

#[tokio::test]
async fn claims_are_validated_and_long_poll() {
    let db = common::test_db().await;
    let serve = InProcess::start(&db.url, Options::default()).await;
    let api = serve.api(&api::token(&db.url, "mail", None, ALL).await);
    let bad_route = api.post("/v1/worker/claim", &claim_body("moon", 0)).await;
    assert_eq!(
        (bad_route.status, bad_route.body["field"].as_str()),
        (422, Some("route"))
    );
    let mut unknown = claim_body("local", 0);
    unknown["task_types"] = json!(["teleport"]);
    assert_eq!(
        api.post("/v1/worker/claim", &unknown).await.code(),
        "unknown_task_type"
    );
    let mut too_many = claim_body("local", 0);
    too_many["max"] = json!(101);
    assert_eq!(api.post("/v1/worker/claim", &too_many).await.status, 422);
    let long = api.post("/v1/worker/claim", &claim_body("local", 31)).await;
    assert_eq!(long.status, 422);
    let started = Instant::now();
    let empty = api.post("/v1/worker/claim", &claim_body("local", 1)).await;
    assert_eq!(empty.body["tasks"], json!([]));
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "the long poll returned early"
    );
}

#[tokio::test]
async fn heartbeats_are_validated_and_carry_cancellation() {
    let db = common::test_db().await;
    let serve = InProcess::start(&db.url, Options::default()).await;
    let api = serve.api(&api::token(&db.url, "mail", None, ALL).await);
    let id = api.submit("remote", "s", "k1", json!({})).await.body["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (claimed, lease) = claim_one(&api).await;
    assert_eq!(claimed, id);
    let beat = |extra: Value| {
        let mut body = json!({"lease_token": lease});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        body
    };
    let path = format!("/v1/worker/tasks/{id}/heartbeat");
    let bad_type = api
        .post(
            &path,
            &beat(json!({"events": [{"type": "task.succeeded", "data": {}}]})),
        )
        .await;
    assert_eq!(
        (bad_type.status, bad_type.body["field"].as_str()),
        (422, Some("events[0].type"))
    );
    let hundred: Vec<Value> = (0..100)
        .map(|n| json!({"type": "task.output", "data": {"n": n}}))
        .collect();
    let mut hundred_one = hundred.clone();
    hundred_one.push(json!({"type": "task.output"}));
    assert_eq!(
        api.post(&path, &beat(json!({"events": hundred_one})))
            .await
            .status,
        422
    );
    assert_eq!(
        api.post(&path, &beat(json!({"events": hundred})))
            .await
            .status,
        200
    );
    let max_data = "x".repeat(64 * 1024 - 2);
    assert_eq!(
        api.post(
            &path,
            &beat(json!({"events": [{"type": "task.output", "data": max_data}]}))
        )
        .await
        .status,
        200
    );
    let over = "x".repeat(64 * 1024 - 1);
    assert_eq!(
        api.post(
            &path,
            &beat(json!({"events": [{"type": "task.output", "data": over}]}))
        )
        .await
        .status,
        422
    );
    assert_eq!(
        api.post(&path, &beat(json!({"progress": 101}))).await.body["field"],
        "progress"
    );
    assert_eq!(
        api.post(&path, &beat(json!({"phase": "dreaming"})))
            .await
            .body["field"],
        "phase"
    );
    assert_eq!(
        api.post(&path, &json!({"lease_token": "nope"}))
            .await
            .status,
        422
    );
    api.post(&format!("/v1/tasks/{id}/cancel"), &json!({}))
        .await;
    assert_eq!(
        api.post(&path, &beat(json!({}))).await.body["cancel_requested"],
        true
    );
    let acked = api
        .post(
            &format!("/v1/worker/tasks/{id}/cancelled"),
            &json!({"lease_token": lease}),
        )
        .await;
    assert_eq!(
        (acked.status, acked.body["state"].as_str()),
        (200, Some("cancelled"))
    );
}

#[tokio::test]
async fn fail_and_fallback_settle_through_the_protocol() {
    let db = common::test_db().await;
    let serve = InProcess::start(&db.url, Options::default()).await;
    let api = serve.api(&api::token(&db.url, "mail", None, ALL).await);
    // fail (retryable) → waiting_for_retry; fallback → waiting for an external worker.
    let id2 = api.submit("remote", "s", "k2", json!({})).await.body["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (_, lease2) = claim_one(&api).await;
    let not_cancelling = api
        .post(
            &format!("/v1/worker/tasks/{id2}/cancelled"),
            &json!({"lease_token": lease2}),
        )
        .await;
    assert_eq!(
        (not_cancelling.status, not_cancelling.code()),
        (409, "illegal_transition")
    );
    let fail = json!({"lease_token": lease2, "code": "busy", "message": "later", "retryable": true, "retry_after_seconds": 0});
    let failed = api
        .post(&format!("/v1/worker/tasks/{id2}/fail"), &fail)
        .await;
    assert_eq!(
        failed.body["state"], "waiting_for_retry",
        "{:?}",
        failed.body
    );
    let (_, lease3) = claim_one(&api).await;
    let fallback = api
        .post(
            &format!("/v1/worker/tasks/{id2}/fallback"),
            &json!({"lease_token": lease3, "reason": "busy"}),
        )
        .await;
    assert_eq!(fallback.body["state"], "waiting_for_external_fallback");
    let external = api
        .post("/v1/worker/claim", &claim_body("external", 5))
        .await;
    assert_eq!(external.body["tasks"][0]["id"].as_str(), Some(id2.as_str()));
}

#[tokio::test]
async fn stale_leases_are_refused_and_deleted_tasks_are_gone() {
    let db = common::test_db().await;
    let (a, b) = two_replicas(&db).await;
    let token = api::token(&db.url, "mail", None, ALL).await;
    let (on_a, on_b) = (a.api(&token), b.api(&token));
    let c = db.client().await;
    let id = on_a.submit("remote", "s", "k1", json!({})).await.body["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (_, stale) = claim_one(&on_a).await;
    let uuid: uuid::Uuid = id.parse().unwrap();
    common::fixtures::expire_lease(&c, uuid).await;
    common::fixtures::rescue_expired(&c).await;
    let (again, fresh) = claim_one(&on_b).await;
    assert_eq!(again, id);
    let complete = |lease: &str| json!({"lease_token": lease, "result": {"by": lease}});
    for path in ["heartbeat", "complete"] {
        let body = if path == "heartbeat" {
            json!({"lease_token": stale})
        } else {
            complete(&stale)
        };
        let refused = on_a
            .post(&format!("/v1/worker/tasks/{id}/{path}"), &body)
            .await;
        assert_eq!(
            (refused.status, refused.code()),
            (409, "lease_lost"),
            "{path}"
        );
    }
    assert_eq!(
        on_b.post(
            &format!("/v1/worker/tasks/{id}/complete"),
            &complete(&fresh)
        )
        .await
        .status,
        200
    );
    let view = on_a.get(&format!("/v1/tasks/{id}")).await.body;
    assert_eq!(
        (view["state"].as_str(), view["attempt"].as_i64()),
        (Some("succeeded"), Some(2))
    );
    assert_eq!(view["result"]["by"], fresh.as_str());

    let id2 = on_a.submit("remote", "s", "k2", json!({})).await.body["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (_, lease) = claim_one(&on_a).await;
    c.execute(
        "DELETE FROM tasklane.tasks WHERE id = $1",
        &[&id2.parse::<uuid::Uuid>().unwrap()],
    )
    .await
    .unwrap();
    let gone = on_b
        .post(
            &format!("/v1/worker/tasks/{id2}/heartbeat"),
            &json!({"lease_token": lease}),
        )
        .await;
    assert_eq!((gone.status, gone.code()), (410, "task_gone"));
    let gone = on_b
        .post(
            &format!("/v1/worker/tasks/{id2}/complete"),
            &complete(&lease),
        )
        .await;
    assert_eq!(gone.status, 410);
    assert_eq!(on_a.get(&format!("/v1/tasks/{id2}")).await.status, 404);
}

#[tokio::test]
async fn sigterm_ends_streams_and_long_polls_then_exits() {
    let db = common::test_db().await;
    let env = vec![("TASKLANE_READINESS_DRAIN_MS", "700".to_owned())];
    let mut serve = Serve::start(
        &db.url,
        Options {
            env,
            ..Default::default()
        },
    )
    .await;
    let api = serve.api(&api::token(&db.url, "mail", None, ALL).await);
    // local_only: the external long poll below never takes it.
    let submitted = api
        .submit("remote", "s", "k1", json!({"privacy": "local_only"}))
        .await;
    let id = submitted.body["id"].as_str().unwrap().to_owned();
    let poll = {
        let api = api.clone();
        tokio::spawn(async move {
            api.post("/v1/worker/claim", &claim_body("external", 30))
                .await
        })
    };
    // Both are being served before the signal: the stream has sent event 1, and the
    // replica counts the long poll in flight.
    let mut response = open_stream(&api, &id, None).await;
    let mut text = String::new();
    read_until(&mut response, &mut text, "task.queued").await;
    let stream = tokio::spawn(async move { text + &response.text().await.unwrap() });
    api.until_in_flight("/v1/worker/claim", 1).await;
    let started = Instant::now();
    serve.terminate();
    // Readiness turns 503 first, while requests are still answered.
    eventually(Duration::from_secs(10), "/readyz to answer 503", || async {
        match api.get("/readyz").await.status {
            503 => Ok(()),
            other => Err(other),
        }
    })
    .await;
    assert_eq!(api.get("/healthz").await.status, 200);
    let text = tokio::time::timeout(Duration::from_secs(10), stream)
        .await
        .expect("stream ended")
        .unwrap();
    assert_eq!(parse_sse(&text).len(), 1);
    let polled = tokio::time::timeout(Duration::from_secs(10), poll)
        .await
        .expect("long poll ended")
        .unwrap();
    assert_eq!((polled.status, &polled.body["tasks"]), (200, &json!([])));
    serve.wait_exit(Duration::from_secs(15)).await;
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn a_long_poll_on_one_replica_takes_work_submitted_on_the_other() {
    let db = common::test_db().await;
    let (a, b) = two_replicas(&db).await;
    let token = api::token(&db.url, "mail", None, ALL).await;
    let (on_a, on_b) = (a.api(&token), b.api(&token));
    let poll = {
        let on_a = on_a.clone();
        tokio::spawn(async move {
            on_a.post("/v1/worker/claim", &claim_body("local", 20))
                .await
        })
    };
    on_a.until_in_flight("/v1/worker/claim", 1).await;
    let id = on_b.submit("remote", "s", "k1", json!({})).await.body["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let claimed = tokio::time::timeout(Duration::from_secs(10), poll)
        .await
        .expect("the long poll answered")
        .unwrap();
    // The poll was in flight before the submit and answered with the task well before
    // its 20 s wait ran out: woken by the work, on the other replica.
    assert_eq!(claimed.body["tasks"][0]["id"].as_str(), Some(id.as_str()));
}

#[tokio::test]
async fn a_stream_sees_unnotified_events_through_the_shared_poll() {
    let db = common::test_db().await;
    let (a, b) = two_replicas(&db).await;
    let token = api::token(&db.url, "mail", None, ALL).await;
    let (on_a, on_b) = (a.api(&token), b.api(&token));
    let id = on_a.submit("remote", "s", "k1", json!({})).await.body["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut response = open_stream(&on_a, &id, None).await;
    let mut text = String::new();
    read_until(&mut response, &mut text, "task.queued").await;
    // task.running is not NOTIFYed: the replica's shared poll must carry it.
    let claimed = Instant::now();
    claim_one(&on_b).await;
    read_until(&mut response, &mut text, "task.running").await;
    // Carried by the shared poll, not by the stream's safety net.
    assert!(
        claimed.elapsed() < SAFETY_POLL,
        "took {:?}",
        claimed.elapsed()
    );
}
