//! `tasklane tasks ...` and `tasklane admin ...` against a real `tasklane serve`: what a
//! person reads, what a script parses (`--json`), and the exit codes (0 done, 1 refused
//! by the API, 3 unreachable).

use std::process::Output;

use serde_json::{json, Value};

use crate::common;
use common::api::{self, ALL};
use common::serve::{binary, Options, Serve};

pub(crate) async fn cli(base: &str, token: &str, args: &[&str]) -> Output {
    tokio::process::Command::new(binary())
        .args(args)
        .env("TASKLANE_URL", base)
        .env("TASKLANE_TOKEN", token)
        .output()
        .await
        .expect("run tasklane")
}

pub(crate) fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub(crate) fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[tokio::test]
async fn tasks_commands_list_get_cancel_retry_follow_events_and_attempts() {
    let db = common::test_db().await;
    let serve = Serve::start(&db.url, Options::default()).await;
    let token = api::token(&db.url, "mail", None, ALL).await;
    let client = serve.api(&token);
    let queued = client.submit("remote", "s", "k", json!({})).await;
    let id = queued.body["id"].as_str().unwrap().to_owned();

    let list = cli(&serve.base, &token, &["tasks", "list"]).await;
    assert!(list.status.success(), "{}", stderr(&list));
    let text = stdout(&list);
    assert!(text.starts_with("ID"), "{text}");
    assert!(
        text.contains(&id) && text.contains("remote") && text.contains("queued"),
        "{text}"
    );
    let page = cli(
        &serve.base,
        &token,
        &["tasks", "list", "--json", "--state", "queued"],
    )
    .await;
    let page: Value = serde_json::from_slice(&page.stdout).unwrap();
    assert_eq!(page["items"][0]["id"], id.as_str());

    let cancelled = cli(&serve.base, &token, &["tasks", "cancel", &id, "--json"]).await;
    let cancelled: Value = serde_json::from_slice(&cancelled.stdout).unwrap();
    assert_eq!(cancelled["state"], "cancelled");
    let retried = cli(&serve.base, &token, &["tasks", "retry", &id]).await;
    assert!(stdout(&retried)
        .lines()
        .any(|l| l.starts_with("state") && l.ends_with("queued")));
    let events = stdout(&cli(&serve.base, &token, &["tasks", "events", &id]).await);
    let kinds: Vec<&str> = events
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .collect();
    assert_eq!(kinds, ["task.queued", "task.cancelled", "task.queued"]);

    // --follow streams until the terminal event, then exits.
    let sleeping = client
        .submit("sleep", "s", "z", json!({"input": {"ms": 300, "steps": 3}}))
        .await;
    let sleeping = sleeping.body["id"].as_str().unwrap().to_owned();
    let followed = cli(
        &serve.base,
        &token,
        &["tasks", "events", &sleeping, "--follow", "--json"],
    )
    .await;
    assert!(followed.status.success(), "{}", stderr(&followed));
    let kinds: Vec<String> = stdout(&followed)
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(kinds.first().map(String::as_str), Some("task.queued"));
    assert!(kinds.iter().any(|k| k == "task.progress"), "{kinds:?}");
    assert_eq!(kinds.last().map(String::as_str), Some("task.succeeded"));

    // Its attempts, as a table: one, succeeded, locally.
    let attempts = cli(&serve.base, &token, &["tasks", "attempts", &sleeping]).await;
    assert!(attempts.status.success(), "{}", stderr(&attempts));
    let text = stdout(&attempts);
    let rows: Vec<Vec<&str>> = text
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows.len(), 1, "{text}");
    assert_eq!(&rows[0][..3], ["1", "succeeded", "local"], "{text}");
}

#[tokio::test]
async fn exit_codes_say_refused_or_unreachable() {
    let db = common::test_db().await;
    let serve = Serve::start(&db.url, Options::default()).await;
    let token = api::token(&db.url, "mail", None, ALL).await;
    let missing = cli(
        &serve.base,
        &token,
        &["tasks", "get", "0193a5d0-0000-7000-8000-000000000000"],
    )
    .await;
    assert_eq!(missing.status.code(), Some(1));
    assert!(
        stderr(&missing).contains("not_found"),
        "{}",
        stderr(&missing)
    );
    let bad_token = cli(&serve.base, "tl_nope", &["tasks", "list"]).await;
    assert_eq!(bad_token.status.code(), Some(1));
    assert!(stderr(&bad_token).contains("unauthorized"));
    assert!(
        !stderr(&bad_token).contains("tl_nope"),
        "the token is never printed"
    );
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let nowhere = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let unreachable = cli(&nowhere, &token, &["tasks", "list"]).await;
    assert_eq!(
        unreachable.status.code(),
        Some(3),
        "{}",
        stderr(&unreachable)
    );
    let not_admin = cli(&serve.base, &token, &["admin", "overview"]).await;
    assert_eq!(not_admin.status.code(), Some(1));
    assert!(stderr(&not_admin).contains("forbidden"));
}

