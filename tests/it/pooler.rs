//! tasklane behind a real PgBouncer in transaction mode (Debian's 1.18, the oldest
//! release supported: it has no protocol-level prepared statements). Two replicas reach
//! the database through the pooler:
//!
//! - with a direct URL beside it (`TASKLANE_DIRECT_DATABASE_URL`): every feature, the
//!   wake-ups included. The workers poll only every ten minutes, so a task submitted to
//!   the replica without workers is picked up only if the wake-up LISTEN on the direct
//!   URL works;
//! - without one, with `--listen-notify false`: everything but push wake-ups (the
//!   workers poll).
//!
//! Each mode runs the HTTP API (submit, wait, read, events), the worker protocol (claim,
//! heartbeat, complete), the in-process workers, fair turns, admission limits and the
//! lifecycle (release, delete) through the pooler, and fails on any replica log line
//! that names a prepared statement or on a replica or pooler that exits.

use crate::common;

use common::api::{self, Api, ALL};
use common::serve::{Options, Serve};
use serde_json::json;
use tasklane::devdb::Pooler;

/// Submits tasks of every kind through both replicas and checks each answer.
async fn exercise(db: &common::TestDb, a: &Serve, b: &Serve) {
    let admin_perms: Vec<&str> = ALL.iter().copied().chain(["admin"]).collect();
    let token = api::token(&db.url, "pooled", None, &admin_perms).await;
    let (on_a, on_b) = (a.api(&token), b.api(&token));

    // In-process workers run noops submitted to either replica; `?wait=` answers.
    let mut ids = Vec::new();
    for n in 0..20 {
        let api = if n % 2 == 0 { &on_a } else { &on_b };
        let answer = api
            .submit("noop", "s", &format!("noop-{n}"), json!({}))
            .await;
        assert_eq!(answer.status, 202, "{:?}", answer.body);
        ids.push(answer.body["id"].as_str().unwrap().to_owned());
    }
    for id in &ids {
        on_b.wait_for(id, |t| t["state"] == "succeeded").await;
    }
    let waited = on_a
        .post(
            "/v1/tasks?wait=20",
            &json!({"task_type": "noop", "scope_id": "s", "effect_key": "waited", "input": {}}),
        )
        .await;
    assert_eq!(waited.status, 200, "{:?}", waited.body);
    assert_eq!(waited.body["state"], "succeeded");
    let events = on_b.get(&format!("/v1/tasks/{}/events", ids[0])).await;
    let types: Vec<&str> = events.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["task.queued", "task.running", "task.succeeded"]);

    remote_worker(&on_a, &on_b).await;
    fair_turns(&on_a).await;
    admission(&on_a, &on_b).await;
    lifecycle(&on_a, &on_b, &ids[1], "noop-1").await;
}

/// A remote worker claims on one replica, heartbeats and completes on the other.
async fn remote_worker(on_a: &Api, on_b: &Api) {
    let submitted = on_a.submit("remote", "s", "remote-1", json!({})).await;
    assert_eq!(submitted.status, 202, "{:?}", submitted.body);
    let id = submitted.body["id"].as_str().unwrap().to_owned();
    let claimed = on_b
        .post(
            "/v1/worker/claim",
            &json!({"worker_id": "w1", "task_types": ["remote"], "route": "local",
                    "max": 10, "wait_seconds": 10}),
        )
        .await;
    assert_eq!(claimed.status, 200, "{:?}", claimed.body);
    let task = &claimed.body["tasks"][0];
    assert_eq!(task["id"], id.as_str());
    let lease = task["lease_token"].as_str().unwrap();
    let beat = on_a
        .post(
            &format!("/v1/worker/tasks/{id}/heartbeat"),
            &json!({"lease_token": lease, "progress": 50}),
        )
        .await;
    assert_eq!(beat.status, 200, "{:?}", beat.body);
    assert_eq!(beat.body["cancel_requested"], false);
    let done = on_b
        .post(
            &format!("/v1/worker/tasks/{id}/complete"),
            &json!({"lease_token": lease, "result": {"ok": true}}),
        )
        .await;
    assert_eq!(done.status, 200, "{:?}", done.body);
    let stale = on_a
        .post(
            &format!("/v1/worker/tasks/{id}/complete"),
            &json!({"lease_token": uuid::Uuid::new_v4(), "result": {}}),
        )
        .await;
    assert_eq!(stale.code(), "lease_lost");
    let task = on_a.wait_for(&id, |t| t["state"] == "succeeded").await;
    assert_eq!(task["result"], json!({"ok": true}));
}

