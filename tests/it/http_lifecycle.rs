//! The lifecycle routes of one real `tasklane serve`: release, scope deletion with
//! fences, and the reconciliation listing, with their bounds, permissions and isolation.

use crate::common;

use common::api::{self, ALL};
use common::in_process::InProcess;
use common::serve::Options;
use serde_json::json;

#[tokio::test]
async fn release_delete_fence_and_reconcile_over_http() {
    let db = common::test_db().await;
    let serve = InProcess::start(&db.url, Options::default()).await;
    let api = serve.api(&api::token(&db.url, "mail", None, ALL).await);
    for (scope, key, source) in [
        ("s1", "k1", "item:42"),
        ("s1", "k2", "item:43"),
        ("s2", "k3", "item_4%"),
    ] {
        let answer = api
            .submit("remote", scope, key, json!({"source_id": source}))
            .await;
        assert_eq!(answer.status, 202, "{:?}", answer.body);
    }

    // Release: true with a time for an existing identity, repeats keep the first time.
    let first = api
        .post(
            "/v1/releases",
            &json!({"scope_id": "s1", "effect_key": "k1"}),
        )
        .await;
    assert_eq!(
        (first.status, first.body["released"].as_bool()),
        (200, Some(true))
    );
    let again = api
        .post(
            "/v1/releases",
            &json!({"scope_id": "s1", "effect_key": "k1"}),
        )
        .await;
    assert_eq!(again.body["released_at"], first.body["released_at"]);
    let absent = api
        .post(
            "/v1/releases",
            &json!({"scope_id": "s1", "effect_key": "nope"}),
        )
        .await;
    assert_eq!(
        (absent.status, absent.body["released"].as_bool()),
        (200, Some(false))
    );
    assert!(absent.body["released_at"].is_null());
    let other_subject = api
        .post(
            "/v1/releases",
            &json!({"scope_id": "s1", "effect_key": "k2", "usage_subject": "u"}),
        )
        .await;
    assert_eq!(
        other_subject.body["released"], false,
        "the subject is part of the identity"
    );

    // Reconciliation: unreleased pairs only, paged with an opaque cursor.
    let page = api.get("/v1/unreleased-sources?limit=1").await;
    assert_eq!(page.status, 200, "{:?}", page.body);
    assert_eq!(
        page.body["items"],
        json!([{"scope_id": "s1", "source_id": "item:43"}])
    );
    let cursor = page.body["next_cursor"].as_str().unwrap().to_owned();
    let next = api
        .get(&format!("/v1/unreleased-sources?limit=1&after={cursor}"))
        .await;
    assert_eq!(
        next.body["items"],
        json!([{"scope_id": "s2", "source_id": "item_4%"}])
    );
    let last = api
        .get(&format!(
            "/v1/unreleased-sources?after={}",
            next.body["next_cursor"].as_str().unwrap()
        ))
        .await;
    assert_eq!(
        (
            last.body["items"].as_array().unwrap().len(),
            last.body["next_cursor"].is_null()
        ),
        (0, true)
    );
    assert_eq!(
        api.get("/v1/unreleased-sources?after=garbage").await.code(),
        "validation_failed"
    );
    assert_eq!(
        api.get("/v1/unreleased-sources?limit=101").await.status,
        422
    );
    assert_eq!(
        api.get("/v1/unreleased-sources?limit=100").await.status,
        200
    );

    // Deletion by exact source: `item:4` and patterns match nothing.
    let http = &api.http;
    let delete = |path: String| api.send(http.delete(format!("{}{path}", api.base)));
    assert_eq!(
        delete("/v1/scopes/s1/tasks?source_id=item:4".into())
            .await
            .body["deleted"],
        0
    );
    assert_eq!(
        delete("/v1/scopes/s2/tasks?source_id=item_4_".into())
            .await
            .body["deleted"],
        0
    );
    assert_eq!(
        delete("/v1/scopes/s1/tasks?source_id=item:42".into())
            .await
            .body["deleted"],
        1
    );

    // Whole scope with a fence: later submits get 410 until the fence is lifted.
    assert_eq!(
        delete("/v1/scopes/s1/tasks?fence=true".into()).await.body["deleted"],
        1
    );
    let fenced = api.submit("remote", "s1", "k9", json!({})).await;
    assert_eq!((fenced.status, fenced.code()), (410, "scope_deleted"));
    assert_eq!(delete("/v1/scopes/s1/fence".into()).await.status, 204);
    assert_eq!(
        api.submit("remote", "s1", "k9", json!({})).await.status,
        202
    );
    // The other scope was untouched.
    assert_eq!(
        api.get("/v1/tasks?scope_id=s2").await.body["items"]
            .as_array()
            .unwrap()
            .len(),
        1
    );

    // Bounds at their edges.
    let long = "x".repeat(201);
    let ok = "x".repeat(200);
    assert_eq!(
        api.post("/v1/releases", &json!({"scope_id": ok, "effect_key": "k"}))
            .await
            .status,
        200
    );
    let refused = api
        .post(
            "/v1/releases",
            &json!({"scope_id": long, "effect_key": "k"}),
        )
        .await;
    assert_eq!((refused.status, refused.code()), (422, "validation_failed"));
    let unknown = api
        .post(
            "/v1/releases",
            &json!({"scope_id": "s", "effect_key": "k", "colour": 1}),
        )
        .await;
    assert_eq!((unknown.status, unknown.code()), (422, "unknown_field"));
    assert_eq!(delete(format!("/v1/scopes/{long}/tasks")).await.status, 422);
    assert_eq!(delete(format!("/v1/scopes/{ok}/tasks")).await.status, 200);
}

