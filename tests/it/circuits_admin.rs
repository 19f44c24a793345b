//! The circuit breakers for operators: `GET /v1/admin/circuits`, `POST
//! /v1/admin/circuits/{route_name}/reset`, the overview's `circuits`, and `tasklane
//! admin circuits [reset NAME]` against a real `tasklane serve`.

use serde_json::{json, Value};
use tasklane::service::circuits::{CircuitSpec, Permit};

use crate::common;
use common::api::{self, ALL};
use common::in_process::InProcess;
use common::serve::{binary, Options, Serve};

/// Opens the circuit of `route_name` (one failure with a threshold of one).
async fn open(url: &str, route_name: &str) {
    let service = common::service::tasklane(common::pool(url, 1), []);
    let spec = CircuitSpec {
        route_name,
        failures: 1,
        open_seconds: 3600,
        probe_seconds: 60,
    };
    service
        .circuit_record(&spec, Permit::Call { failures: 0 }, true)
        .await;
}

#[tokio::test]
async fn admin_routes_list_and_reset_circuits() {
    let db = common::test_db().await;
    let serve = InProcess::start(&db.url, Options::default()).await;
    let admin = serve.api(&api::token(&db.url, "ops", None, &["admin"]).await);
    let mail = serve.api(&api::token(&db.url, "mail", None, ALL).await);

    assert_eq!(
        admin.get("/v1/admin/circuits").await.body,
        json!({"items": []})
    );
    open(&db.url, "local-vllm").await;
    let list = admin.get("/v1/admin/circuits").await;
    assert_eq!(list.status, 200);
    let item = &list.body["items"][0];
    assert_eq!(item["route_name"], "local-vllm");
    assert_eq!(item["state"], "open");
    assert_eq!(item["consecutive_failures"], 1);
    assert!(item["opened_at"].is_string() && item["retry_at"].is_string());
    let overview = admin.get("/v1/admin/overview").await;
    assert_eq!(overview.body["circuits"][0]["state"], "open");

    // Admin only, for listing and resetting alike.
    assert_eq!(mail.get("/v1/admin/circuits").await.status, 403);
    let refused = mail
        .post("/v1/admin/circuits/local-vllm/reset", &json!({}))
        .await;
    assert_eq!(refused.status, 403);
    assert_eq!(
        admin.get("/v1/admin/circuits").await.body["items"][0]["state"],
        "open"
    );

    let reset = admin
        .post("/v1/admin/circuits/local-vllm/reset", &Value::Null)
        .await;
    assert_eq!(reset.status, 200, "{:?}", reset.body);
    assert_eq!(reset.body["state"], "closed");
    assert_eq!(reset.body["consecutive_failures"], 0);
    assert_eq!(
        admin.get("/v1/admin/circuits").await.body,
        json!({"items": []})
    );
    // Resetting what has no circuit says so.
    let again = admin
        .post("/v1/admin/circuits/local-vllm/reset", &Value::Null)
        .await;
    assert_eq!((again.status, again.code()), (404, "not_found"));
    assert!(again.body["detail"]
        .as_str()
        .unwrap()
        .contains("local-vllm"));

    let openapi = admin.get("/openapi.json").await.body;
    assert!(openapi["paths"]["/v1/admin/circuits"]["get"].is_object());
    assert!(openapi["paths"]["/v1/admin/circuits/{route_name}/reset"]["post"].is_object());
}

async fn cli(base: &str, token: &str, args: &[&str]) -> std::process::Output {
    tokio::process::Command::new(binary())
        .args(args)
        .env("TASKLANE_URL", base)
        .env("TASKLANE_TOKEN", token)
        .output()
        .await
        .expect("run tasklane")
}

#[tokio::test]
async fn admin_circuits_command_lists_and_resets() {
    let db = common::test_db().await;
    let serve = Serve::start(&db.url, Options::default()).await;
    let admin = api::token(&db.url, "ops", None, &["admin"]).await;
    open(&db.url, "local-vllm").await;

    let table = cli(&serve.base, &admin, &["admin", "circuits"]).await;
    assert!(table.status.success());
    let table = String::from_utf8_lossy(&table.stdout).into_owned();
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].starts_with("ROUTE_NAME  STATE"), "{table}");
    assert!(lines[1].starts_with("local-vllm  open"), "{table}");
    let json: Value = serde_json::from_slice(
        &cli(&serve.base, &admin, &["admin", "circuits", "--json"])
            .await
            .stdout,
    )
    .unwrap();
    assert_eq!(json["items"][0]["state"], "open");
    let overview = cli(&serve.base, &admin, &["admin", "overview"]).await;
    assert!(String::from_utf8_lossy(&overview.stdout).contains("Circuits\nROUTE_NAME"));

    let reset = cli(
        &serve.base,
        &admin,
        &["admin", "circuits", "reset", "local-vllm"],
    )
    .await;
    assert_eq!(
        String::from_utf8_lossy(&reset.stdout).trim(),
        "local-vllm: circuit closed"
    );
    let unknown = cli(
        &serve.base,
        &admin,
        &["admin", "circuits", "reset", "local-vllm"],
    )
    .await;
    assert_eq!(unknown.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("not_found"));
    // `reset` needs a name.
    let missing = cli(&serve.base, &admin, &["admin", "circuits", "reset"]).await;
    assert_eq!(missing.status.code(), Some(2));
}
