//! Batch submit (`POST /v1/tasks/batch`): each item is answered exactly as a single
//! submit of it would be, items are independent, admission applies per item, and the
//! whole batch is written by one statement (one transaction).

use serde_json::{json, Value};

use crate::common;
use common::api::{self, Api, ALL};
use common::in_process::InProcess;
use common::serve::Options;

async fn batch(api: &Api, tasks: Vec<Value>) -> api::Answer {
    api.post("/v1/tasks/batch", &json!({ "tasks": tasks }))
        .await
}

fn task(kind: &str, key: &str, input: Value) -> Value {
    json!({"task_type": kind, "scope_id": "s", "effect_key": key, "input": input})
}

#[tokio::test]
async fn each_item_is_answered_as_a_single_submit_would_be() {
    let db = common::test_db().await;
    let serve = InProcess::start(&db.url, Options::default()).await;
    let mail = serve.api(&api::token(&db.url, "mail", None, ALL).await);
    let answer = batch(
        &mail,
        vec![
            task("remote", "a", json!({"n": 1})),
            task("remote", "a", json!({"n": 1})),
            task("remote", "a", json!({"n": 2})),
            task("nope", "b", json!({})),
            json!({"task_type": "remote", "scope_id": "s", "effect_key": "c", "input": {}, "colour": "red"}),
            json!({"task_type": "remote", "scope_id": "s", "effect_key": "d", "input": {}, "priority": 1000}),
            task("remote", "e", json!({})),
        ],
    )
    .await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    let items = answer.body["items"].as_array().unwrap();
    let shape: Vec<(u64, Option<&str>)> = items
        .iter()
        .map(|i| (i["status"].as_u64().unwrap(), i["code"].as_str()))
        .collect();
    assert_eq!(
        shape,
        [
            (202, None),
            (202, None),
            (409, Some("idempotency_conflict")),
            (422, Some("unknown_task_type")),
            (422, Some("unknown_field")),
            (422, Some("validation_failed")),
            (202, None),
        ]
    );
    assert_eq!(
        items[0]["id"], items[1]["id"],
        "the repeat joins the first item's task"
    );
    assert_ne!(items[0]["id"], items[6]["id"]);

    // A scope token's items for another scope are refused one by one.
    let scoped = serve.api(&api::token(&db.url, "mail", Some("s"), ALL).await);
    let mixed = batch(
        &scoped,
        vec![
            task("remote", "own", json!({})),
            json!({"task_type": "remote", "scope_id": "other", "effect_key": "x", "input": {}}),
        ],
    )
    .await;
    let statuses: Vec<&Value> = mixed.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| &i["status"])
        .collect();
    assert_eq!(statuses, [&json!(202), &json!(403)]);
    assert_eq!(mixed.body["items"][1]["code"], "forbidden");
    let other_scope = common::fixtures::count(
        &db.client().await,
        "SELECT count(*) FROM tasklane.tasks WHERE scope_id = 'other'",
    )
    .await;
    assert_eq!(other_scope, 0);
    // A repeated key in an item is refused as a single submit's body would be.
    let repeated = mail
        .post_raw(
            "/v1/tasks/batch",
            r#"{"tasks":[{"task_type":"remote","scope_id":"s","effect_key":"r","effect_key":"q","input":{}}]}"#,
        )
        .await;
    assert_eq!(
        repeated.body["items"][0]["status"], 422,
        "{:?}",
        repeated.body
    );

    // The same answers a single submit gives: a join is 202 with the same id.
    let single = mail
        .submit("remote", "s", "a", json!({"input": {"n": 1}}))
        .await;
    assert_eq!((single.status, &single.body["id"]), (202, &items[0]["id"]));

    // One statement, so one transaction: every created task has the same xmin.
    let ids: Vec<uuid::Uuid> = [&items[0], &items[6]]
        .iter()
        .map(|i| i["id"].as_str().unwrap().parse().unwrap())
        .collect();
    let c = db.client().await;
    let transactions: i64 = c
        .query_one(
            "SELECT count(DISTINCT xmin::text) FROM tasklane.tasks WHERE id = ANY($1)",
            &[&ids],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(transactions, 1);

    // A finished task is replayed (200) by a batch as by a single submit.
    let done = batch(&mail, vec![task("noop", "f", json!({}))]).await;
    let id = done.body["items"][0]["id"].as_str().unwrap().to_owned();
    mail.wait_for(&id, |t| t["state"] == "succeeded").await;
    let replay = batch(&mail, vec![task("noop", "f", json!({}))]).await;
    assert_eq!(replay.body["items"][0], json!({"status": 200, "id": id}));
}

