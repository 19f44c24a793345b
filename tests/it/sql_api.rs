//! The SQL door (`tasklane.queue_task`, and `tasklane.run_task` with the older parameter
//! names) against the HTTP door: one canonical digest
//! (a corpus of tricky inputs submitted through one door joins the task the other door
//! created), the same bounds and codes, the caller's transaction deciding (a rollback
//! leaves nothing, a commit wakes a worker that runs the task), and the role
//! `tasklane_app` that may call the SQL API and nothing else.

use std::time::Duration;

use serde_json::json;
use tokio_postgres::Client;

use crate::common::api::{token, Api};
use crate::common::fixtures::{count, listen};
use crate::common::in_process::InProcess;
use crate::common::serve::Options;
use crate::common::{self, eventually};

const APP: &str = "sqlapp";

/// `tasklane.run_task` with a jsonb input written as `input` (SQL text), the rest named.
async fn run_task(
    c: &Client,
    task_type: &str,
    scope: &str,
    key: &str,
    input: &str,
    extra: &str,
) -> Result<(uuid::Uuid, String), tokio_postgres::Error> {
    let sql = format!(
        "SELECT task_id, outcome FROM tasklane.run_task(app => $1, task_type => $2,
             scope_id => $3, effect_key => $4, input => $5::text::jsonb {extra})"
    );
    let row = c
        .query_one(&sql, &[&APP, &task_type, &scope, &key, &input])
        .await?;
    Ok((row.get(0), row.get(1)))
}

/// The SQLSTATE, DETAIL (stable code) and COLUMN of a raised refusal.
fn refusal(error: &tokio_postgres::Error) -> (String, String, Option<String>) {
    let db = error.as_db_error().expect("a database error");
    (
        db.code().code().to_owned(),
        db.detail().unwrap_or_default().to_owned(),
        db.column().map(str::to_owned),
    )
}

async fn start() -> (common::TestDb, InProcess, Api) {
    let db = common::test_db().await;
    let serve = InProcess::start(&db.url, Options::default()).await;
    let secret = token(&db.url, APP, None, &["submit", "read", "admin"]).await;
    let api = serve.api(&secret);
    (db, serve, api)
}

