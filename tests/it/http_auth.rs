//! Tokens and permissions over HTTP, against one real `tasklane serve` process: 401 for
//! a missing, unknown or revoked token, 403 for a missing permission (before anything
//! else about the request is looked at), and the `token` CLI.

use crate::common;

use common::api::{self, Answer, Api, ALL};
use common::in_process::InProcess;
use common::serve::Options;
use reqwest::Method;
use serde_json::json;

#[tokio::test]
async fn tokens_authenticate_authorize_and_revoke_at_once() {
    let db = common::test_db().await;
    let serve = InProcess::start(&db.url, Options::default()).await;
    let anonymous = serve.api("");
    assert_eq!(
        (
            anonymous.get("/v1/tasks").await.status,
            anonymous.get("/v1/tasks").await.code()
        ),
        (401, "unauthorized")
    );
    assert_eq!(
        serve
            .api("tl_not-a-real-token")
            .get("/v1/tasks")
            .await
            .status,
        401
    );
    assert_eq!(serve.api("Basic abc").get("/v1/tasks").await.status, 401);

    let reader = serve.api(&api::token(&db.url, "mail", None, &["read"]).await);
    assert_eq!(reader.get("/v1/tasks").await.status, 200);
    let refused = reader.submit("remote", "s", "k", json!({})).await;
    assert_eq!((refused.status, refused.code()), (403, "forbidden"));
    let claim = json!({"worker_id": "w", "task_types": ["remote"], "route": "local", "max": 1});
    assert_eq!(reader.post("/v1/worker/claim", &claim).await.status, 403);

    // The CLI: the token alone on the last stdout line; revocation is immediate.
    let output = std::process::Command::new(common::serve::binary())
        .args([
            "token",
            "create",
            "--app",
            "mail",
            "--perm",
            "submit,read",
            "--name",
            "ci",
        ])
        .env("DATABASE_URL", &db.url)
        .env_remove("TASKLANE_DATABASE_URL")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    let secret = stdout.lines().last().unwrap().to_owned();
    assert!(secret.starts_with("tl_") && secret.len() >= 46, "{secret}");
    let token_id = stdout
        .lines()
        .next()
        .unwrap()
        .rsplit(' ')
        .next()
        .unwrap()
        .to_owned();
    let cli = serve.api(&secret);
    assert_eq!(cli.submit("remote", "s", "k", json!({})).await.status, 202);
    let revoke = std::process::Command::new(common::serve::binary())
        .args(["token", "revoke", &token_id])
        .env("DATABASE_URL", &db.url)
        .env_remove("TASKLANE_DATABASE_URL")
        .output()
        .unwrap();
    assert!(revoke.status.success());
    assert_eq!(cli.get("/v1/tasks").await.status, 401);
    let bad_perm = std::process::Command::new(common::serve::binary())
        .args(["token", "create", "--app", "mail", "--perm", "root"])
        .env("DATABASE_URL", &db.url)
        .output()
        .unwrap();
    assert!(!bad_perm.status.success());
}

/// Sends `body` as JSON, raw, with `method` to `path`.
async fn raw(api: &Api, method: Method, path: &str, body: &str) -> Answer {
    let request = api
        .http
        .request(method, format!("{}{path}", api.base))
        .header("content-type", "application/json")
        .body(body.to_owned());
    api.send(request).await
}

/// A token without a route's permission gets 403 before its path, query or body is
/// parsed, so it cannot probe what the route would accept; a token with the permission
/// gets the same requests refused for what is wrong with them.
#[tokio::test]
async fn permission_is_checked_before_the_request_is_parsed() {
    let db = common::test_db().await;
    let serve = InProcess::start(&db.url, Options::default()).await;
    let reader = serve.api(&api::token(&db.url, "mail", None, &["read"]).await);
    let app = serve.api(&api::token(&db.url, "mail", None, ALL).await);
    let admin = serve.api(&api::token(&db.url, "ops", None, &["admin"]).await);
    let submit = r#"{"task_type": "noop", "scope_id": "s", "effect_key": "k", "input": {}}"#;
    let beat = r#"{"lease_token": "00000000-0000-0000-0000-000000000000"}"#;
    // (without the permission, with it, method, path, body, status with it)
    let cases = [
        (&reader, &app, Method::POST, "/v1/tasks", "{", 400),
        (
            &reader,
            &app,
            Method::POST,
            "/v1/tasks",
            r#"{"colour": 1}"#,
            422,
        ),
        (
            &reader,
            &app,
            Method::POST,
            "/v1/tasks",
            r#"{"task_type": 7}"#,
            422,
        ),
        (
            &reader,
            &app,
            Method::POST,
            "/v1/tasks?wait=soon",
            submit,
            422,
        ),
        (&app, &admin, Method::PUT, "/v1/admin/limits", "{", 400),
        (
            &app,
            &admin,
            Method::PUT,
            "/v1/admin/limits",
            r#"{"kind": "capacity"}"#,
            422,
        ),
        (
            &app,
            &admin,
            Method::PUT,
            "/v1/admin/resources/gpu",
            "[]",
            422,
        ),
        (
            &reader,
            &app,
            Method::POST,
            "/v1/tasks?colour=red",
            submit,
            422,
        ),
        (
            &admin,
            &app,
            Method::GET,
            "/v1/tasks/01a22f72-7382-7081-b5de-a10d9986c3a4?wait=10",
            "",
            422,
        ),
        (&reader, &app, Method::POST, "/v1/worker/claim", "{", 400),
        (
            &reader,
            &app,
            Method::POST,
            "/v1/worker/tasks/nope/heartbeat",
            beat,
            400,
        ),
    ];
    for (without, with, method, path, body, status) in cases {
        let refused = raw(without, method.clone(), path, body).await;
        assert_eq!(
            (refused.status, refused.code()),
            (403, "forbidden"),
            "{method} {path} {body}: {:?}",
            refused.body
        );
        let answered = raw(with, method.clone(), path, body).await;
        assert_eq!(
            answered.status, status,
            "{method} {path} {body} with the permission: {:?}",
            answered.body
        );
    }
}
