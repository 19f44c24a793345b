//! The HTTP API of one real `tasklane serve` process: every application route, every
//! error code and bound at its edge, isolation between apps and scopes, redaction, and
//! the operations routes (tokens and permissions: `http_auth.rs`).

use crate::common;

use common::api::{self, ALL};
use common::in_process::InProcess;
use common::serve::Options;
use serde_json::{json, Value};

const NO_LEAKS: &[&str] = &[
    "lease_token",
    "effect_key",
    "request_digest",
    "digest",
    "worker_id",
    "snapshot",
    "input",
    "app",
];

fn assert_no_leaks(view: &Value) {
    for key in NO_LEAKS {
        assert!(view.get(key).is_none(), "{key} leaked in {view}");
    }
}

#[tokio::test]
async fn submit_join_conflict_get_list_cancel_replay_retry() {
    let db = common::test_db().await;
    let serve = InProcess::start(&db.url, Options::default()).await;
    let api = serve.api(&api::token(&db.url, "mail", None, ALL).await);

    let created = api
        .submit(
            "remote",
            "s1",
            "k1",
            json!({"input": {"n": 1}, "usage_subject": "u-9"}),
        )
        .await;
    assert_eq!(created.status, 202, "{:?}", created.body);
    let id = created.body["id"].as_str().unwrap().to_owned();
    assert_eq!(
        created.headers["location"],
        format!("/v1/tasks/{id}").as_str()
    );
    assert_eq!(created.body["state"], "queued");
    assert_no_leaks(&created.body);

    let joined = api
        .submit(
            "remote",
            "s1",
            "k1",
            json!({"input": {"n": 1}, "usage_subject": "u-9"}),
        )
        .await;
    assert_eq!(
        (joined.status, joined.body["id"].as_str()),
        (202, Some(id.as_str()))
    );
    let conflict = api
        .submit(
            "remote",
            "s1",
            "k1",
            json!({"input": {"n": 2}, "usage_subject": "u-9"}),
        )
        .await;
    assert_eq!(
        (conflict.status, conflict.code()),
        (409, "idempotency_conflict")
    );
    assert_eq!(conflict.headers["content-type"], "application/problem+json");

    let got = api.get(&format!("/v1/tasks/{id}")).await;
    assert_eq!(got.status, 200);
    assert_eq!(got.body["usage_subject"], "u-9");
    assert_eq!(
        got.body["links"]["events"],
        format!("/v1/tasks/{id}/events").as_str()
    );
    assert_no_leaks(&got.body);

    let listed = api
        .get("/v1/tasks?scope_id=s1&state=queued&task_type=remote")
        .await;
    assert_eq!(listed.status, 200);
    assert_eq!(listed.body["items"].as_array().unwrap().len(), 1);

    let cancelled = api
        .post(&format!("/v1/tasks/{id}/cancel"), &json!({}))
        .await;
    assert_eq!(
        (cancelled.status, cancelled.body["state"].as_str()),
        (200, Some("cancelled"))
    );
    let again = api
        .post(&format!("/v1/tasks/{id}/cancel"), &json!({}))
        .await;
    assert_eq!(
        (again.status, again.body["state"].as_str()),
        (200, Some("cancelled"))
    );

    // Terminal: the same request replays with 200 and no Location.
    let replay = api
        .submit(
            "remote",
            "s1",
            "k1",
            json!({"input": {"n": 1}, "usage_subject": "u-9"}),
        )
        .await;
    assert_eq!(
        (replay.status, replay.body["state"].as_str()),
        (200, Some("cancelled"))
    );
    assert!(replay.headers.get("location").is_none());

    let retried = api.post(&format!("/v1/tasks/{id}/retry"), &json!({})).await;
    assert_eq!(
        (retried.status, retried.body["state"].as_str()),
        (200, Some("queued"))
    );
    assert_eq!(retried.body["attempt"], 0);
    let not_retryable = api.post(&format!("/v1/tasks/{id}/retry"), &json!({})).await;
    assert_eq!(
        (not_retryable.status, not_retryable.code()),
        (409, "not_retryable")
    );
    let events = api.get(&format!("/v1/tasks/{id}/events")).await;
    let types: Vec<_> = events.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["task.queued", "task.cancelled", "task.queued"]);

    // A noop finishes within ?wait=: 200 with its result.
    let waited = api
        .submit("noop", "s1", "k2", json!({"input": {"echo": true}}))
        .await;
    let id2 = waited.body["id"].as_str().unwrap();
    let done = api
        .post(
            "/v1/tasks?wait=10",
            &json!({"task_type": "noop", "scope_id": "s1", "effect_key": "k3", "input": {"x": 1}}),
        )
        .await;
    assert_eq!(
        (done.status, done.body["state"].as_str()),
        (200, Some("succeeded")),
        "{:?}",
        done.body
    );
    assert_eq!(done.body["result"], json!({"x": 1}));
    api.wait_for(id2, |t| t["state"] == "succeeded").await;
}