#[tokio::test]
async fn admission_applies_per_item() {
    let db = common::test_db().await;
    let serve = InProcess::start(&db.url, Options::default()).await;
    let admin = serve.api(&api::token(&db.url, "ops", None, &["admin"]).await);
    let mail = serve.api(&api::token(&db.url, "mail", None, ALL).await);
    let limit = admin
        .send(
            admin
                .http
                .put(format!("{}/v1/admin/limits", admin.base))
                .json(&json!({"kind": "capacity", "app": "mail", "limit": 2})),
        )
        .await;
    assert_eq!(limit.status, 200, "{:?}", limit.body);
    let answer = batch(
        &mail,
        (0..4)
            .map(|n| task("remote", &format!("k{n}"), json!({})))
            .collect(),
    )
    .await;
    let items = answer.body["items"].as_array().unwrap();
    let statuses: Vec<u64> = items
        .iter()
        .map(|i| i["status"].as_u64().unwrap())
        .collect();
    assert_eq!(statuses, [202, 202, 429, 429]);
    assert_eq!(items[2]["code"], "capacity_exhausted");
    assert!(items[3]["retry_after"].as_u64().unwrap() >= 1);
    let overview = admin.get("/v1/admin/overview").await;
    let refusals = &overview.body["refusals_today"];
    assert_eq!(
        refusals,
        &json!([{"code": "capacity_exhausted", "app": "mail", "count": 2}])
    );

    let stop = admin
        .send(
            admin
                .http
                .put(format!("{}/v1/admin/emergency-stop", admin.base))
                .json(&json!({"enabled": true, "app": "mail"})),
        )
        .await;
    assert_eq!(stop.status, 200);
    let stopped = batch(&mail, vec![task("remote", "k9", json!({}))]).await;
    assert_eq!(stopped.body["items"][0]["status"], 503);
    assert_eq!(stopped.body["items"][0]["code"], "emergency_stop");
}

#[tokio::test]
async fn a_batch_is_bounded_in_items_and_bytes() {
    let db = common::test_db().await;
    let serve = InProcess::start(&db.url, Options::default()).await;
    let mail = serve.api(&api::token(&db.url, "mail", None, ALL).await);
    let empty = batch(&mail, vec![]).await;
    assert_eq!((empty.status, empty.code()), (422, "validation_failed"));
    let many = batch(
        &mail,
        (0..1001)
            .map(|n| task("remote", &format!("k{n}"), json!({})))
            .collect(),
    )
    .await;
    assert_eq!((many.status, many.code()), (422, "validation_failed"));
    // More than one request's body limit (about 1.06 MiB), within the batch's.
    let blob = "x".repeat(100 * 1024);
    let big = batch(
        &mail,
        (0..20)
            .map(|n| task("remote", &format!("b{n}"), json!({"blob": blob})))
            .collect(),
    )
    .await;
    assert_eq!(big.status, 200, "{:?}", big.body["code"]);
    assert!(big.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .all(|i| i["status"] == 202));
    let refused = mail
        .submit(
            "remote",
            "s",
            "one",
            json!({"input": {"blob": "x".repeat(1_200_000)}}),
        )
        .await;
    assert_eq!(refused.status, 413, "a single submit keeps its own limit");
}

