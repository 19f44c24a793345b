//! `tasklane tasks submit` against a real `tasklane serve`: one task from flags (inline
//! input, `@FILE`, `--wait`, the optional fields), the batch form on stdin (mixed valid
//! and refused items, chunks of the batch limit), and the exit codes: 0 accepted, 1
//! refused (for a batch: any item), 2 bad input (nothing sent).

use std::process::{Output, Stdio};

use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;

use crate::cli::{cli, stderr, stdout};
use crate::common;
use common::api::{self, Api, ALL};
use common::serve::{binary, Options, Serve};

/// `tasklane tasks submit --batch ARGS` with `input` on stdin.
async fn batch(base: &str, token: &str, args: &[&str], input: &str) -> Output {
    let mut child = tokio::process::Command::new(binary())
        .args(["tasks", "submit", "--batch"])
        .args(args)
        .env("TASKLANE_URL", base)
        .env("TASKLANE_TOKEN", token)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run tasklane");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).await.unwrap();
    drop(stdin);
    child.wait_with_output().await.expect("wait for tasklane")
}

/// The token's tasks (first page), as the API lists them.
async fn listed(client: &Api) -> Vec<Value> {
    let page = client.get("/v1/tasks?limit=100").await;
    page.body["items"].as_array().unwrap().clone()
}

fn body(task_type: &str, key: &str) -> String {
    json!({"task_type": task_type, "scope_id": "s", "effect_key": key, "input": {}}).to_string()
}