/// Inputs written two ways that mean the same JSON value: (HTTP body text, SQL text).
const SAME: &[(&str, &str)] = &[
    (r#"{"b": 1, "a": [1, 2]}"#, r#"{"a":[1,2],"b":1}"#),
    (r#"{"s": "\u00e9\ud83d\ude00\u4e2d"}"#, r#"{"s": "é😀中"}"#),
    (r#"{"s": "caf\u0065\u0301"}"#, "{\"s\": \"cafe\u{301}\"}"),
    (r#"{"n": 1.0}"#, r#"{"n": 1}"#),
    (r#"{"n": 1.50}"#, r#"{"n": 1.5}"#),
    (r#"{"n": 1e2}"#, r#"{"n": 100}"#),
    (r#"{"n": 1E-7}"#, r#"{"n": 0.0000001}"#),
    (r#"{"n": -0.0}"#, r#"{"n": 0}"#),
    (
        r#"{"n": 12345678901234567890}"#,
        r#"{"n": 12345678901234567890}"#,
    ),
    (
        r#"{"n": -9223372036854775808}"#,
        r#"{"n": -9223372036854775808}"#,
    ),
    (r#"{"n": 0.1, "m": 2.5e-3}"#, r#"{"m": 0.0025, "n": 0.1}"#),
    (
        r#"[[[{"z": [1, 2, {"y": null, "x": true}]}]], "1.0"]"#,
        r#"[[[{"z":[1,2,{"x":true,"y":null}]}]],"1.0"]"#,
    ),
    (
        r#""tab\tnl\n\"q\" \\ \/ \u0001""#,
        r#""tab\u0009nl\u000a\"q\" \\ / \u0001""#,
    ),
    (r#"{}"#, r#"{}"#),
    (r#"null"#, r#"null"#),
    (
        r#"{"k": "v", "K": "V", "kk": {"é": 1, "e": 2}}"#,
        r#"{"kk":{"e":2,"é":1},"K":"V","k":"v"}"#,
    ),
];

/// V20's request digest, as it was written (jsonb_build_object(...)::text): what every
/// task submitted before V24 holds. V24 builds the same text by concatenation.
const V20_DIGEST: &str = r#"'\x02'::bytea || sha256(convert_to(jsonb_build_object(
        'task_type', $1::text, 'source_id', $2::text,
        'input', CASE WHEN $3::text::jsonb::text ~ '\.[0-9]*0(?![0-9])'
                      THEN tasklane.canonical_json($3::text::jsonb) ELSE $3::text::jsonb END,
        'priority', $4::int4, 'deadline_seconds', $5::int8, 'max_attempts', $6::int4,
        'on_restart', $7::text, 'privacy', $8::text)::text, 'UTF8'))"#;

#[tokio::test]
async fn the_request_digest_is_byte_for_byte_the_one_tasks_hold_from_v20() {
    let db = common::test_db().await;
    let c = db.client().await;
    let statement = c
        .prepare(&format!(
            "SELECT {V20_DIGEST} AS old,
                    tasklane.request_digest($1, $2, $3::text::jsonb, $4, $5, $6, $7, $8) AS new"
        ))
        .await
        .unwrap();
    let inputs = SAME.iter().flat_map(|(a, b)| [*a, *b]).chain([
        r#"{"n": 1.10, "s": "a.10 \u0001 \u001f \u007f \u2028"}"#,
        r#"[1.0, 2.50, -3.000e2, 0.0, 1e400]"#,
        r#""only a string""#,
        r#"42"#,
        r#"{"": "", "\"": "\\", "aaaa": {"bb": [], "a": {}}}"#,
    ]);
    let texts = [None, Some(""), Some("s\"q\\b\n\u{1}é😀")];
    let mut compared = 0;
    for (n, input) in inputs.enumerate() {
        // Sent as text, so trailing zeros and exponents reach PostgreSQL as written.
        let text = texts[n % texts.len()];
        let other = texts[(n + 1) % texts.len()];
        let deadline = [None, Some(0_i64), Some(9_223_372_036_854_775_807)][n % 3];
        for (priority, max_attempts) in [(0, 1), (-32768, 2_147_483_647), (7, -1)] {
            let row = c
                .query_one(
                    &statement,
                    &[
                        &"remote\u{e9}\"",
                        &text,
                        &input,
                        &priority,
                        &deadline,
                        &max_attempts,
                        &other.unwrap_or("retry"),
                        &text.unwrap_or("local_only"),
                    ],
                )
                .await
                .unwrap();
            let (old, new): (Vec<u8>, Vec<u8>) = (row.get("old"), row.get("new"));
            assert_eq!(
                old, new,
                "input {input}, text {text:?}, priority {priority}"
            );
            compared += 1;
        }
    }
    // SQL NULL in every argument: both print null where jsonb_build_object did.
    let none: Option<&str> = None;
    let row = c
        .query_one(
            &statement,
            &[
                &none,
                &none,
                &none,
                &None::<i32>,
                &None::<i64>,
                &None::<i32>,
                &none,
                &none,
            ],
        )
        .await
        .unwrap();
    let (old, new): (Vec<u8>, Vec<u8>) = (row.get("old"), row.get("new"));
    assert_eq!(old, new, "every argument NULL");
    assert!(compared > 100, "compared {compared}");
}

#[tokio::test]
async fn both_doors_agree_on_the_request_digest() {
    let (db, _serve, api) = start().await;
    let c = db.client().await;
    for (n, (http_text, sql_text)) in SAME.iter().enumerate() {
        let key = format!("same-{n}");
        let body = format!(
            r#"{{"task_type": "remote", "scope_id": "s", "effect_key": "{key}", "input": {http_text}}}"#
        );
        if n % 2 == 0 {
            // HTTP first, then the SQL door joins.
            let answer = api.post_raw("/v1/tasks", body).await;
            assert_eq!(answer.status, 202, "{http_text}: {:?}", answer.body);
            let (id, outcome) = run_task(&c, "remote", "s", &key, sql_text, "")
                .await
                .unwrap_or_else(|e| panic!("{sql_text}: {e:?}"));
            assert_eq!(
                (id.to_string(), outcome.as_str()),
                (answer.body["id"].as_str().unwrap().to_owned(), "joined"),
                "{http_text} / {sql_text}"
            );
        } else {
            // The SQL door first, then HTTP joins (202, the same task).
            let (id, outcome) = run_task(&c, "remote", "s", &key, sql_text, "")
                .await
                .unwrap_or_else(|e| panic!("{sql_text}: {e:?}"));
            assert_eq!(outcome, "created");
            let answer = api.post_raw("/v1/tasks", body).await;
            assert_eq!(answer.status, 202, "{http_text}: {:?}", answer.body);
            assert_eq!(
                answer.body["id"],
                id.to_string(),
                "{http_text} / {sql_text}"
            );
        }
    }
    // The batch door computes the same digest.
    let batch = api
        .post(
            "/v1/tasks/batch",
            &json!({"tasks": [{"task_type": "remote", "scope_id": "s", "effect_key": "batch",
                               "input": {"n": 2.0, "a": "\u{e9}"}}]}),
        )
        .await;
    assert_eq!(batch.body["items"][0]["status"], 202, "{:?}", batch.body);
    let (id, outcome) = run_task(&c, "remote", "s", "batch", r#"{"a": "é", "n": 2}"#, "")
        .await
        .unwrap();
    assert_eq!(
        (id.to_string(), outcome.as_str()),
        (
            batch.body["items"][0]["id"].as_str().unwrap().to_owned(),
            "joined"
        )
    );
    assert_eq!(
        count(&c, "SELECT count(*) FROM tasklane.tasks").await,
        SAME.len() as i64 + 1
    );
}

#[tokio::test]
async fn a_different_request_under_one_identity_conflicts_through_either_door() {
    let (db, _serve, api) = start().await;
    let c = db.client().await;
    // Values that differ only in type or precision are different requests.
    let different: &[(&str, &str)] = &[
        (r#"{"n": 1}"#, r#"{"n": "1"}"#),
        (r#"{"n": 1.5}"#, r#"{"n": 1.25}"#),
        (r#"{"s": "é"}"#, "{\"s\": \"e\u{301}\"}"),
        (r#"[1, 2]"#, r#"[2, 1]"#),
        (r#"{"a": null}"#, r#"{}"#),
    ];
    for (n, (http_text, sql_text)) in different.iter().enumerate() {
        let key = format!("diff-{n}");
        let body = format!(
            r#"{{"task_type": "remote", "scope_id": "s", "effect_key": "{key}", "input": {http_text}}}"#
        );
        assert_eq!(api.post_raw("/v1/tasks", body).await.status, 202);
        let error = run_task(&c, "remote", "s", &key, sql_text, "")
            .await
            .expect_err(sql_text);
        assert_eq!(
            refusal(&error),
            ("TL409".into(), "idempotency_conflict".into(), None),
            "{http_text} / {sql_text}"
        );
    }
    // The same input with another resolved option conflicts too; through HTTP, a task
    // the SQL door created conflicts with a different HTTP request.
    let (_, created) = run_task(&c, "remote", "s", "opts", "{}", ", priority => 5")
        .await
        .unwrap();
    assert_eq!(created, "created");
    let answer = api
        .submit("remote", "s", "opts", json!({"priority": 4}))
        .await;
    assert_eq!(
        (answer.status, answer.code()),
        (409, "idempotency_conflict")
    );
    let (_, joined) = run_task(&c, "remote", "s", "opts", "{}", ", priority => 5")
        .await
        .unwrap();
    assert_eq!(joined, "joined");
}

#[tokio::test]
async fn bad_input_is_refused_with_the_http_codes_and_writes_nothing() {
    let (db, _serve, api) = start().await;
    let c = db.client().await;
    let long = "x".repeat(201);
    let cases: Vec<(&str, &str, String, &str, Option<&str>)> = vec![
        (
            "nope",
            "s",
            "{}".into(),
            "unknown_task_type",
            Some("task_type"),
        ),
        (
            "remote",
            "",
            "{}".into(),
            "validation_failed",
            Some("scope_id"),
        ),
        (
            "remote",
            &long,
            "{}".into(),
            "validation_failed",
            Some("scope_id"),
        ),
        (
            "remote",
            "s",
            "1e301".into(),
            "validation_failed",
            Some("input"),
        ),
        (
            "remote",
            "s",
            format!("\"{}\"", "x".repeat(1024 * 1024)),
            "validation_failed",
            Some("input"),
        ),
    ];
    for (task_type, scope, input, code, column) in &cases {
        let error = run_task(&c, task_type, scope, "k", input, "")
            .await
            .unwrap_err();
        assert_eq!(
            refusal(&error),
            ("TL422".into(), code.to_string(), column.map(String::from)),
            "{task_type} {scope:.10} {input:.20}"
        );
    }
    for (extra, column) in [
        (", priority => 101", "priority"),
        (", max_attempts => 26", "max_attempts"),
        (", max_attempts => 0", "max_attempts"),
        (", deadline_seconds => 0", "deadline_seconds"),
        (", deadline_seconds => 604801", "deadline_seconds"),
        (", on_restart => 'later'", "on_restart"),
        (", privacy => 'public'", "privacy"),
        (", source_id => ''", "source_id"),
        (", usage_subject => repeat('u', 201)", "usage_subject"),
    ] {
        let error = run_task(&c, "remote", "s", "k", "{}", extra)
            .await
            .unwrap_err();
        assert_eq!(
            refusal(&error),
            (
                "TL422".into(),
                "validation_failed".into(),
                Some(column.to_owned())
            ),
            "{extra}"
        );
    }
    // A fenced scope: 410 through HTTP, TL410 here.
    c.execute(
        "SELECT tasklane.delete_tasks($1, 'fenced', NULL, true)",
        &[&APP],
    )
    .await
    .unwrap();
    let error = run_task(&c, "remote", "fenced", "k", "{}", "")
        .await
        .unwrap_err();
    assert_eq!(
        refusal(&error),
        ("TL410".into(), "scope_deleted".into(), None)
    );
    // An emergency stop: 503 through HTTP, TL503 here, with the wait in the hint.
    let stop = api
        .send(
            api.http
                .put(format!("{}/v1/admin/emergency-stop", api.base))
                .json(&json!({"enabled": true, "app": APP})),
        )
        .await;
    assert_eq!(stop.status, 200, "{:?}", stop.body);
    let error = run_task(&c, "remote", "s", "k", "{}", "")
        .await
        .unwrap_err();
    assert_eq!(
        refusal(&error),
        ("TL503".into(), "emergency_stop".into(), None)
    );
    assert_eq!(
        error.as_db_error().unwrap().hint(),
        Some("retry after 60 seconds")
    );
    assert_eq!(count(&c, "SELECT count(*) FROM tasklane.tasks").await, 0);
}

#[tokio::test]
async fn the_callers_transaction_decides_and_a_commit_wakes_a_worker() {
    let (db, _serve, api) = start().await;
    let mut c = db.client().await;
    let tx = c.transaction().await.unwrap();
    tx.execute("CREATE TABLE app_orders (id int PRIMARY KEY)", &[])
        .await
        .unwrap();
    let row = tx
        .query_one(
            "SELECT task_id, outcome FROM tasklane.run_task($1, 'noop', 's', 'rolled', '{\"x\": 1}')",
            &[&APP],
        )
        .await
        .unwrap();
    assert_eq!(row.get::<_, String>(1), "created");
    tx.rollback().await.unwrap();
    assert_eq!(count(&c, "SELECT count(*) FROM tasklane.tasks").await, 0);

    let tx = c.transaction().await.unwrap();
    let row = tx
        .query_one(
            "SELECT task_id FROM tasklane.run_task($1, 'noop', 's', 'committed', '{\"x\": 1}')",
            &[&APP],
        )
        .await
        .unwrap();
    let id: uuid::Uuid = row.get(0);
    tx.commit().await.unwrap();
    // The in-process worker runs it (noop: the result is the input).
    let done = eventually(
        Duration::from_secs(20),
        "the committed task succeeds",
        || {
            let api = api.clone();
            async move {
                let task = api.get(&format!("/v1/tasks/{id}")).await.body;
                (task["state"] == "succeeded").then_some(task)
            }
        },
    )
    .await;
    assert_eq!(done["result"], json!({"x": 1}));
    // Run again after it finished: replayed, the same task.
    let row = c
        .query_one(
            "SELECT task_id, outcome FROM tasklane.run_task($1, 'noop', 's', 'committed', '{\"x\": 1}')",
            &[&APP],
        )
        .await
        .unwrap();
    assert_eq!(
        (row.get::<_, uuid::Uuid>(0), row.get::<_, String>(1)),
        (id, "replayed".to_owned())
    );
}

/// The wake-up is a NOTIFY delivered at commit, never for a rollback.
#[tokio::test]
async fn run_task_notifies_the_workers_at_commit_only() {
    let (db, _serve, _api) = start().await;
    let (listener, mut notifications) = listen(&db.url, "tasklane_wakeup").await;
    let mut c = db.client().await;
    let tx = c.transaction().await.unwrap();
    tx.execute(
        "SELECT tasklane.run_task($1, 'remote', 's', 'r', '{}')",
        &[&APP],
    )
    .await
    .unwrap();
    tx.rollback().await.unwrap();
    let tx = c.transaction().await.unwrap();
    tx.execute(
        "SELECT tasklane.run_task($1, 'remote', 's', 'c', '{}')",
        &[&APP],
    )
    .await
    .unwrap();
    // A marker sent after the rollback and before the commit: the first notification
    // received must be the marker, so the rollback sent nothing.
    let other = db.client().await;
    other
        .execute("NOTIFY tasklane_wakeup, 'marker'", &[])
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let first = notifications.recv().await.expect("a notification");
    assert_eq!(first, "marker");
    let second = notifications.recv().await.expect("the commit's wake-up");
    assert_eq!(second, "");
    drop(listener);
}

/// The two spellings of the SQL door that are promised to work: `queue_task` with the
/// `p_` names every SQL API function takes, and `run_task` with its unprefixed names,
/// each by name and by position. They are one door: each spelling's second call of an
/// identity joins the task its first call created, whichever spelling made it.
#[tokio::test]
async fn queue_task_takes_the_p_names_and_run_task_keeps_its_own() {
    let (db, _serve, _api) = start().await;
    let c = db.client().await;
    let calls = [
        (
            "queue_task by name",
            "SELECT task_id, outcome FROM tasklane.queue_task(p_app => $1,
                 p_task_type => 'remote', p_scope_id => 's', p_effect_key => $2,
                 p_input => '{\"n\": 1}', p_priority => 3)",
        ),
        (
            "queue_task by position",
            "SELECT task_id, outcome FROM tasklane.queue_task($1, 'remote', 's', $2,
                 '{\"n\": 1}', NULL, NULL, 3)",
        ),
        (
            "run_task by name",
            "SELECT task_id, outcome FROM tasklane.run_task(app => $1, task_type => 'remote',
                 scope_id => 's', effect_key => $2, input => '{\"n\": 1}', priority => 3)",
        ),
        (
            "run_task by position",
            "SELECT task_id, outcome FROM tasklane.run_task($1, 'remote', 's', $2,
                 '{\"n\": 1}', NULL, NULL, 3)",
        ),
    ];
    for (i, (first, first_sql)) in calls.iter().enumerate() {
        let key = format!("spelling-{i}");
        let row = c.query_one(*first_sql, &[&APP, &key]).await.expect(first);
        let (id, outcome): (uuid::Uuid, String) = (row.get(0), row.get(1));
        assert_eq!(outcome, "created", "{first}");
        for (again, again_sql) in &calls {
            let row = c.query_one(*again_sql, &[&APP, &key]).await.expect(again);
            let (joined, outcome): (uuid::Uuid, String) = (row.get(0), row.get(1));
            assert_eq!(
                (joined, outcome.as_str()),
                (id, "joined"),
                "{first}, then {again}"
            );
        }
    }
    // The old names are not the new function's, nor the new names the old one's.
    for sql in [
        "SELECT * FROM tasklane.queue_task(app => 'a', task_type => 'remote', scope_id => 's',
             effect_key => 'k', input => '{}')",
        "SELECT * FROM tasklane.run_task(p_app => 'a', p_task_type => 'remote',
             p_scope_id => 's', p_effect_key => 'k', p_input => '{}')",
    ] {
        let error = c.batch_execute(sql).await.expect_err(sql);
        assert_eq!(
            error.code(),
            Some(&tokio_postgres::error::SqlState::UNDEFINED_FUNCTION),
            "{sql}: {error}"
        );
    }
    // A refusal reads the same through either spelling.
    for sql in [
        "SELECT * FROM tasklane.queue_task(p_app => $1, p_task_type => 'remote',
             p_scope_id => 's', p_effect_key => 'bad', p_input => '{}', p_priority => 101)",
        "SELECT * FROM tasklane.run_task(app => $1, task_type => 'remote', scope_id => 's',
             effect_key => 'bad', input => '{}', priority => 101)",
    ] {
        let error = c.query_one(sql, &[&APP]).await.expect_err(sql);
        assert_eq!(
            refusal(&error),
            (
                "TL422".to_owned(),
                "validation_failed".to_owned(),
                Some("priority".to_owned())
            ),
            "{sql}"
        );
    }
}

/// Every SECURITY DEFINER function the role may execute, sorted.
async fn callable(c: &Client) -> Vec<String> {
    c.query(
        "SELECT p.proname::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
         WHERE n.nspname = 'tasklane' AND p.prosecdef
           AND has_function_privilege('tasklane_app', p.oid, 'EXECUTE')
         ORDER BY 1",
        &[],
    )
    .await
    .unwrap()
    .iter()
    .map(|r| r.get(0))
    .collect()
}

#[tokio::test]
async fn the_tasklane_app_role_may_call_the_sql_api_and_nothing_else() {
    let (db, _serve, _api) = start().await;
    let c = db.client().await;
    assert_eq!(
        callable(&c).await,
        [
            "delete_tasks",
            "lift_fence",
            "list_unreleased_sources",
            "queue_task",
            "release_task",
            "release_task_at",
            "run_task"
        ]
    );
    let tables: i64 = count(
        &c,
        "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = 'tasklane' AND c.relkind IN ('r', 'v', 'p')
           AND has_table_privilege('tasklane_app', c.oid, 'SELECT,INSERT,UPDATE,DELETE')",
    )
    .await;
    assert_eq!(tables, 0);
    c.batch_execute("SET ROLE tasklane_app").await.unwrap();
    let (id, outcome) = run_task(&c, "remote", "s", "as-app", "{}", "")
        .await
        .unwrap();
    assert_eq!(outcome, "created");
    let released: bool = c
        .query_one("SELECT tasklane.release_task($1, 's', 'as-app')", &[&APP])
        .await
        .unwrap()
        .get(0);
    assert!(released);
    for sql in [
        "SELECT count(*) FROM tasklane.tasks",
        "SELECT count(*) FROM tasklane.registered_task_types",
        "DELETE FROM tasklane.task_events",
        "SELECT * FROM tasklane.submit_task(gen_random_uuid(), 'a', 's', 'k', NULL, NULL, 'remote', '\\x00', '{}', 0::int2, 1, 'fail', 'local_only', 1, 1, NULL, NULL, NULL)",
    ] {
        let error = c.batch_execute(sql).await.expect_err(sql);
        assert_eq!(
            error.code(),
            Some(&tokio_postgres::error::SqlState::INSUFFICIENT_PRIVILEGE),
            "{sql}: {error}"
        );
    }
    c.batch_execute("RESET ROLE").await.unwrap();
    let deleted: i64 = c
        .query_one("SELECT tasklane.delete_tasks($1, 's')", &[&APP])
        .await
        .unwrap()
        .get(0);
    assert_eq!(deleted, 1, "{id}");
}

/// A task from before V12 keeps its 32-byte (Rust, serde_json) digest: the HTTP door
/// still sends that digest after the canonical one, so a resubmit joins it; the SQL
/// door has only the canonical digest and answers a conflict (docs/sql-api.md).
#[tokio::test]
async fn tasks_from_before_v12_keep_their_identity_over_http() {
    let (db, _serve, api) = start().await;
    let c = db.client().await;
    let first = api
        .submit("remote", "s", "old", json!({"input": {"n": 1.0}}))
        .await;
    assert_eq!(first.status, 202);
    let made_legacy = c
        .execute(
            "UPDATE tasklane.tasks SET request_digest = tasklane.digest_legacy(request_digest)",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(made_legacy, 1);
    assert_eq!(
        count(
            &c,
            "SELECT octet_length(request_digest)::int8 FROM tasklane.tasks"
        )
        .await,
        32
    );
    let again = api
        .submit("remote", "s", "old", json!({"input": {"n": 1.0}}))
        .await;
    assert_eq!((again.status, &again.body["id"]), (202, &first.body["id"]));
    let changed = api
        .submit("remote", "s", "old", json!({"input": {"n": 2}}))
        .await;
    assert_eq!(changed.code(), "idempotency_conflict");
    let error = run_task(&c, "remote", "s", "old", r#"{"n": 1}"#, "")
        .await
        .unwrap_err();
    assert_eq!(refusal(&error).1, "idempotency_conflict");
}
