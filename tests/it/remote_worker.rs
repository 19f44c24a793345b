//! Remote workers against real replica processes: batched heartbeats and completions
//! answer each item on its own (a good lease, a lost one, a deleted task, another
//! owner's task, an output that does not match the type's schema) and change nothing
//! for the items they refuse; live output written by a remote worker through one
//! replica reaches an observer on another in order, resets when the worker's lease is
//! lost and another attempt starts, and a write with the lost lease is refused.

use std::time::Duration;

use serde_json::{json, Value};

use crate::common::api::{self, Api, ALL};
use crate::common::serve::{Options, Serve};
use crate::common::{self, eventually};
use crate::output::{text_of, Sse, Stream};

/// `remote` with a lease long enough for a test on a busy box; `brief` with a 2-second
/// lease, retried when it expires; `shaped` with an output schema.
pub(crate) const TYPES: &str = r#"
[[task_type]]
name = "remote"
executor = "remote"
lease_seconds = 60
on_restart = "retry"

[[task_type]]
name = "brief"
executor = "remote"
lease_seconds = 2
max_attempts = 3
on_restart = "retry"

[[task_type]]
name = "shaped"
executor = "remote"
output_schema = { type = "object", properties = { label = { type = "string" } }, required = ["label"] }
"#;

const WITHIN: Duration = Duration::from_secs(30);

pub(crate) async fn submitted(api: &Api, task_type: &str, scope: &str, key: &str) -> String {
    let answer = api.submit(task_type, scope, key, json!({})).await;
    assert_eq!(answer.status, 202, "{:?}", answer.body);
    answer.body["id"].as_str().unwrap().to_owned()
}

/// Claims `task_type` until a task is claimed: (id, lease_token, attempt).
pub(crate) async fn claim(api: &Api, task_type: &str) -> (String, String, i64) {
    let body = json!({"worker_id": "w", "task_types": [task_type], "route": "local", "max": 1, "wait_seconds": 5});
    eventually(WITHIN, "a claim", || async {
        let claimed = api.post("/v1/worker/claim", &body).await;
        let task = &claimed.body["tasks"][0];
        match task["id"].as_str() {
            Some(id) => Ok((
                id.to_owned(),
                task["lease_token"].as_str().unwrap().to_owned(),
                task["attempt"].as_i64().unwrap(),
            )),
            None => Err(claimed.status),
        }
    })
    .await
}

/// What a refused item must leave alone: the task's row as the worker sees it.
pub(crate) async fn row(db: &common::TestDb, id: &str) -> Value {
    let c = db.client().await;
    let id: uuid::Uuid = id.parse().unwrap();
    let row = c
        .query_one(
            "SELECT json_build_object('state', state, 'progress', progress, \
             'snapshot', snapshot, 'lease_token', lease_token, \
             'lease_expires_at', lease_expires_at, 'event_seq', event_seq, 'result', result) \
             FROM tasklane.tasks WHERE id = $1",
            &[&id],
        )
        .await
        .unwrap();
    row.get(0)
}

