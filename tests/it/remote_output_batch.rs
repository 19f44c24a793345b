//! Batched live output writes (`POST /v1/worker/output`) against real replica
//! processes: each item is answered on its own (a held lease, a lost one, a deleted
//! task, another app's task), only the held ones reach the observers on another
//! replica, in order, and a write with a lost lease is refused and changes nothing.

use serde_json::json;

use crate::common::api::{self, ALL};
use crate::common::serve::{Options, Serve};
use crate::common::{self};
use crate::output::{text_of, Stream};
use crate::remote_worker::{claim, row, statuses, submitted, TYPES};

#[tokio::test]
async fn a_batched_output_write_answers_each_item_and_publishes_only_held_leases() {
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
    let their_token = api::token(&db.url, "other", None, ALL).await;
    let (wa, oa, other) = (
        writer.api(&token),
        observer.api(&token),
        writer.api(&their_token),
    );
    let one = submitted(&wa, "remote", "s", "one").await;
    let (_, one_token, _) = claim(&wa, "remote").await;
    let two = submitted(&wa, "remote", "s", "two").await;
    let (_, two_token, _) = claim(&wa, "remote").await;
    let lost = submitted(&wa, "remote", "s", "lost").await;
    let (_, stale_token, _) = claim(&wa, "remote").await;
    let gone = submitted(&wa, "remote", "doomed", "gone").await;
    let (_, gone_token, _) = claim(&wa, "remote").await;
    let theirs = submitted(&other, "remote", "s", "theirs").await;
    let (_, theirs_token, _) = claim(&other, "remote").await;

    // `lost`: its lease expires, the rescuer queues it again and another claim takes it.
    let c = db.client().await;
    let lost_id: uuid::Uuid = lost.parse().unwrap();
    c.execute(
        "UPDATE tasklane.tasks SET lease_expires_at = now() - interval '1 second' WHERE id = $1",
        &[&lost_id],
    )
    .await
    .unwrap();
    let (again, fresh_token, attempt) = claim(&wa, "remote").await;
    assert_eq!((again.as_str(), attempt), (lost.as_str(), 2));
    let deleted = wa
        .send(
            wa.http
                .delete(format!("{}/v1/scopes/doomed/tasks", wa.base)),
        )
        .await;
    assert_eq!(deleted.body["deleted"], 1, "{:?}", deleted.body);

    let mut streams = [
        Stream::open(&oa, &one).await,
        Stream::open(&oa, &two).await,
        Stream::open(&oa, &lost).await,
    ];
    let (before_lost, before_theirs) = (row(&db, &lost).await, row(&db, &theirs).await);

    // A batch wrong as a whole is refused with nothing appended.
    let twice = json!({"items": [
        {"id": one, "lease_token": one_token, "text": "REFUSED"},
        {"id": one, "lease_token": one_token, "text": "REFUSED"}]});
    let refused = wa.post("/v1/worker/output", &twice).await;
    assert_eq!((refused.status, refused.code()), (422, "validation_failed"));
    assert_eq!(refused.body["field"], "items[1].id");
    let long = json!({"items": [
        {"id": one, "lease_token": one_token, "text": "REFUSED"},
        {"id": two, "lease_token": two_token, "text": "x".repeat(64 * 1024 + 1)}]});
    let refused = wa.post("/v1/worker/output", &long).await;
    assert_eq!((refused.status, refused.code()), (422, "validation_failed"));
    assert_eq!(refused.body["field"], "items[1].text");
    let empty = wa.post("/v1/worker/output", &json!({"items": []})).await;
    assert_eq!(empty.status, 422);

    // Rounds of one request each: every item answered on its own, in the order given.
    let (mut one_text, mut two_text, mut fresh_text) =
        (String::new(), String::new(), String::new());
    for round in 0..12 {
        let chunk = |name: &str| format!("{name}-tök{round:02} ");
        let mut items = vec![
            json!({"id": one, "lease_token": one_token, "text": chunk("one")}),
            json!({"id": lost, "lease_token": stale_token, "text": "STALE"}),
            json!({"id": gone, "lease_token": gone_token, "text": "GONE"}),
            json!({"id": theirs, "lease_token": theirs_token, "text": "THEIRS"}),
            json!({"id": two, "lease_token": two_token, "text": chunk("two")}),
        ];
        one_text.push_str(&chunk("one"));
        two_text.push_str(&chunk("two"));
        let mut expected = ["ok", "lease_lost", "task_gone", "task_gone", "ok"];
        if round % 3 == 0 {
            // The new holder of `lost` writes too; the stale lease goes in a request of
            // its own (a task named twice is refused).
            let fresh = json!({"id": lost, "lease_token": fresh_token, "text": chunk("fresh")});
            let stale = std::mem::replace(&mut items[1], fresh);
            fresh_text.push_str(&chunk("fresh"));
            expected[1] = "ok";
            let answer = wa
                .post("/v1/worker/output", &json!({"items": [stale]}))
                .await;
            assert_eq!(statuses(&answer.body), ["lease_lost"], "{:?}", answer.body);
        }
        let answer = wa.post("/v1/worker/output", &json!({"items": items})).await;
        assert_eq!(answer.status, 200, "{:?}", answer.body);
        assert_eq!(statuses(&answer.body), expected, "round {round}");
        let ids: Vec<&str> = items.iter().map(|i| i["id"].as_str().unwrap()).collect();
        let answered: Vec<&str> = answer.body["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["id"].as_str().unwrap())
            .collect();
        assert_eq!(answered, ids);
    }
    // The refused items changed nothing of their tasks.
    assert_eq!(row(&db, &lost).await, before_lost);
    assert_eq!(row(&db, &theirs).await, before_theirs);

    let done = json!({"worker_id": "w", "items": [
        {"id": one, "lease_token": one_token, "result": {}},
        {"id": two, "lease_token": two_token, "result": {}},
        {"id": lost, "lease_token": fresh_token, "result": {}}]});
    let answer = wa.post("/v1/worker/complete", &done).await;
    assert_eq!(statuses(&answer.body), ["succeeded"; 3]);
    // After the settlement the lease is gone: a write with it is refused.
    let late = json!({"items": [{"id": one, "lease_token": one_token, "text": "LATE"}]});
    let answer = wa.post("/v1/worker/output", &late).await;
    assert_eq!(statuses(&answer.body), ["lease_lost"]);

    let expected = [(1, &one_text), (1, &two_text), (2, &fresh_text)];
    for (stream, (attempt, text)) in streams.iter_mut().zip(expected) {
        let events = stream.rest().await;
        assert_eq!(&text_of(&events, attempt), text);
        assert!(events.iter().all(|e| {
            let text = e.data["text"].as_str().unwrap_or("");
            !["STALE", "GONE", "THEIRS", "REFUSED", "LATE"]
                .iter()
                .any(|bad| text.contains(bad))
        }));
        assert_eq!(events.last().unwrap().kind, "task.succeeded");
    }
}
