//! The endpoint routes: validation with stable codes that changes nothing, app tokens
//! only, secrets shown only when made, 404s, the OpenAPI document.

use serde_json::json;

use super::{register, replica};
use crate::common;

#[tokio::test]
async fn bad_input_is_refused_naming_the_field_and_changes_nothing() {
    let db = common::test_db().await;
    let (_replica, api) = replica(&db, &[]).await;
    let put = |name: &str, body: serde_json::Value| {
        let api = api.clone();
        let url = format!("{}/v1/webhooks/{name}", api.base);
        async move { api.send(api.http.put(url).json(&body)).await }
    };
    let events = json!(["task.succeeded"]);
    let cases = [
        (
            "ok",
            json!({"url": "ftp://example.com/", "events": events}),
            "url",
        ),
        (
            "ok",
            json!({"url": "https://example.com/", "events": []}),
            "events",
        ),
        (
            "ok",
            json!({"url": "https://example.com/", "events": ["task.running"]}),
            "events",
        ),
        (
            "ok",
            json!({"url": "https://example.com/", "events": events, "secret": "whsec_c2hvcnQ="}),
            "secret",
        ),
        (
            "ok",
            json!({"url": "https://example.com/", "events": events, "secret": "plain"}),
            "secret",
        ),
        (
            "bad%20name",
            json!({"url": "https://example.com/", "events": events}),
            "name",
        ),
    ];
    for (name, body, field) in cases {
        let answer = put(name, body.clone()).await;
        assert_eq!(
            (answer.status, answer.code()),
            (422, "validation_failed"),
            "{body}"
        );
        assert_eq!(answer.body["field"], field, "{body}");
        assert!(
            !answer.body.to_string().contains("c2hvcnQ"),
            "no secret echoed"
        );
    }
    let unknown = put(
        "ok",
        json!({"url": "https://example.com/", "events": events, "colour": 1}),
    )
    .await;
    assert_eq!((unknown.status, unknown.code()), (422, "unknown_field"));
    let listed = api.get("/v1/webhooks").await;
    assert_eq!(listed.body["items"], json!([]), "nothing was created");

    let missing = api
        .send(api.http.delete(format!("{}/v1/webhooks/none", api.base)))
        .await;
    assert_eq!((missing.status, missing.code()), (404, "not_found"));
    let rotate = api
        .post("/v1/webhooks/none/rotate-secret", &json!({}))
        .await;
    assert_eq!(rotate.status, 404);
    register(&api, "main", "https://example.com/hook", None).await;
    let bad_id = api
        .post("/v1/webhooks/main/deliveries/nope/redeliver", &json!({}))
        .await;
    assert_eq!((bad_id.status, bad_id.code()), (400, "invalid_id"));
    let no_such = api
        .post(
            &format!(
                "/v1/webhooks/main/deliveries/{}/redeliver",
                uuid::Uuid::now_v7()
            ),
            &json!({}),
        )
        .await;
    assert_eq!(no_such.status, 404);
    let limit = api.get("/v1/webhooks/main/deliveries?limit=0").await;
    assert_eq!((limit.status, limit.code()), (422, "validation_failed"));
    let deleted = api
        .send(api.http.delete(format!("{}/v1/webhooks/main", api.base)))
        .await;
    assert_eq!(deleted.status, 204);
    assert_eq!(api.get("/v1/webhooks").await.body["items"], json!([]));
}

#[tokio::test]
async fn only_app_tokens_with_the_permission_manage_endpoints_of_their_app() {
    let db = common::test_db().await;
    let (_replica, api) = replica(&db, &[]).await;
    register(&api, "main", "https://example.com/hook", None).await;
    let admin = common::api::token(&db.url, "ops", None, &["admin"]).await;
    let overview = api.with_token(&admin).get("/v1/admin/overview").await;
    assert_eq!(
        overview.body["webhooks"]["endpoints"], 1,
        "{:?}",
        overview.body
    );
    assert_eq!(overview.body["webhooks"]["pending"], 0);
    let without = common::api::token(&db.url, "mail", None, &["submit", "read"]).await;
    let answer = api.with_token(&without).get("/v1/webhooks").await;
    assert_eq!((answer.status, answer.code()), (403, "forbidden"));
    let scoped = common::api::token(&db.url, "mail", Some("box-1"), &["webhooks"]).await;
    let answer = api.with_token(&scoped).get("/v1/webhooks").await;
    assert_eq!((answer.status, answer.code()), (403, "forbidden"));
    let other = common::api::token(&db.url, "other", None, &["webhooks"]).await;
    let other = api.with_token(&other);
    assert_eq!(other.get("/v1/webhooks").await.body["items"], json!([]));
    let answer = other.get("/v1/webhooks/main/deliveries").await;
    assert_eq!(
        answer.status, 404,
        "another app's endpoint does not exist for it"
    );
}

#[tokio::test]
async fn the_routes_are_in_the_openapi_document() {
    let doc: serde_json::Value = serde_json::from_str(&tasklane::http::openapi_json()).unwrap();
    for path in [
        "/v1/webhooks",
        "/v1/webhooks/{name}",
        "/v1/webhooks/{name}/rotate-secret",
        "/v1/webhooks/{name}/deliveries",
        "/v1/webhooks/{name}/deliveries/{id}/redeliver",
    ] {
        assert!(doc["paths"][path].is_object(), "{path}");
    }
    assert!(doc["paths"]["/v1/webhooks/{name}"]["put"].is_object());
    assert!(doc["paths"]["/v1/webhooks/{name}"]["delete"].is_object());
}