#[tokio::test]
async fn keyset_paging_newest_first() {
    let db = common::test_db().await;
    let serve = InProcess::start(&db.url, Options::default()).await;
    let api = serve.api(&api::token(&db.url, "mail", None, ALL).await);
    let mut ids = Vec::new();
    for n in 0..5 {
        let answer = api
            .submit("remote", "s1", &format!("k{n}"), json!({}))
            .await;
        ids.push(answer.body["id"].as_str().unwrap().to_owned());
    }
    ids.reverse();
    let mut seen = Vec::new();
    let mut path = "/v1/tasks?limit=2".to_owned();
    loop {
        let page = api.get(&path).await;
        assert_eq!(page.status, 200);
        seen.extend(
            page.body["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["id"].as_str().unwrap().to_owned()),
        );
        match page.body["next_cursor"].as_str() {
            Some(cursor) => path = format!("/v1/tasks?limit=2&cursor={cursor}"),
            None => break,
        }
    }
    assert_eq!(seen, ids);
    assert_eq!(api.get("/v1/tasks?limit=100").await.status, 200);
    let over = api.get("/v1/tasks?limit=101").await;
    assert_eq!(
        (over.status, over.code(), over.body["field"].as_str()),
        (422, "validation_failed", Some("limit"))
    );
    assert_eq!(api.get("/v1/tasks?limit=0").await.status, 422);
    assert_eq!(
        api.get("/v1/tasks?cursor=nope").await.code(),
        "validation_failed"
    );
    assert_eq!(
        api.get("/v1/tasks?state=sleeping").await.code(),
        "validation_failed"
    );
}

#[tokio::test]
async fn bad_input_is_refused_at_every_edge_and_changes_nothing() {
    let db = common::test_db().await;
    let env = vec![
        ("TASKLANE_MAX_INPUT_BYTES", "4096".to_owned()),
        ("TASKLANE_MAX_BODY_BYTES", "16384".to_owned()),
    ];
    let serve = InProcess::start(
        &db.url,
        Options {
            env,
            ..Default::default()
        },
    )
    .await;
    let api = serve.api(&api::token(&db.url, "mail", None, ALL).await);

    let malformed = api.post_raw("/v1/tasks", "{\"task_type\": ").await;
    assert_eq!(
        (malformed.status, malformed.code()),
        (400, "malformed_json")
    );
    let unknown = api
        .submit("remote", "s", "k", json!({"colour": "red"}))
        .await;
    assert_eq!(
        (
            unknown.status,
            unknown.code(),
            unknown.body["field"].as_str()
        ),
        (422, "unknown_field", Some("colour"))
    );
    let missing = api
        .post(
            "/v1/tasks",
            &json!({"task_type": "remote", "scope_id": "s", "input": {}}),
        )
        .await;
    assert_eq!(
        (
            missing.status,
            missing.code(),
            missing.body["field"].as_str()
        ),
        (422, "validation_failed", Some("effect_key"))
    );
    let mistyped = api
        .submit("remote", "s", "k", json!({"priority": "high"}))
        .await;
    assert_eq!(
        (mistyped.status, mistyped.code()),
        (422, "validation_failed")
    );
    let unknown_type = api.submit("teleport", "s", "k", json!({})).await;
    assert_eq!(
        (unknown_type.status, unknown_type.code()),
        (422, "unknown_task_type")
    );

    let key200 = "k".repeat(200);
    let key201 = "k".repeat(201);
    assert_eq!(
        api.submit("remote", &key200, "edge-1", json!({}))
            .await
            .status,
        202
    );
    assert_eq!(
        api.submit("remote", "s", &key200, json!({})).await.status,
        202
    );
    for (field, answer) in [
        (
            "scope_id",
            api.submit("remote", &key201, "k", json!({})).await,
        ),
        (
            "effect_key",
            api.submit("remote", "s", &key201, json!({})).await,
        ),
        (
            "source_id",
            api.submit("remote", "s", "k", json!({"source_id": key201}))
                .await,
        ),
        (
            "usage_subject",
            api.submit("remote", "s", "k", json!({"usage_subject": ""}))
                .await,
        ),
        (
            "priority",
            api.submit("remote", "s", "k", json!({"priority": 101}))
                .await,
        ),
        (
            "priority",
            api.submit("remote", "s", "k", json!({"priority": -101}))
                .await,
        ),
        (
            "max_attempts",
            api.submit("remote", "s", "k", json!({"max_attempts": 26}))
                .await,
        ),
        (
            "max_attempts",
            api.submit("remote", "s", "k", json!({"max_attempts": 0}))
                .await,
        ),
        (
            "deadline_seconds",
            api.submit("remote", "s", "k", json!({"deadline_seconds": 604_801}))
                .await,
        ),
        (
            "input",
            api.submit("remote", "s", "k", json!({"input": "x".repeat(4095)}))
                .await,
        ),
    ] {
        assert_eq!(
            (answer.status, answer.code(), answer.body["field"].as_str()),
            (422, "validation_failed", Some(field))
        );
    }
    let edges = json!({"priority": 100, "max_attempts": 25, "deadline_seconds": 604_800, "input": "x".repeat(4094)});
    assert_eq!(api.submit("remote", "s", "edges", edges).await.status, 202);
    let wait = api
        .post(
            "/v1/tasks?wait=61",
            &json!({"task_type": "remote", "scope_id": "s", "effect_key": "w", "input": {}}),
        )
        .await;
    assert_eq!(
        (wait.status, wait.body["field"].as_str()),
        (422, Some("wait"))
    );

    // Over the body limit: 413 on every route, with or without a handler reading it.
    let big = format!("{{\"input\": \"{}\"}}", "x".repeat(20_000));
    let too_large = api.post_raw("/v1/tasks", big.clone()).await;
    assert_eq!(
        (too_large.status, too_large.code()),
        (413, "payload_too_large")
    );
    // The detail states the limit in bytes, as the 422 of an oversized input does: the
    // route's own (16 times it for the batch), whichever layer refused.
    let stated = |answer: &common::api::Answer| answer.body["detail"].as_str().map(str::to_owned);
    let limit = Some("the request body is larger than the limit of 16384 bytes".to_owned());
    assert_eq!(stated(&too_large), limit);
    let id = uuid::Uuid::now_v7();
    let cancel = api
        .post_raw(&format!("/v1/tasks/{id}/cancel"), big.clone())
        .await;
    assert_eq!((cancel.status, stated(&cancel)), (413, limit.clone()));
    assert_eq!(api.post_raw("/v1/worker/claim", big).await.status, 413);
    let huge = format!("{{\"tasks\": [\"{}\"]}}", "x".repeat(16 * 16384));
    let batch = api.post_raw("/v1/tasks/batch", huge).await;
    assert_eq!(
        (batch.status, stated(&batch)),
        (
            413,
            Some("the request body is larger than the limit of 262144 bytes".to_owned())
        )
    );

    let bad_id = api.get("/v1/tasks/not-a-uuid").await;
    assert_eq!((bad_id.status, bad_id.code()), (400, "invalid_id"));
    assert_eq!(
        api.get(&format!("/v1/tasks/{id}")).await.code(),
        "not_found"
    );
    assert_eq!(api.get(&format!("/v1/tasks/{id}/events")).await.status, 404);
    assert_eq!(api.get("/v1/nothing-here").await.status, 404);

    // Nothing refused was written: only the three accepted tasks exist.
    let listed = api.get("/v1/tasks").await;
    assert_eq!(listed.body["items"].as_array().unwrap().len(), 3);
}

#[tokio::test]
async fn apps_and_scopes_are_isolated_and_scope_tokens_redacted() {
    let db = common::test_db().await;
    let serve = InProcess::start(&db.url, Options::default()).await;
    let mail = serve.api(&api::token(&db.url, "mail", None, ALL).await);
    let inventory = serve.api(&api::token(&db.url, "inventory", None, ALL).await);
    let s1 = serve.api(&api::token(&db.url, "mail", Some("s1"), ALL).await);
    let s2 = serve.api(&api::token(&db.url, "mail", Some("s2"), ALL).await);

    let task = mail
        .submit("remote", "s1", "k1", json!({"usage_subject": "user-9"}))
        .await;
    let id = task.body["id"].as_str().unwrap().to_owned();
    // Fail it through the worker protocol so it has an error message.
    let claim = json!({"worker_id": "w1", "task_types": ["remote"], "route": "local", "max": 10});
    assert_eq!(
        inventory.post("/v1/worker/claim", &claim).await.body["tasks"],
        json!([])
    );
    let claimed = mail.post("/v1/worker/claim", &claim).await;
    let lease = claimed.body["tasks"][0]["lease_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let fail = json!({"lease_token": lease, "code": "boom", "message": "secret failure text", "retryable": false});
    for other in [&inventory, &s2] {
        let refused = other
            .post(&format!("/v1/worker/tasks/{id}/fail"), &fail)
            .await;
        assert_eq!((refused.status, refused.code()), (404, "not_found"));
    }
    assert_eq!(
        mail.post(&format!("/v1/worker/tasks/{id}/fail"), &fail)
            .await
            .status,
        200
    );

    for other in [&inventory, &s2] {
        assert_eq!(other.get(&format!("/v1/tasks/{id}")).await.status, 404);
        assert_eq!(
            other.get(&format!("/v1/tasks/{id}/events")).await.status,
            404
        );
        assert_eq!(
            other
                .post(&format!("/v1/tasks/{id}/cancel"), &json!({}))
                .await
                .status,
            404
        );
        assert_eq!(
            other
                .post(&format!("/v1/tasks/{id}/retry"), &json!({}))
                .await
                .status,
            404
        );
        assert_eq!(other.get("/v1/tasks").await.body["items"], json!([]));
    }
    assert_eq!(
        s2.get("/v1/tasks?scope_id=s1").await.body["items"],
        json!([])
    );
    // A scope token submits only into its own scope.
    assert_eq!(s2.submit("remote", "s1", "k9", json!({})).await.status, 403);

    let full = mail.get(&format!("/v1/tasks/{id}")).await.body;
    assert_eq!(full["error"]["code"], "permanent_error");
    assert!(full["error"]["message"]
        .as_str()
        .unwrap()
        .contains("secret failure text"));
    assert_eq!(full["usage_subject"], "user-9");
    assert!(full.get("provenance").is_some());
    let redacted = s1.get(&format!("/v1/tasks/{id}")).await.body;
    assert_eq!(redacted["error"]["code"], "permanent_error");
    for hidden in ["usage_subject", "provenance"] {
        assert!(
            redacted.get(hidden).is_none(),
            "{hidden} shown to a scope token: {redacted}"
        );
    }
    assert!(redacted["error"].get("message").is_none());
    let listed = s1.get("/v1/tasks").await.body;
    assert!(listed["items"][0].get("usage_subject").is_none());
    assert!(!listed.to_string().contains("secret failure text"));
}

#[tokio::test]
async fn operations_routes_and_openapi() {
    let db = common::test_db().await;
    let serve = InProcess::start(&db.url, Options::default()).await;
    let api = serve.api("");
    assert_eq!(api.get("/healthz").await.status, 200);
    let wrong_method = api
        .send(api.http.delete(format!("{}/v1/tasks", serve.base)))
        .await;
    assert_eq!(
        (wrong_method.status, wrong_method.code()),
        (405, "method_not_allowed")
    );
    assert!(wrong_method.headers.get("allow").is_some());
    assert_eq!(api.get("/readyz").await.body["status"], "ready");
    let metrics = api
        .execute(api.http.get(format!("{}/metrics", serve.base)))
        .await
        .text()
        .await
        .unwrap();
    assert!(metrics.contains("tasklane_http_requests"), "{metrics}");
    let doc = api.get("/openapi.json").await.body;
    assert_eq!(doc["openapi"], "3.1.0");
    for path in [
        "/v1/tasks",
        "/v1/tasks/{id}",
        "/v1/tasks/{id}/events",
        "/v1/tasks/{id}/cancel",
        "/v1/tasks/{id}/retry",
        "/v1/worker/claim",
        "/v1/worker/tasks/{id}/heartbeat",
        "/v1/worker/tasks/{id}/complete",
        "/v1/worker/tasks/{id}/fail",
        "/v1/worker/tasks/{id}/fallback",
        "/v1/worker/tasks/{id}/cancelled",
        "/healthz",
        "/readyz",
        "/metrics",
    ] {
        assert!(
            doc["paths"].get(path).is_some(),
            "{path} missing from the OpenAPI document"
        );
    }
    assert!(doc["components"]["schemas"].get("SubmitBody").is_some());
    // The server takes any JSON value as input (and hands back any as result, snapshot
    // or event data): the document must not narrow them to objects.
    for (schema, field) in [
        ("SubmitBody", "input"),
        ("TaskView", "result"),
        ("EventView", "data"),
        ("ClaimedView", "input"),
        ("ClaimedView", "snapshot"),
        ("HeartbeatBody", "snapshot"),
        ("WorkerEvent", "data"),
        ("CompleteBody", "result"),
    ] {
        let property = &doc["components"]["schemas"][schema]["properties"][field];
        assert!(property.is_object(), "{schema}.{field} missing");
        for narrowing in ["type", "$ref", "oneOf", "anyOf", "allOf"] {
            assert!(
                property.get(narrowing).is_none(),
                "{schema}.{field} is not any JSON value: {property}"
            );
        }
    }
}

/// A query parameter the route does not declare is refused by name, as an unknown body
/// field is, whether the route has query parameters of its own or none; the operations
/// routes stay lenient for probes and scrapers that add their own.
#[tokio::test]
async fn unknown_query_parameters_are_refused_by_name() {
    let db = common::test_db().await;
    let serve = InProcess::start(&db.url, Options::default()).await;
    let api = serve.api(&api::token(&db.url, "mail", None, ALL).await);
    let created = api.submit("remote", "s", "k", json!({})).await;
    assert_eq!(created.status, 202, "{:?}", created.body);
    let id = created.body["id"].as_str().unwrap().to_owned();

    // (path, the parameter refused): routes without and with a query struct.
    let cases = [
        (format!("/v1/tasks/{id}?wait=10"), "wait"),
        (format!("/v1/tasks/{id}/events?after=0&since=1"), "since"),
        ("/v1/tasks?scope=s".to_owned(), "scope"),
        (
            "/v1/unreleased-sources?limit=5&cursor=x".to_owned(),
            "cursor",
        ),
    ];
    for (path, parameter) in cases {
        let refused = api.get(&path).await;
        assert_eq!(
            (
                refused.status,
                refused.code(),
                refused.body["field"].as_str()
            ),
            (422, "unknown_field", Some(parameter)),
            "GET {path}: {:?}",
            refused.body
        );
    }
    let submit = json!({"task_type": "remote", "scope_id": "s", "effect_key": "k2", "input": {}});
    let refused = api.post("/v1/tasks?wait=1&colour=red", &submit).await;
    assert_eq!(
        (refused.status, refused.body["field"].as_str()),
        (422, Some("colour")),
        "{:?}",
        refused.body
    );
    let listed = api.get("/v1/tasks?scope_id=s&limit=10").await;
    assert_eq!(listed.status, 200, "{:?}", listed.body);
    assert_eq!(
        listed.body["items"].as_array().map(Vec::len),
        Some(1),
        "the refused submit created nothing: {}",
        listed.body
    );
    assert_eq!(api.get(&format!("/v1/tasks/{id}")).await.status, 200);
    assert_eq!(api.get("/healthz?probe=1").await.status, 200);
    assert_eq!(api.get("/readyz?probe=1").await.status, 200);
}

/// `serve` reads and checks its task-types file before it migrates: a bad file is
/// refused, naming the file, and the database is left as it was.
#[tokio::test]
async fn a_bad_task_types_file_is_refused_before_the_database_is_written() {
    let db = common::empty_db().await;
    let path = std::env::temp_dir().join(format!(
        "tasklane-bad-types-{}-{}.toml",
        std::process::id(),
        uuid::Uuid::new_v4()
    ));
    std::fs::write(&path, "[[task_type]]\nname = \"x\"\nexecutor = \"http\"\n").unwrap();
    let types = path.display().to_string();
    let env = [
        ("DATABASE_URL", db.url.as_str()),
        ("TASKLANE_TASK_TYPES", &types),
    ];
    let stderr = common::serve::refused_at_start(&[], &env).await;
    let _ = std::fs::remove_file(&path);
    assert!(
        stderr.contains(&types) && stderr.contains("url"),
        "the error names neither the file nor the field: {stderr}"
    );
    let client = db.client().await;
    let row = client
        .query_one(
            "SELECT (SELECT count(*) FROM pg_namespace WHERE nspname = 'tasklane'),
                    to_regclass('tasklane_schema_history') IS NULL",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(row.get::<_, i64>(0), 0, "the tasklane schema was created");
    assert!(row.get::<_, bool>(1), "the migration history was written");
}

#[tokio::test]
async fn a_fenced_scope_refuses_submit_and_retry_with_410() {
    let db = common::test_db().await;
    let serve = InProcess::start(&db.url, Options::default()).await;
    let api = serve.api(&api::token(&db.url, "mail", None, ALL).await);
    api.submit("remote", "s", "k1", json!({"source_id": "x"}))
        .await;
    let kept = api
        .submit("remote", "s", "k2", json!({"source_id": "y"}))
        .await
        .body["id"]
        .as_str()
        .unwrap()
        .to_owned();
    api.post(&format!("/v1/tasks/{kept}/cancel"), &json!({}))
        .await;
    let c = db.client().await;
    let deleted = tasklane::store::lifecycle::delete(&c, "mail", "s", Some("x"), true)
        .await
        .unwrap();
    assert_eq!(deleted, 1);
    let refused = api.submit("remote", "s", "k3", json!({})).await;
    assert_eq!((refused.status, refused.code()), (410, "scope_deleted"));
    let retry = api
        .post(&format!("/v1/tasks/{kept}/retry"), &json!({}))
        .await;
    assert_eq!((retry.status, retry.code()), (410, "scope_deleted"));
    assert_eq!(
        api.get(&format!("/v1/tasks/{kept}")).await.body["state"],
        "cancelled"
    );
}

#[tokio::test]
async fn values_postgresql_cannot_store_or_return_are_a_422_not_a_500() {
    let db = common::test_db().await;
    let serve = InProcess::start(&db.url, Options::default()).await;
    let api = serve.api(&api::token(&db.url, "mail", None, ALL).await);
    let nul_value = api
        .submit("remote", "s", "k1", json!({"input": {"a": ["x\u{0}"]}}))
        .await;
    assert_eq!(
        (nul_value.status, nul_value.body["field"].as_str()),
        (422, Some("input"))
    );
    let nul_key = api
        .submit("remote", "s", "k2", json!({"input": {"k\u{0}": 1}}))
        .await;
    assert_eq!(
        (nul_key.status, nul_key.body["field"].as_str()),
        (422, Some("input"))
    );
    let nul_scope = api.submit("remote", "s\u{0}", "k3", json!({})).await;
    assert_eq!(
        (nul_scope.status, nul_scope.body["field"].as_str()),
        (422, Some("scope_id"))
    );
    assert_eq!(api.get("/v1/tasks?scope_id=%00").await.status, 422);
    let id = api.submit("remote", "s", "k4", json!({})).await.body["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let claim = json!({"worker_id": "w", "task_types": ["remote"], "route": "local", "max": 1});
    let lease = api.post("/v1/worker/claim", &claim).await.body["tasks"][0]["lease_token"].clone();
    let result = json!({"lease_token": lease, "result": {"text": "a\u{0}"}});
    assert_eq!(
        api.post(&format!("/v1/worker/tasks/{id}/complete"), &result)
            .await
            .body["field"],
        "result"
    );
    let fail = json!({"lease_token": lease, "code": "x", "message": "m\u{0}", "retryable": false});
    assert_eq!(
        api.post(&format!("/v1/worker/tasks/{id}/fail"), &fail)
            .await
            .body["field"],
        "message"
    );
    assert_eq!(
        api.get(&format!("/v1/tasks/{id}")).await.body["state"],
        "running"
    );

    // Numbers jsonb would hand back out of f64 range are refused; the edges round-trip.
    let huge = api
        .submit(
            "remote",
            "s",
            "k5",
            json!({"input": [1.7976931348623157e308]}),
        )
        .await;
    assert_eq!(
        (huge.status, huge.body["field"].as_str()),
        (422, Some("input"))
    );
    api.submit(
        "remote",
        "s",
        "k6",
        json!({"input": [1e300, -1e300, 1e-320, u64::MAX, i64::MIN]}),
    )
    .await;
    let claimed = api.post("/v1/worker/claim", &claim).await;
    assert_eq!(claimed.status, 200, "{:?}", claimed.body);
    assert_eq!(claimed.body["tasks"][0]["input"][0], json!(1e300));
}

/// `--max-wait-seconds` bounds every long poll, for a proxy's idle timeout in front of
/// the API: at 1 s, a claim asking to wait 30 s for work that never comes and a submit
/// asking `?wait=60` for a task no in-process worker runs both answer with what there
/// is (no task; the task still queued), each after its bound and far before what it
/// asked. A bound above the API's 60 s is refused at start.
#[tokio::test]
async fn long_polls_are_held_at_most_the_replicas_max_wait() {
    let db = common::test_db().await;
    let options = Options {
        args: vec!["--max-wait-seconds=1".into()],
        ..Default::default()
    };
    let serve = InProcess::start(&db.url, options).await;
    let api = serve.api(&api::token(&db.url, "mail", None, ALL).await);
    let started = std::time::Instant::now();
    let claim = json!({"worker_id": "w", "task_types": ["remote"], "route": "local", "max": 1, "wait_seconds": 30});
    let claimed = api.post("/v1/worker/claim", &claim).await;
    assert_eq!(
        (claimed.status, &claimed.body["tasks"]),
        (200, &json!([])),
        "{:?}",
        claimed.body
    );
    let body = json!({"task_type": "remote", "scope_id": "s", "effect_key": "k", "input": {}});
    let submitted = api.post("/v1/tasks?wait=60", &body).await;
    assert_eq!(
        (submitted.status, submitted.body["state"].as_str()),
        (202, Some("queued")),
        "{:?}",
        submitted.body
    );
    let held = started.elapsed();
    assert!(
        held >= std::time::Duration::from_secs(2),
        "each long poll waited its bound: {held:?}"
    );
    assert!(
        held < std::time::Duration::from_secs(45),
        "neither waited what it asked (90 s in all): {held:?}"
    );
    assert!(common::in_process::serve_flags(&["--max-wait-seconds", "60"]).is_ok());
    assert!(
        common::in_process::serve_flags(&["--max-wait-seconds", "61"]).is_err(),
        "a bound above the API's 60 s is refused"
    );
}