#[tokio::test]
async fn a_mixed_batch_answers_each_item_as_a_single_submit() {
    let db = common::test_db().await;
    let serve = InProcess::start(&db.url, Options::default()).await;
    let admin = serve.api(&api::token(&db.url, "ops", None, &["admin"]).await);
    let mail = serve.api(&api::token(&db.url, "mail", None, ALL).await);
    // One slot for subject "vip": its items go through admission, the others do not.
    let limit = admin
        .send(
            admin
                .http
                .put(format!("{}/v1/admin/limits", admin.base))
                .json(
                    &json!({"kind": "capacity", "app": "mail", "usage_subject": "vip", "limit": 1}),
                ),
        )
        .await;
    assert_eq!(limit.status, 200, "{:?}", limit.body);
    let old = mail
        .submit("remote", "s", "old", json!({"input": {"n": 1}}))
        .await;
    assert_eq!(old.status, 202);
    let gone = mail
        .submit("remote", "gone", "x", json!({"input": {}}))
        .await;
    assert_eq!(gone.status, 202);
    let fence = mail
        .send(
            mail.http
                .delete(format!("{}/v1/scopes/gone/tasks?fence=true", mail.base)),
        )
        .await;
    assert_eq!(fence.body["deleted"], 1, "{:?}", fence.body);

    let vip = |key: &str| {
        json!({"task_type": "remote", "scope_id": "s", "effect_key": key, "input": {},
               "usage_subject": "vip"})
    };
    let items = vec![
        task("remote", "a", json!({"n": 1})),
        task("remote", "a", json!({"n": 1})),
        task("remote", "a", json!({"n": 2})),
        task("remote", "old", json!({"n": 1})),
        task("remote", "old", json!({"n": 2})),
        vip("v1"),
        vip("v2"),
        vip("v1"),
        json!({"task_type": "remote", "scope_id": "gone", "effect_key": "y", "input": {}}),
        task("remote", "b", json!({})),
    ];
    let answer = batch(&mail, items.clone()).await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    let got = answer.body["items"].as_array().unwrap().clone();
    let shape: Vec<(u64, Option<&str>)> = got
        .iter()
        .map(|i| (i["status"].as_u64().unwrap(), i["code"].as_str()))
        .collect();
    assert_eq!(
        shape,
        [
            (202, None),
            (202, None),
            (409, Some("idempotency_conflict")),
            (202, None),
            (409, Some("idempotency_conflict")),
            (202, None),
            (429, Some("capacity_exhausted")),
            (202, None),
            (410, Some("scope_deleted")),
            (202, None),
        ]
    );
    assert_eq!(got[1]["id"], got[0]["id"], "a repeat joins the first item");
    assert_eq!(got[3]["id"], old.body["id"], "an earlier task is joined");
    assert_eq!(
        got[7]["id"], got[5]["id"],
        "a limited repeat joins, not refused"
    );

    // The same batch again: every identity now exists, so each item is answered from
    // it, exactly as the same items submitted one by one are.
    let again = batch(&mail, items.clone()).await;
    let again = again.body["items"].as_array().unwrap();
    for (n, item) in items.iter().enumerate() {
        let mut body = item.clone();
        let (kind, scope, key) = (
            body["task_type"].as_str().unwrap().to_owned(),
            body["scope_id"].as_str().unwrap().to_owned(),
            body["effect_key"].as_str().unwrap().to_owned(),
        );
        body.as_object_mut()
            .unwrap()
            .retain(|k, _| !matches!(k.as_str(), "task_type" | "scope_id" | "effect_key"));
        let single = mail.submit(&kind, &scope, &key, body).await;
        let single_id = single.body.get("id").filter(|_| single.status < 300);
        assert_eq!(
            (
                again[n]["status"].as_u64().unwrap(),
                again[n].get("id"),
                again[n]["code"].as_str()
            ),
            (
                single.status as u64,
                single_id,
                single.body.get("code").and_then(Value::as_str)
            ),
            "item {n}"
        );
        assert_eq!(again[n]["id"], got[n]["id"], "item {n}");
    }

    // One task and one `task.queued` event per identity created.
    let c = db.client().await;
    let per_identity: Vec<(String, i64, i64)> = c
        .query(
            "SELECT t.effect_key, count(DISTINCT t.id), count(e.*)
             FROM tasklane.tasks t JOIN tasklane.task_events e ON e.task_id = t.id
             WHERE t.app = 'mail' GROUP BY 1 ORDER BY 1",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    let expected: Vec<(String, i64, i64)> = ["a", "b", "old", "v1"]
        .iter()
        .map(|k| (k.to_string(), 1, 1))
        .collect();
    assert_eq!(per_identity, expected);
}

#[tokio::test]
async fn the_batch_function_refuses_item_numbers_that_do_not_number_the_items() {
    let db = common::test_db().await;
    let c = db.client().await;
    // Two items; positions {1, 1} would leave item 2 unanswered.
    let call = |n: &'static str| {
        format!(
            "SELECT * FROM tasklane.submit_tasks('{n}'::int8[],
                 ARRAY[gen_random_uuid(), gen_random_uuid()], '{{a,a}}', '{{s,s}}', '{{k1,k2}}',
                 '{{NULL,NULL}}', '{{NULL,NULL}}', '{{remote,remote}}', ARRAY['\\x00'::bytea, '\\x01'],
                 ARRAY['{{}}'::jsonb, '{{}}'], '{{0,0}}', '{{1,1}}', '{{retry,retry}}',
                 '{{local_only,local_only}}', '{{30,30}}', '{{60,60}}', '{{NULL,NULL}}',
                 '{{NULL,NULL}}', '{{NULL,NULL}}')"
        )
    };
    for bad in ["{1,1}", "{1}", "{0,1}", "{2,3}"] {
        let error = c.query(&call(bad), &[]).await.expect_err(bad);
        assert_eq!(
            error.code(),
            Some(&tokio_postgres::error::SqlState::INVALID_PARAMETER_VALUE),
            "{bad}: {error:?}"
        );
    }
    assert_eq!(
        common::fixtures::count(&c, "SELECT count(*) FROM tasklane.tasks").await,
        0
    );
    let rows = c.query(&call("{2,1}"), &[]).await.unwrap();
    let mut n: Vec<i64> = rows.iter().map(|r| r.get("n")).collect();
    n.sort();
    assert_eq!(n, [1, 2]);
}