#[tokio::test]
async fn submit_sends_inline_or_file_input_waits_and_sets_the_options() {
    let db = common::test_db().await;
    let serve = Serve::start(&db.url, Options::default()).await;
    let token = api::token(&db.url, "mail", None, ALL).await;
    let run = |args: Vec<String>| {
        let (base, token) = (serve.base.clone(), token.clone());
        async move {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            cli(&base, &token, &args).await
        }
    };
    let args = |s: &str| s.split(' ').map(str::to_owned).collect::<Vec<_>>();

    // Inline input, waited for: the answer is the finished task, its result the input.
    let mut waited = args("tasks submit noop --scope s --key inline --wait 60 --json");
    waited.extend(["--input".into(), r#"{"hello": [1, 2]}"#.into()]);
    let waited = run(waited).await;
    assert!(waited.status.success(), "{}", stderr(&waited));
    let task: Value = serde_json::from_slice(&waited.stdout).unwrap();
    assert_eq!(
        (&task["state"], &task["result"]),
        (&json!("succeeded"), &json!({"hello": [1, 2]}))
    );

    // From a file, printed as a table.
    let file = std::env::temp_dir().join(format!("tasklane-input-{}.json", uuid::Uuid::new_v4()));
    std::fs::write(&file, r#"["from", "a", "file"]"#).unwrap();
    let mut from_file = args("tasks submit noop --scope s --key file --wait 60");
    from_file.push(format!("--input=@{}", file.display()));
    let from_file = run(from_file).await;
    std::fs::remove_file(&file).unwrap();
    assert!(from_file.status.success(), "{}", stderr(&from_file));
    let text = stdout(&from_file);
    let row = |key: &str| {
        text.lines()
            .find(|l| l.split_whitespace().next() == Some(key))
            .map(|l| l[key.len()..].trim().to_owned())
    };
    assert_eq!(row("state").as_deref(), Some("succeeded"), "{text}");
    assert_eq!(
        row("result").as_deref(),
        Some(r#"["from","a","file"]"#),
        "{text}"
    );

    // Every optional field reaches the task; without --wait it is answered queued.
    let options = run(args(
        "tasks submit remote --scope s --key opts --priority -5 --privacy local_only \
         --usage-subject user-9 --source conv-1 --json",
    ))
    .await;
    assert!(options.status.success(), "{}", stderr(&options));
    let task: Value = serde_json::from_slice(&options.stdout).unwrap();
    assert_eq!(
        [
            &task["state"],
            &task["priority"],
            &task["usage_subject"],
            &task["source_id"]
        ],
        [
            &json!("queued"),
            &json!(-5),
            &json!("user-9"),
            &json!("conv-1")
        ]
    );
}

#[tokio::test]
async fn bad_input_sends_nothing_and_a_refusal_exits_1() {
    let db = common::test_db().await;
    let serve = Serve::start(&db.url, Options::default()).await;
    let token = api::token(&db.url, "mail", None, ALL).await;
    let client = serve.api(&token);
    let submit = |input: &'static str| {
        let (base, token) = (serve.base.clone(), token.clone());
        async move {
            cli(
                &base,
                &token,
                &[
                    "tasks", "submit", "noop", "--scope", "s", "--key", "k", "--input", input,
                ],
            )
            .await
        }
    };
    let not_json = submit("{nope").await;
    assert_eq!(not_json.status.code(), Some(2));
    assert!(
        stderr(&not_json).starts_with("--input: not JSON"),
        "{}",
        stderr(&not_json)
    );
    let unreadable = submit("@/nonexistent/tasklane-input.json").await;
    assert_eq!(unreadable.status.code(), Some(2));
    assert!(
        stderr(&unreadable).contains("@/nonexistent/tasklane-input.json: cannot read it"),
        "{}",
        stderr(&unreadable)
    );
    let line_two = batch(
        &serve.base,
        &token,
        &[],
        &format!("{}\n{{oops\n", body("noop", "a")),
    )
    .await;
    assert_eq!(line_two.status.code(), Some(2));
    assert!(
        stderr(&line_two).starts_with("stdin line 2: not JSON"),
        "{}",
        stderr(&line_two)
    );
    assert!(listed(&client).await.is_empty(), "bad input sent nothing");

    let unknown = cli(
        &serve.base,
        &token,
        &["tasks", "submit", "nope", "--scope", "s", "--key", "k"],
    )
    .await;
    assert_eq!(unknown.status.code(), Some(1));
    assert!(
        stderr(&unknown).contains("unknown_task_type"),
        "{}",
        stderr(&unknown)
    );
}

#[tokio::test]
async fn batch_submits_every_line_and_reports_each_item() {
    let db = common::test_db().await;
    let serve = Serve::start(&db.url, Options::default()).await;
    let token = api::token(&db.url, "mail", None, ALL).await;
    let client = serve.api(&token);

    // The refused item is named, the others are created; the exit code says "not all".
    let lines = [
        body("remote", "a"),
        String::new(),
        body("nope", "b"),
        body("remote", "c"),
    ];
    let mixed = batch(&serve.base, &token, &[], &lines.join("\n")).await;
    assert_eq!(mixed.status.code(), Some(1), "{}", stderr(&mixed));
    assert_eq!(stderr(&mixed).trim(), "1 of 3 items refused");
    let text = stdout(&mixed);
    let rows: Vec<Vec<&str>> = text
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    // Rows name stdin's line numbers, blank lines counted.
    assert_eq!(rows[0], ["LINE", "STATUS", "ID", "OR", "CODE"]);
    assert_eq!(rows[2], ["3", "422", "unknown_task_type"]);
    let created: Vec<&str> = [&rows[1], &rows[3]].iter().map(|r| r[2]).collect();
    assert_eq!(
        [rows[1][..2].to_vec(), rows[3][..2].to_vec()],
        [["1", "202"], ["4", "202"]]
    );
    let mut ids: Vec<String> = listed(&client)
        .await
        .iter()
        .map(|t| t["id"].as_str().unwrap().to_owned())
        .collect();
    ids.sort();
    let mut expected: Vec<String> = created.iter().map(|s| s.to_string()).collect();
    expected.sort();
    assert_eq!(ids, expected);

    // More lines than one batch takes go in chunks, numbered across them; all accepted
    // is 0, and `--json` prints the API's items, one a line.
    let many: Vec<String> = (0..1001)
        .map(|n| body("remote", &format!("m{n}")))
        .collect();
    let chunked = batch(&serve.base, &token, &["--json"], &many.join("\n")).await;
    assert!(chunked.status.success(), "{}", stderr(&chunked));
    let items: Vec<Value> = stdout(&chunked)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(items.len(), 1001);
    assert!(
        items.iter().all(|i| i["status"] == 202),
        "{:?}",
        items.last()
    );
}