/// An app's weight is set on one replica and read on the other.
async fn fair_turns(on_a: &Api) {
    let set = on_a
        .send(
            on_a.http
                .put(format!("{}/v1/admin/apps/pooled/weight", on_a.base))
                .json(&json!({"weight": 7})),
        )
        .await;
    assert_eq!(set.status, 200, "{:?}", set.body);
    let apps = on_a.get("/v1/admin/apps").await;
    let weights = apps.body.to_string();
    assert!(
        weights.contains("\"pooled\"") && weights.contains('7'),
        "{weights}"
    );
}

/// A capacity of one task is refused a second submit until the first ends.
async fn admission(on_a: &Api, on_b: &Api) {
    let set = on_a
        .send(
            on_a.http
                .put(format!("{}/v1/admin/limits", on_a.base))
                .json(&json!({"kind": "capacity", "app": "pooled", "usage_subject": "u1", "limit": 1})),
        )
        .await;
    assert_eq!(set.status, 200, "{:?}", set.body);
    let body = |key: &str| {
        json!({"task_type": "remote", "scope_id": "s", "effect_key": key,
               "usage_subject": "u1", "input": {}})
    };
    let first = on_a.post("/v1/tasks", &body("limited-1")).await;
    assert_eq!(first.status, 202, "{:?}", first.body);
    let second = on_b.post("/v1/tasks", &body("limited-2")).await;
    assert_eq!(second.status, 429, "{:?}", second.body);
    assert_eq!(second.code(), "capacity_exhausted");
    let id = first.body["id"].as_str().unwrap();
    let cancelled = on_b
        .post(&format!("/v1/tasks/{id}/cancel"), &json!({}))
        .await;
    assert_eq!(cancelled.status, 200, "{:?}", cancelled.body);
    let third = on_b.post("/v1/tasks", &body("limited-3")).await;
    assert_eq!(third.status, 202, "{:?}", third.body);
}

/// A finished task (effect key `key`) is released on one replica and its scope deleted
/// on the other.
async fn lifecycle(on_a: &Api, on_b: &Api, finished: &str, key: &str) {
    let released = on_a
        .post("/v1/releases", &json!({"scope_id": "s", "effect_key": key}))
        .await;
    assert_eq!(released.status, 200, "{:?}", released.body);
    assert_eq!(released.body["released"], true);
    let deleted = on_b
        .send(on_b.http.delete(format!("{}/v1/scopes/s/tasks", on_b.base)))
        .await;
    assert_eq!(deleted.status, 200, "{:?}", deleted.body);
    assert!(deleted.body["deleted"].as_u64().unwrap() >= 20);
    let gone = on_a.get(&format!("/v1/tasks/{finished}")).await;
    assert_eq!(gone.status, 404);
}

