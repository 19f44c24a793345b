//! The CLI as a Unix filter: a reader that closes stdout early (`| head -c 50`) ends the
//! command quietly with status 0, not with a panic; and a missing token says how to give
//! one. Each command here writes more after the reader has gone: `tasks list` and
//! `openapi` more than a pipe buffer (64 KiB) holds, `tasks events --follow` the event
//! the test causes after closing.

use std::process::Stdio;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};

use crate::cli::cli;
use crate::common;
use common::api::{self, ALL};
use common::serve::{binary, Options, Serve};

/// `tasklane ARGS` with stdout and stderr piped.
fn spawn(base: &str, token: &str, args: &[&str]) -> tokio::process::Child {
    tokio::process::Command::new(binary())
        .args(args)
        .env("TASKLANE_URL", base)
        .env("TASKLANE_TOKEN", token)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("run tasklane")
}

/// Waits for `child` (stdout already closed) and asserts it ended quietly with 0.
async fn assert_quiet_exit(mut child: tokio::process::Child, what: &str) {
    let mut stderr = String::new();
    let mut pipe = child.stderr.take().unwrap();
    pipe.read_to_string(&mut stderr).await.unwrap();
    let status = child.wait().await.unwrap();
    assert_eq!(status.code(), Some(0), "{what}: {stderr}");
    assert!(stderr.is_empty(), "{what} printed on stderr: {stderr}");
}

#[tokio::test]
async fn a_closed_stdout_ends_list_and_follow_quietly_with_status_0() {
    let db = common::test_db().await;
    let serve = Serve::start(&db.url, Options::default()).await;
    let token = api::token(&db.url, "mail", None, ALL).await;
    let client = serve.api(&token);
    // 100 queued tasks with long keys: the page printed as JSON is over 64 KiB.
    let long = |n: usize| format!("{n}-{}", "x".repeat(190));
    let tasks: Vec<Value> = (0..100)
        .map(|n| {
            json!({"task_type": "remote", "scope_id": long(n), "effect_key": long(n),
                   "source_id": long(n), "usage_subject": long(n), "input": {}})
        })
        .collect();
    let created = client
        .post("/v1/tasks/batch", &json!({"tasks": tasks}))
        .await;
    assert_eq!(created.status, 200);
    let full = cli(
        &serve.base,
        &token,
        &["tasks", "list", "--json", "--limit", "100"],
    )
    .await;
    assert!(full.stdout.len() > 64 * 1024, "{} bytes", full.stdout.len());

    let mut list = spawn(
        &serve.base,
        &token,
        &["tasks", "list", "--json", "--limit", "100"],
    );
    let mut stdout = list.stdout.take().unwrap();
    let mut first = [0u8; 50];
    stdout.read_exact(&mut first).await.unwrap();
    drop(stdout);
    assert_quiet_exit(list, "tasks list --json | head -c 50").await;

    // --follow: the first event is read, stdout closed, then the task is cancelled, so
    // the command has one more event to print.
    let queued = client.submit("remote", "s", "follow", json!({})).await;
    let id = queued.body["id"].as_str().unwrap().to_owned();
    let mut follow = spawn(
        &serve.base,
        &token,
        &["tasks", "events", &id, "--follow", "--json"],
    );
    let mut lines = BufReader::new(follow.stdout.take().unwrap()).lines();
    let event: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(event["type"], "task.queued");
    drop(lines);
    let cancelled = client
        .post(&format!("/v1/tasks/{id}/cancel"), &json!({}))
        .await;
    assert_eq!(cancelled.body["state"], "cancelled");
    assert_quiet_exit(follow, "tasks events --follow --json | head -1").await;
}

#[tokio::test]
async fn a_closed_stdout_ends_openapi_quietly_with_status_0() {
    // The document is larger than a pipe buffer: the write after the close fails.
    let mut openapi = tokio::process::Command::new(binary())
        .arg("openapi")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("run tasklane openapi");
    let mut stdout = openapi.stdout.take().unwrap();
    let mut first = [0u8; 10];
    stdout.read_exact(&mut first).await.unwrap();
    drop(stdout);
    assert_quiet_exit(openapi, "tasklane openapi | head -c 10").await;
}

#[tokio::test]
async fn a_missing_token_names_the_flag_and_the_variable() {
    let run = |args: &'static [&'static str]| async move {
        tokio::process::Command::new(binary())
            .args(args)
            .env("TASKLANE_URL", "http://127.0.0.1:9")
            .env_remove("TASKLANE_TOKEN")
            .stdin(Stdio::null())
            .output()
            .await
            .expect("run tasklane")
    };
    for args in [
        &["tasks", "list"][..],
        &["tasks", "submit", "noop", "--scope", "s", "--key", "k"],
        &["tasks", "submit", "--batch"],
        &["admin", "overview"],
    ] {
        let output = run(args).await;
        let text = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {text}");
        assert_eq!(
            text.trim(),
            "no API token: pass --token tl_... or set TASKLANE_TOKEN",
            "{args:?}"
        );
    }
}