#[tokio::test]
async fn lifecycle_routes_respect_permissions_apps_and_scopes() {
    let db = common::test_db().await;
    let serve = InProcess::start(&db.url, Options::default()).await;
    let mail = serve.api(&api::token(&db.url, "mail", None, ALL).await);
    assert_eq!(
        mail.submit("remote", "s1", "k1", json!({"source_id": "a"}))
            .await
            .status,
        202
    );

    // Another app sees nothing and deletes nothing of mail's.
    let other = serve.api(&api::token(&db.url, "inventory", None, ALL).await);
    assert_eq!(
        other
            .post(
                "/v1/releases",
                &json!({"scope_id": "s1", "effect_key": "k1"})
            )
            .await
            .body["released"],
        false
    );
    let deleted = other
        .send(
            other
                .http
                .delete(format!("{}/v1/scopes/s1/tasks", other.base)),
        )
        .await;
    assert_eq!(deleted.body["deleted"], 0);
    assert_eq!(
        other.get("/v1/unreleased-sources").await.body["items"],
        json!([])
    );
    assert_eq!(
        mail.get("/v1/unreleased-sources").await.body["items"]
            .as_array()
            .unwrap()
            .len(),
        1
    );

    // Permissions: read-only cannot release or delete.
    let reader = serve.api(&api::token(&db.url, "mail", None, &["read"]).await);
    assert_eq!(
        reader
            .post(
                "/v1/releases",
                &json!({"scope_id": "s1", "effect_key": "k1"})
            )
            .await
            .status,
        403
    );
    let refused = reader
        .send(
            reader
                .http
                .delete(format!("{}/v1/scopes/s1/tasks", reader.base)),
        )
        .await;
    assert_eq!(refused.status, 403);

    // A scope token acts on its own scope only, and not on the app-wide listing.
    let scoped = serve.api(&api::token(&db.url, "mail", Some("s2"), ALL).await);
    assert_eq!(
        scoped
            .post(
                "/v1/releases",
                &json!({"scope_id": "s1", "effect_key": "k1"})
            )
            .await
            .status,
        403
    );
    assert_eq!(scoped.get("/v1/unreleased-sources").await.status, 403);
    let own = scoped
        .send(
            scoped
                .http
                .delete(format!("{}/v1/scopes/s2/tasks", scoped.base)),
        )
        .await;
    assert_eq!(own.status, 200);
    assert_eq!(
        mail.get("/v1/tasks?scope_id=s1").await.body["items"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}