#[tokio::test]
async fn admin_commands_pause_stop_limit_and_show_the_overview() {
    let db = common::test_db().await;
    let serve = Serve::start(&db.url, Options::default()).await;
    let admin = api::token(&db.url, "ops", None, &["admin"]).await;
    let run = |args: &'static [&'static str]| cli(&serve.base, &admin, args);

    assert_eq!(
        stdout(&run(&["admin", "pause", "noop"]).await).trim(),
        "noop: paused"
    );
    let limit = run(&[
        "admin", "limits", "--kind", "capacity", "--app", "mail", "--limit", "5",
    ])
    .await;
    assert!(limit.status.success(), "{}", stderr(&limit));
    let stop = run(&["admin", "stop", "on", "--app", "mail"]).await;
    assert_eq!(stdout(&stop).trim(), "emergency stop on");
    let overview = stdout(&run(&["admin", "overview"]).await);
    for expected in ["Paused task types", "noop", "Limits", "capacity"] {
        assert!(overview.contains(expected), "{expected} in\n{overview}");
    }
    // The stop's own section lists the app: its first row under the header.
    let stops: Vec<&str> = overview
        .split("Emergency stops\n")
        .nth(1)
        .unwrap()
        .lines()
        .take(2)
        .collect();
    assert!(
        stops[0].starts_with("APP") && stops[1].starts_with("mail"),
        "{stops:?}"
    );
    let json: Value =
        serde_json::from_slice(&run(&["admin", "overview", "--json"]).await.stdout).unwrap();
    assert_eq!(json["paused_task_types"][0]["task_type"], "noop");
    assert_eq!(
        stdout(&run(&["admin", "resume", "noop"]).await).trim(),
        "noop: resumed"
    );
    let unknown = run(&["admin", "pause", "nope"]).await;
    assert_eq!(unknown.status.code(), Some(1));
    assert!(stderr(&unknown).contains("unknown_task_type"));
}

#[tokio::test]
async fn admin_weight_sets_an_apps_weight_and_apps_lists_them() {
    let db = common::test_db().await;
    let serve = Serve::start(&db.url, Options::default()).await;
    let admin = api::token(&db.url, "ops", None, &["admin"]).await;
    api::token(&db.url, "mail", None, ALL).await;
    let run = |args: &'static [&'static str]| cli(&serve.base, &admin, args);
    let stored = || async {
        let row = db
            .client()
            .await
            .query_opt(
                "SELECT weight FROM tasklane.app_weights WHERE app = 'mail'",
                &[],
            )
            .await
            .unwrap();
        row.map(|row| row.get::<_, i16>(0))
    };

    let set = run(&["admin", "weight", "mail", "3"]).await;
    assert!(set.status.success(), "{}", stderr(&set));
    assert_eq!(stdout(&set).trim(), "mail: weight 3");
    assert_eq!(stored().await, Some(3));

    // A table by app: mail as set, ops (its token only) at the default.
    let apps = run(&["admin", "apps"]).await;
    assert!(apps.status.success(), "{}", stderr(&apps));
    let text = stdout(&apps);
    let rows: Vec<Vec<&str>> = text
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows.len(), 3, "{text}");
    assert_eq!(rows[0], ["APP", "WEIGHT", "UPDATED_AT"], "{text}");
    assert_eq!(&rows[1][..2], ["mail", "3"], "{text}");
    assert_ne!(rows[1][2], "-", "{text}");
    assert_eq!(rows[2], ["ops", "1", "-"], "{text}");
    let json: Value =
        serde_json::from_slice(&run(&["admin", "apps", "--json"]).await.stdout).unwrap();
    assert_eq!(json["items"][0]["app"], "mail");
    assert_eq!(json["items"][0]["weight"], 3);

    // Out of range, either side: refused by the API (exit 1, its code), nothing changed.
    for args in [
        &["admin", "weight", "mail", "101"][..],
        &["admin", "weight", "mail", "-2"][..],
    ] {
        let refused = cli(&serve.base, &admin, args).await;
        assert_eq!(refused.status.code(), Some(1), "{}", stderr(&refused));
        assert!(
            stderr(&refused).contains("validation_failed"),
            "{}",
            stderr(&refused)
        );
    }
    assert_eq!(stored().await, Some(3));
}