/// Two replicas with `DATABASE_URL` at the pooler and `env` beside, their logs in files:
/// `a` serves the API only, so every task submitted to it runs on `b`'s workers.
async fn two_replicas(
    pooled: &str,
    env: Vec<(&'static str, String)>,
    args: &[&str],
    logs: &std::path::Path,
) -> (Serve, Serve) {
    let options = |name: &str, roles| Options {
        roles,
        name: Some(name.to_owned()),
        env: env.clone(),
        args: args.iter().map(|a| a.to_string()).collect(),
        stderr: Some(logs.join(name)),
        ..Default::default()
    };
    let a = Serve::start(pooled, options("a", Some("api"))).await;
    let b = Serve::start(pooled, options("b", None)).await;
    (a, b)
}

/// A directory for the replicas' logs, named after the test's database.
fn log_dir(db: &common::TestDb) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("{}-logs", db.name()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// No replica log line names a prepared statement or a failed service.
fn assert_clean_logs(logs: &std::path::Path) {
    for name in ["a", "b"] {
        let log = std::fs::read_to_string(logs.join(name)).unwrap_or_default();
        for line in log.lines() {
            assert!(
                !line.contains("prepared statement") && !line.contains("ERROR"),
                "replica {name} logged: {line}"
            );
        }
    }
}

#[tokio::test]
async fn every_feature_works_through_the_pooler_with_a_direct_url() {
    let db = common::test_db().await;
    let mut pooler = Pooler::in_front_of(&db.url).expect("start pgbouncer");
    let pooled = pooler.url_for(&db.url).unwrap();
    let logs = log_dir(&db);
    let env = vec![
        ("TASKLANE_DIRECT_DATABASE_URL", db.url.clone()),
        // Ten minutes: only a wake-up gets a task to a worker within the tests' bounds.
        ("TASKLANE_POLL_INTERVAL_MS", "600000".to_owned()),
    ];
    let (mut a, mut b) = two_replicas(&pooled, env, &[], &logs).await;
    exercise(&db, &a, &b).await;
    assert!(pooler.running(), "pgbouncer exited: {}", pooler.log());
    a.rss_mib();
    b.rss_mib();
    assert_clean_logs(&logs);
    a.kill9();
    b.kill9();
}

#[tokio::test]
async fn everything_but_wakeups_works_through_the_pooler_alone() {
    let db = common::test_db().await;
    let mut pooler = Pooler::in_front_of(&db.url).expect("start pgbouncer");
    let pooled = pooler.url_for(&db.url).unwrap();
    let logs = log_dir(&db);
    let env = vec![("TASKLANE_POLL_INTERVAL_MS", "100".to_owned())];
    let (a, b) = two_replicas(&pooled, env, &["--listen-notify", "false"], &logs).await;
    exercise(&db, &a, &b).await;
    assert!(pooler.running(), "pgbouncer exited: {}", pooler.log());
    a.rss_mib();
    b.rss_mib();
    assert_clean_logs(&logs);
}

#[tokio::test]
async fn migrations_go_to_the_direct_url() {
    let db = common::empty_db().await;
    let pooler = Pooler::in_front_of(&db.url).expect("start pgbouncer");
    let pooled = pooler.url_for(&db.url).unwrap();
    let mut command = tokio::process::Command::new(common::serve::binary());
    // `serve` migrates on start (no --no-migrate): through the direct URL.
    command
        .args(["serve", "--roles", "api"])
        .env("DATABASE_URL", &pooled)
        .env("TASKLANE_DIRECT_DATABASE_URL", &db.url)
        .env_remove("TASKLANE_DATABASE_URL")
        .env("TASKLANE_LISTEN", "127.0.0.1:0")
        .env("TASKLANE_LOG", "warn")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let mut child = command.spawn().unwrap();
    let client = db.client().await;
    common::eventually(
        std::time::Duration::from_secs(60),
        "the schema migrated",
        || async {
            let row = client
                .query_one(
                    "SELECT count(*) FROM pg_tables WHERE tablename = 'tasklane_schema_history'",
                    &[],
                )
                .await
                .map_err(|e| e.to_string())?;
            match row.get::<_, i64>(0) {
                1 => Ok(()),
                n => Err(n.to_string()),
            }
        },
    )
    .await;
    assert!(child.try_wait().unwrap().is_none(), "serve exited");
    child.kill().await.unwrap();
}

#[tokio::test]
async fn migrating_through_the_pooler_is_refused_naming_the_direct_url() {
    let db = common::empty_db().await;
    let pooler = Pooler::in_front_of(&db.url).expect("start pgbouncer");
    let pooled = pooler.url_for(&db.url).unwrap();
    let stderr =
        common::serve::refused_at_start(&["--roles", "api"], &[("DATABASE_URL", &pooled)]).await;
    assert!(
        stderr.contains("TASKLANE_DIRECT_DATABASE_URL") && stderr.contains("--no-migrate"),
        "{stderr}"
    );
}