pub(crate) fn statuses(answer: &Value) -> Vec<&str> {
    answer["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["status"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn batch_items_are_answered_each_on_its_own_and_refused_ones_change_nothing() {
    let db = common::test_db().await;
    let options = Options {
        task_types: Some(TYPES),
        ..Default::default()
    };
    let serve = Serve::start(&db.url, options).await;
    let api = serve.api(&api::token(&db.url, "ai", None, ALL).await);
    let other = serve.api(&api::token(&db.url, "other", None, ALL).await);
    let good = submitted(&api, "remote", "s", "good").await;
    let (_, good_token, _) = claim(&api, "remote").await;
    let lost = submitted(&api, "remote", "s", "lost").await;
    let (_, stale_token, _) = claim(&api, "remote").await;
    let gone = submitted(&api, "remote", "doomed", "gone").await;
    let (_, gone_token, _) = claim(&api, "remote").await;
    let shaped = submitted(&api, "shaped", "s", "shaped").await;
    let (_, shaped_token, _) = claim(&api, "shaped").await;
    let theirs = submitted(&other, "remote", "s", "theirs").await;
    let (_, their_token, _) = claim(&other, "remote").await;

    // `lost`: its lease expires, the rescuer queues it again and another claim takes it.
    let c = db.client().await;
    let lost_id: uuid::Uuid = lost.parse().unwrap();
    c.execute(
        "UPDATE tasklane.tasks SET lease_expires_at = now() - interval '1 second' WHERE id = $1",
        &[&lost_id],
    )
    .await
    .unwrap();
    let (again, fresh_token, attempt) = claim(&api, "remote").await;
    assert_eq!((again.as_str(), attempt), (lost.as_str(), 2));
    let deleted = api
        .send(
            api.http
                .delete(format!("{}/v1/scopes/doomed/tasks", api.base)),
        )
        .await;
    assert_eq!(deleted.body["deleted"], 1, "{:?}", deleted.body);

    // A malformed batch is refused whole: nothing written.
    let (before_good, before_lost, before_theirs) = (
        row(&db, &good).await,
        row(&db, &lost).await,
        row(&db, &theirs).await,
    );
    let twice = json!({"worker_id": "w", "items": [
        {"id": good, "lease_token": good_token, "progress": 10},
        {"id": good, "lease_token": good_token}]});
    let refused = api.post("/v1/worker/heartbeats", &twice).await;
    assert_eq!((refused.status, refused.code()), (422, "validation_failed"));
    assert_eq!(refused.body["field"], "items[1].id");
    let empty = api
        .post(
            "/v1/worker/heartbeats",
            &json!({"worker_id": "w", "items": []}),
        )
        .await;
    assert_eq!(empty.status, 422);
    assert_eq!(row(&db, &good).await, before_good);

    // One batch: each item answered on its own, in order.
    let beats = json!({"worker_id": "w", "items": [
        {"id": good, "lease_token": good_token, "progress": 40, "snapshot": {"page": 2}},
        {"id": lost, "lease_token": stale_token, "progress": 99, "snapshot": {"page": 9}},
        {"id": gone, "lease_token": gone_token, "progress": 50},
        {"id": theirs, "lease_token": their_token, "progress": 77}]});
    let answer = api.post("/v1/worker/heartbeats", &beats).await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    assert_eq!(
        statuses(&answer.body),
        ["ok", "lease_lost", "task_gone", "task_gone"]
    );
    let items = &answer.body["items"];
    assert_eq!(items[0]["id"], good.as_str());
    assert_eq!(items[0]["cancel_requested"], false);
    assert!(items[0]["lease_expires_at"].is_string());
    assert!(items[1]["lease_expires_at"].is_null());
    let beaten = row(&db, &good).await;
    assert_eq!(
        (beaten["progress"].clone(), beaten["snapshot"].clone()),
        (json!(40), json!({"page": 2}))
    );
    assert_eq!(
        beaten["event_seq"],
        before_good["event_seq"].as_i64().unwrap() + 1
    );
    assert_eq!(row(&db, &lost).await, before_lost);
    assert_eq!(row(&db, &theirs).await, before_theirs);
    let events = api.get(&format!("/v1/tasks/{good}/events")).await;
    let last = events.body["items"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(
        (last["type"].clone(), last["data"]["progress"].clone()),
        (json!("task.progress"), json!(40))
    );

    // The new holder of `lost` hears a cancel request through the batch.
    let cancel = api
        .post(&format!("/v1/tasks/{lost}/cancel"), &json!({}))
        .await;
    assert_eq!(cancel.body["state"], "cancelling");
    let beats = json!({"worker_id": "w", "items": [{"id": lost, "lease_token": fresh_token}]});
    let answer = api.post("/v1/worker/heartbeats", &beats).await;
    assert_eq!(answer.body["items"][0]["cancel_requested"], true);

    // One completion batch, each item on its own; refused items keep their rows.
    let before_lost = row(&db, &lost).await;
    let before_shaped = row(&db, &shaped).await;
    let done = json!({"worker_id": "w", "items": [
        {"id": good, "lease_token": good_token, "result": {"n": 1}, "usage": {"units": 3}},
        {"id": lost, "lease_token": stale_token, "result": {"n": 2}},
        {"id": gone, "lease_token": gone_token, "result": {"n": 3}},
        {"id": theirs, "lease_token": their_token, "result": {"n": 4}},
        {"id": shaped, "lease_token": shaped_token, "result": {"output": {"label": 5}}}]});
    let answer = api.post("/v1/worker/complete", &done).await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    assert_eq!(
        statuses(&answer.body),
        [
            "succeeded",
            "lease_lost",
            "task_gone",
            "task_gone",
            "invalid_output"
        ]
    );
    assert_eq!(answer.body["items"][4]["error"]["code"], "invalid_output");
    assert!(answer.body["items"][0].get("error").is_none());
    let settled = api.get(&format!("/v1/tasks/{good}")).await;
    assert_eq!(
        (
            settled.body["state"].clone(),
            settled.body["result"].clone()
        ),
        (json!("succeeded"), json!({"n": 1}))
    );
    assert_eq!(row(&db, &lost).await, before_lost);
    assert_eq!(row(&db, &theirs).await, before_theirs);
    assert_eq!(row(&db, &shaped).await, before_shaped);

    // Live output writes are fenced the same way.
    let write = |id: &str, token: &str| {
        let (api, path) = (api.clone(), format!("/v1/worker/tasks/{id}/output"));
        let body = json!({"lease_token": token, "text": "late"});
        async move { api.post(&path, &body).await }
    };
    assert_eq!(write(&lost, &stale_token).await.code(), "lease_lost");
    assert_eq!(write(&good, &good_token).await.code(), "lease_lost");
    assert_eq!(write(&gone, &gone_token).await.code(), "task_gone");
    assert_eq!(write(&theirs, &their_token).await.status, 404);
    assert_eq!(write(&lost, &fresh_token).await.status, 204);

    // The refused ones still settle with their own leases.
    let done = json!({"worker_id": "w", "items": [
        {"id": shaped, "lease_token": shaped_token, "result": {"output": {"label": "ham"}}},
        {"id": lost, "lease_token": fresh_token, "result": {"n": 2}}]});
    let answer = api.post("/v1/worker/complete", &done).await;
    assert_eq!(statuses(&answer.body), ["succeeded", "succeeded"]);
}

/// Reads `stream` until `done` holds for the events read so far.
async fn read_until(stream: &mut Stream, events: &mut Vec<Sse>, done: impl Fn(&[Sse]) -> bool) {
    while !done(events) {
        events.push(stream.next().await.expect("the stream goes on"));
    }
}

/// Writes `chunks` as `worker`'s output of `id`: most through the output route, every
/// fourth in a batched heartbeat.
async fn stream_chunks(api: &Api, id: &str, token: &str, chunks: &[String]) {
    for (n, chunk) in chunks.iter().enumerate() {
        if n % 4 == 3 {
            let beat = json!({"worker_id": "w", "items": [{"id": id, "lease_token": token, "output": chunk}]});
            let answer = api.post("/v1/worker/heartbeats", &beat).await;
            assert_eq!(answer.body["items"][0]["status"], "ok", "{:?}", answer.body);
        } else {
            let body = json!({"lease_token": token, "text": chunk});
            let answer = api
                .post(&format!("/v1/worker/tasks/{id}/output"), &body)
                .await;
            assert_eq!(answer.status, 204, "{:?}", answer.body);
        }
    }
}

#[tokio::test]
async fn remote_output_reaches_another_replica_in_order_and_resets_when_the_lease_is_lost() {
    let db = common::test_db().await;
    let writer = Serve::start(
        &db.url,
        Options {
            task_types: Some(TYPES),
            name: Some("writer".into()),
            ..Default::default()
        },
    )
    .await;
    let observer = Serve::start(
        &db.url,
        Options {
            roles: Some("api"),
            task_types: Some(TYPES),
            name: Some("observer".into()),
            ..Default::default()
        },
    )
    .await;
    let token = api::token(&db.url, "ai", None, ALL).await;
    let (wa, oa) = (writer.api(&token), observer.api(&token));
    let id = submitted(&oa, "brief", "s", "streamed").await;
    let mut stream = Stream::open(&oa, &id).await;
    let (claimed, first_token, attempt) = claim(&wa, "brief").await;
    assert_eq!((claimed.as_str(), attempt), (id.as_str(), 1));

    let first: Vec<String> = (0..40).map(|i| format!("tök{i:02} ")).collect();
    stream_chunks(&wa, &id, &first_token, &first).await;
    let mut events = Vec::new();
    let whole = first.concat();
    read_until(&mut stream, &mut events, |e| text_of(e, 1) == whole).await;

    // The worker stops (as if killed: no heartbeat, no settlement); its 2-second lease
    // expires, the task is queued again and a second worker claims attempt 2.
    let (claimed, second_token, attempt) = claim(&wa, "brief").await;
    assert_eq!((claimed.as_str(), attempt), (id.as_str(), 2));
    let stale = json!({"lease_token": first_token, "text": "STALE"});
    let refused = wa
        .post(&format!("/v1/worker/tasks/{id}/output"), &stale)
        .await;
    assert_eq!((refused.status, refused.code()), (409, "lease_lost"));
    let stale_beat = json!({"worker_id": "w", "items": [{"id": id, "lease_token": first_token, "output": "STALE"}]});
    let refused = wa.post("/v1/worker/heartbeats", &stale_beat).await;
    assert_eq!(refused.body["items"][0]["status"], "lease_lost");

    let second: Vec<String> = (0..30).map(|i| format!("zwei{i:02} ")).collect();
    stream_chunks(&wa, &id, &second_token, &second).await;
    let done = json!({"worker_id": "w", "items": [{"id": id, "lease_token": second_token, "result": {"text": second.concat()}}]});
    let answer = wa.post("/v1/worker/complete", &done).await;
    assert_eq!(statuses(&answer.body), ["succeeded"]);
    events.extend(stream.rest().await);

    let reset = events
        .iter()
        .position(|e| e.kind == "output.reset")
        .expect("an output.reset for the new attempt");
    assert_eq!(events[reset].data["attempt"], 2);
    assert!(events[reset..]
        .iter()
        .filter(|e| e.kind == "output.delta")
        .all(|e| e.data["attempt"] == 2));
    assert_eq!(text_of(&events[reset..], 2), second.concat());
    assert!(events
        .iter()
        .all(|e| !e.data["text"].as_str().unwrap_or("").contains("STALE")));
    let last = events.last().unwrap();
    assert_eq!(last.kind, "task.succeeded", "{last:?}");
}
