//! Every `tasklane serve` process answers `/healthz`, `/readyz` and `/metrics` on its
//! listen address whatever its roles (Kubernetes probes and scrapes worker pods too);
//! the `/v1/` API and `/openapi.json` only with role `api`.

use crate::common;
use common::serve::{Options, Serve};

#[tokio::test]
async fn a_worker_only_replica_serves_operations_but_not_the_api() {
    let db = common::test_db().await;
    let options = Options {
        roles: Some("worker,maintenance"),
        ..Options::default()
    };
    // `start` returns once /readyz answered 200: a worker replica is ready.
    let serve = Serve::start(&db.url, options).await;
    let client = reqwest::Client::new();
    let get = |path: &str| client.get(format!("{}{path}", serve.base)).send();

    let health = get("/healthz").await.unwrap();
    assert_eq!(health.status(), 200);
    let ready = get("/readyz").await.unwrap();
    assert_eq!(ready.status(), 200);
    let metrics = get("/metrics").await.unwrap();
    assert_eq!(metrics.status(), 200);
    let text = metrics.text().await.unwrap();
    assert!(
        text.contains("tasklane_http_requests"),
        "the scrape shows the HTTP instruments: {text}"
    );

    for path in ["/v1/tasks", "/openapi.json"] {
        let response = get(path).await.unwrap();
        assert_eq!(response.status(), 404, "{path} without role api");
        let problem: serde_json::Value = response.json().await.unwrap();
        assert_eq!(problem["code"], "no_route", "{path}");
    }
}

#[tokio::test]
async fn an_api_replica_serves_both() {
    let db = common::test_db().await;
    let serve = Serve::start(
        &db.url,
        Options {
            roles: Some("api"),
            ..Options::default()
        },
    )
    .await;
    let client = reqwest::Client::new();
    for path in ["/healthz", "/readyz", "/metrics", "/openapi.json"] {
        let response = client
            .get(format!("{}{path}", serve.base))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{path}");
    }
    let unauthenticated = client
        .get(format!("{}/v1/tasks", serve.base))
        .send()
        .await
        .unwrap();
    assert_eq!(
        unauthenticated.status(),
        401,
        "the API is there and asks for a token"
    );
}
