//! The attempt record: one row per attempt written by the statement that
//! ends it (complete, settle, lost leases, hand back, the in-process timeout and the
//! server's attempt deadline), with its provenance and usage; budgets charged from
//! attempts (failed ones too, never on a replay); the view's usage and provenance; the
//! attempts route with its redaction for scope tokens; pruning and owner deletion.

use crate::common;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use common::api::{self, ALL};
use common::eventually;
use common::fixtures::*;
use common::in_process::InProcess;
use common::serve::Options;
use serde_json::json;
use tasklane::service::{Owner, Reported, SubmitOutcome, Success};
use tasklane::store::lease;
use tasklane::task::attempt::{Facts, Provenance, Usage};
use tasklane::task::settlement::Report;
use tasklane::task::{Executor, Locality, TaskState, TaskType};
use tasklane::worker::{Handler, HandlerError, TaskContext, WorkerConfig};
use tokio_postgres::Client;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

fn usage(input: i64, output: i64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        total_tokens: input + output,
    }
}

fn facts(route_name: &str, usage: Option<Usage>) -> Facts {
    Facts {
        provenance: Some(Provenance {
            provider: "vllm".into(),
            model: format!("model-of-{route_name}"),
            locality: Locality::Local,
            route_name: route_name.into(),
            response_model: Some(format!("answer-of-{route_name}")),
            system_fingerprint: Some("fp_test".into()),
        }),
        usage,
    }
}

/// The attempt rows of a task as `(attempt, outcome, error_code, total_tokens)`.
async fn attempts(c: &Client, id: Uuid) -> Vec<(i32, String, Option<String>, Option<i64>)> {
    c.query(
        "SELECT attempt, outcome, error_code, total_tokens FROM tasklane.task_attempts
         WHERE task_id = $1 ORDER BY attempt",
        &[&id],
    )
    .await
    .unwrap()
    .iter()
    .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
    .collect()
}

/// The budget units charged to `subject` ('' for the app's background budget).
async fn charged(c: &Client, subject: &str) -> i64 {
    c.query_one(
        "SELECT coalesce(sum(units), 0)::int8 FROM tasklane.budget_usage
         WHERE app = $1 AND usage_subject = $2",
        &[&APP, &subject],
    )
    .await
    .unwrap()
    .get(0)
}

fn reported(report: Report, facts: Facts) -> Reported {
    Reported {
        report,
        facts,
        usage_units: None,
    }
}

fn retryable() -> Report {
    Report::Error {
        code: "boom".into(),
        message: "try again".into(),
        retryable: true,
        retry_after: None,
    }
}

#[tokio::test]
async fn settled_attempts_keep_their_facts_and_charge_their_usage_once() {
    let db = common::test_db().await;
    let mut c = db.client().await;
    let edit = |r: &mut tasklane::task::SubmitRequest| r.usage_subject = Some("user-9".into());
    let task = submit_with(&c, "k1", json!({}), edit).await;

    // Attempt 1 fails retryably after the provider reported 7 tokens: they are charged.
    let first = claim_one(&c).await;
    let failed = reported(retryable(), facts("local-vllm", Some(usage(3, 4))));
    let state = lease::settle_with(
        &mut c,
        first.id,
        first.lease_token,
        failed,
        rules(&fast_backoff()),
    )
    .await
    .unwrap();
    assert_eq!(state.state, TaskState::WaitingForRetry);
    assert!(
        state.claimable_in.is_some(),
        "a retry says when it is claimable again"
    );
    assert_eq!(charged(&c, "user-9").await, 7);

    // Attempt 2 succeeds with 15 tokens.
    make_due(&c, task.id).await;
    let second = claim_one(&c).await;
    let success = Success {
        result: json!({"ok": true}),
        facts: facts("openai", Some(usage(10, 5))),
        ..Default::default()
    };
    lease::complete(&c, second.id, second.lease_token, &success)
        .await
        .unwrap();
    assert_eq!(
        attempts(&c, task.id).await,
        vec![
            (1, "retry".into(), Some("handler_error".into()), Some(7)),
            (2, "succeeded".into(), None, Some(15)),
        ]
    );
    assert_eq!(charged(&c, "user-9").await, 22);
    // Both statements that ended them kept what the provider said answered.
    let answered: Vec<(Option<String>, Option<String>)> = c
        .query(
            "SELECT response_model, system_fingerprint FROM tasklane.task_attempts
             WHERE task_id = $1 ORDER BY attempt",
            &[&task.id],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let fingerprint = Some("fp_test".to_owned());
    assert_eq!(
        answered,
        vec![
            (Some("answer-of-local-vllm".into()), fingerprint.clone()),
            (Some("answer-of-openai".into()), fingerprint),
        ]
    );
    let row = c
        .query_one(
            "SELECT route, route_name, provider, model, worker_id, started_at <= finished_at
             FROM tasklane.task_attempts WHERE task_id = $1 AND attempt = 2",
            &[&task.id],
        )
        .await
        .unwrap();
    let row: (String, String, String, String, String, bool) = (
        row.get(0),
        row.get(1),
        row.get(2),
        row.get(3),
        row.get(4),
        row.get(5),
    );
    assert_eq!(
        row,
        (
            "local".into(),
            "openai".into(),
            "vllm".into(),
            "model-of-openai".into(),
            "test-worker".into(),
            true
        )
    );

    // The view sums the usage and shows the last attempt's provenance.
    let tasklane = common::service::tasklane(db.pool.clone(), [task_type()]);
    let view = tasklane.get(&Owner::app(APP), task.id).await.unwrap();
    let summary = view.attempts.expect("a read fills the attempt summary");
    assert_eq!(summary.usage, Some(usage(13, 9)));
    assert_eq!(summary.route_name.as_deref(), Some("openai"));
    assert_eq!(summary.response_model.as_deref(), Some("answer-of-openai"));
    assert_eq!(summary.system_fingerprint.as_deref(), Some("fp_test"));

    // A replay of the identity joins the finished task: no attempt, no charge.
    let again = try_submit(&c, &{
        let mut r = request("k1", json!({}));
        edit(&mut r);
        r
    })
    .await
    .unwrap();
    assert_eq!(
        (again.task.id, again.outcome),
        (task.id, SubmitOutcome::Existing)
    );
    assert_eq!(charged(&c, "user-9").await, 22);
    assert_eq!(attempts(&c, task.id).await.len(), 2);
}

#[tokio::test]
async fn lost_handed_back_cancelled_and_unit_charged_attempts_are_recorded() {
    let db = common::test_db().await;
    let mut c = db.client().await;
    let tasklane = common::service::tasklane(db.pool.clone(), [task_type()]);

    // Lost: the lease expires and the rescuer requeues the task.
    let lost = submit(&c, "lost", json!({})).await;
    claim_one(&c).await;
    expire_lease(&c, lost.id).await;
    assert_eq!(rescue_expired(&c).await, 1);
    assert_eq!(get(&c, lost.id).await.state, TaskState::Queued);
    // Handed back: a replica shutting down gives the second attempt back.
    let second = claim_one(&c).await;
    tasklane
        .hand_back(second.id, second.lease_token)
        .await
        .unwrap();
    assert_eq!(
        attempts(&c, lost.id).await,
        vec![
            (1, "lost".into(), Some("lease_expired".into()), None),
            (2, "lost".into(), Some("server_restarted".into()), None),
        ]
    );

    // Cancelled: the owner's cancel acknowledged by the worker.
    let third = claim_one(&c).await;
    tasklane::store::cancel::cancel(&c, &Owner::app(APP), lost.id)
        .await
        .unwrap();
    let state = lease::settle(
        &mut c,
        third.id,
        third.lease_token,
        Report::Cancelled,
        &fast_backoff(),
    )
    .await
    .unwrap();
    assert_eq!(state, TaskState::Cancelled);
    assert_eq!(attempts(&c, lost.id).await[2].1, "cancelled");

    // Fallback: a local attempt gives an external_allowed task up to the external route.
    // (The snapshot is set in SQL: whether a type allowlists external routes is not
    // this test's business.)
    let fell = submit(&c, "fell", json!({})).await;
    c.execute(
        "UPDATE tasklane.tasks SET privacy = 'external_allowed' WHERE id = $1",
        &[&fell.id],
    )
    .await
    .unwrap();
    let local = claim_one(&c).await;
    let reason = Report::Fallback {
        reason: "local model down".into(),
    };
    let state = lease::settle_with(
        &mut c,
        local.id,
        local.lease_token,
        reported(reason, facts("local-vllm", None)),
        rules(&fast_backoff()),
    )
    .await
    .unwrap();
    assert_eq!(state.state, TaskState::WaitingForExternalFallback);
    assert_eq!(
        attempts(&c, fell.id).await,
        vec![(1, "fallback".into(), None, None)]
    );

    // A custom executor's own units are charged instead of tokens, on failure too.
    let units = submit(&c, "units", json!({})).await;
    let claimed = claim_one(&c).await;
    let permanent = Reported {
        report: Report::Error {
            code: "bad".into(),
            message: "no".into(),
            retryable: false,
            retry_after: None,
        },
        facts: Facts {
            provenance: None,
            usage: Some(usage(100, 100)),
        },
        usage_units: Some(5),
    };
    lease::settle_with(
        &mut c,
        claimed.id,
        claimed.lease_token,
        permanent,
        rules(&fast_backoff()),
    )
    .await
    .unwrap();
    assert_eq!(
        attempts(&c, units.id).await,
        vec![(
            1,
            "failed".into(),
            Some("permanent_error".into()),
            Some(200)
        )]
    );
    assert_eq!(charged(&c, "").await, 5);
}

#[tokio::test]
async fn an_owners_retry_keeps_counting_attempts_and_deletion_and_pruning_remove_them() {
    let db = common::test_db().await;
    let mut c = db.client().await;
    let tasklane = common::service::tasklane(db.pool.clone(), [task_type()]);
    let task = submit(&c, "retried", json!({})).await;
    let first = claim_one(&c).await;
    let permanent = Report::Error {
        code: "bad".into(),
        message: "no".into(),
        retryable: false,
        retry_after: None,
    };
    lease::settle(
        &mut c,
        first.id,
        first.lease_token,
        permanent,
        &fast_backoff(),
    )
    .await
    .unwrap();
    tasklane.retry(&Owner::app(APP), task.id).await.unwrap();
    let again = claim_one(&c).await;
    assert_eq!(again.attempt, 1, "a retry gives a fresh attempt budget");
    lease::complete(&c, again.id, again.lease_token, &Success::default())
        .await
        .unwrap();
    let numbers: Vec<(i32, String)> = attempts(&c, task.id)
        .await
        .into_iter()
        .map(|a| (a.0, a.1))
        .collect();
    assert_eq!(numbers, vec![(1, "failed".into()), (2, "succeeded".into())]);

    // Pruning takes the attempts with their task.
    c.execute(
        "UPDATE tasklane.tasks SET released_at = finished_at WHERE id = $1",
        &[&task.id],
    )
    .await
    .unwrap();
    let later = chrono::Utc::now() + chrono::Duration::days(2);
    let pruned =
        tasklane::store::prune::prune_tasks(&c, Duration::from_secs(60), 10, Some(later), None)
            .await
            .unwrap()
            .count;
    assert_eq!(pruned, 1);
    assert!(attempts(&c, task.id).await.is_empty());

    // So does the owner's deletion.
    let other = submit(&c, "deleted", json!({})).await;
    let claimed = claim_one(&c).await;
    lease::complete(&c, claimed.id, claimed.lease_token, &Success::default())
        .await
        .unwrap();
    assert_eq!(attempts(&c, other.id).await.len(), 1);
    let deleted: i64 = c
        .query_one("SELECT tasklane.delete_tasks($1, $2)", &[&APP, &SCOPE])
        .await
        .unwrap()
        .get(0);
    assert_eq!(deleted, 1);
    assert_eq!(
        count(&c, "SELECT count(*) FROM tasklane.task_attempts").await,
        0
    );
}

/// Records provenance and usage, then succeeds or hangs past its timeout as the input
/// says.
struct Recording;

#[async_trait::async_trait]
impl Handler for Recording {
    async fn run(&self, ctx: TaskContext) -> Result<Success, HandlerError> {
        ctx.set_provenance(facts("local-vllm", None).provenance.unwrap());
        ctx.add_usage(usage(1, 2));
        ctx.add_usage(usage(3, 4));
        if ctx.input()["hang"] == json!(true) {
            std::future::pending::<()>().await;
        }
        Ok(Success {
            result: json!({"done": true}),
            ..Default::default()
        })
    }
}

#[tokio::test]
async fn in_process_attempts_write_the_handlers_facts_on_success_and_timeout() {
    let db = common::test_db().await;
    let c = db.client().await;
    let mut task_type = TaskType::new(TYPE, Executor::Custom);
    task_type.attempt_timeout_seconds = 1;
    task_type.max_attempts = 1;
    let config = WorkerConfig {
        worker_id: "w".into(),
        replica_id: Uuid::now_v7(),
        locality: Locality::Local,
        concurrency: 4,
        claim_batch: 4,
        poll_interval: Duration::from_millis(50),
        polls: Default::default(),
        shutdown_grace: Duration::from_secs(5),
    };
    let worker = common::service::worker(
        db.pool.clone(),
        vec![task_type.clone()],
        HashMap::from([(TYPE.to_owned(), Arc::new(Recording) as Arc<dyn Handler>)]),
        config,
    );
    let shutdown = CancellationToken::new();
    let handle = tokio::spawn(worker.run(shutdown.clone()));
    let done = try_submit_as(&c, &request("done", json!({})), &task_type)
        .await
        .unwrap()
        .task;
    let hung = try_submit_as(&c, &request("hung", json!({"hang": true})), &task_type)
        .await
        .unwrap()
        .task;
    for id in [done.id, hung.id] {
        eventually(Duration::from_secs(20), "both tasks to end", || async {
            let task = get(&c, id).await;
            if task.state.is_terminal() {
                Ok(())
            } else {
                Err(task.state)
            }
        })
        .await;
    }
    shutdown.cancel();
    handle.await.unwrap();
    assert_eq!(
        attempts(&c, done.id).await,
        vec![(1, "succeeded".into(), None, Some(10))]
    );
    assert_eq!(
        attempts(&c, hung.id).await,
        vec![(
            1,
            "timed_out".into(),
            Some("attempt_timeout".into()),
            Some(10)
        )]
    );
    // The task is out of attempts; its last attempt timed out.
    assert_eq!(
        get(&c, hung.id).await.error_code.as_deref(),
        Some("attempts_exhausted")
    );
    let provider: String = c
        .query_one(
            "SELECT provider FROM tasklane.task_attempts WHERE task_id = $1",
            &[&hung.id],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(provider, "vllm", "a timed-out attempt keeps its provenance");
    assert_eq!(charged(&c, "").await, 20);
}

const REMOTE_TYPES: &str = r#"
[[task_type]]
name = "remote"
executor = "remote"
lease_seconds = 30
max_attempts = 2
privacy = "external_allowed"
external_allowed = true

[[task_type]]
name = "brief"
executor = "remote"
lease_seconds = 30
attempt_timeout_seconds = 1
max_attempts = 2
"#;

fn remote_options() -> Options {
    Options {
        task_types: Some(REMOTE_TYPES),
        env: vec![("TASKLANE_RESCUE_INTERVAL_MS", "100".into())],
        ..Options::default()
    }
}

#[tokio::test]
async fn remote_attempts_report_facts_and_scope_tokens_see_them_redacted() {
    let db = common::test_db().await;
    let serve = InProcess::start(&db.url, remote_options()).await;
    let mail = serve.api(&api::token(&db.url, "mail", None, ALL).await);
    let scoped = serve.api(&api::token(&db.url, "mail", Some("s1"), ALL).await);
    let c = db.client().await;
    let submitted = mail
        .submit("remote", "s1", "k1", json!({"usage_subject": "user-9"}))
        .await;
    let id = submitted.body["id"].as_str().unwrap().to_owned();
    let claim = json!({"worker_id": "w1", "task_types": ["remote"], "route": "local", "max": 1});
    let claimed = mail.post("/v1/worker/claim", &claim).await.body;
    let lease = claimed["tasks"][0]["lease_token"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(claimed["tasks"][0]["attempt_deadline_at"].is_string());

    // The running attempt is shown from the task row.
    let running = mail.get(&format!("/v1/tasks/{id}/attempts")).await.body;
    assert_eq!(running["items"].as_array().unwrap().len(), 1);
    assert_eq!(running["items"][0]["outcome"], "running");
    assert_eq!(running["items"][0]["route"], "local");
    assert!(running["items"][0]["finished_at"].is_null());

    // Bad shapes are refused and change nothing.
    for (body, field) in [
        (json!({"usage": {"input_tokens": -1}}), "usage.input_tokens"),
        (json!({"usage": {}}), "usage"),
        (json!({"provenance": {"route": "moon"}}), "provenance.route"),
        (json!({"provenance": {"model": ""}}), "provenance.model"),
    ] {
        let mut body = body;
        body["lease_token"] = json!(lease);
        body["result"] = json!({});
        let refused = mail
            .post(&format!("/v1/worker/tasks/{id}/complete"), &body)
            .await;
        assert_eq!(
            (refused.status, refused.code()),
            (422, "validation_failed"),
            "{body}"
        );
        assert!(refused.body.to_string().contains(field), "{}", refused.body);
    }
    let unknown = json!({"lease_token": lease, "result": {}, "usage": {"tokens": 1}});
    assert_eq!(
        mail.post(&format!("/v1/worker/tasks/{id}/complete"), &unknown)
            .await
            .status,
        422
    );

    // A failed attempt reports its usage and provenance; it is charged.
    let fail = json!({"lease_token": lease, "code": "upstream_503", "message": "secret text",
        "retryable": true, "usage": {"input_tokens": 2, "output_tokens": 3},
        "provenance": {"provider": "vllm", "model": "llama", "route_name": "local-vllm"}});
    let failed = mail
        .post(&format!("/v1/worker/tasks/{id}/fail"), &fail)
        .await;
    assert_eq!(
        (failed.status, failed.body["state"].as_str()),
        (200, Some("waiting_for_retry"))
    );
    make_due(&c, Uuid::parse_str(&id).unwrap()).await;
    let claimed = mail.post("/v1/worker/claim", &claim).await.body;
    let lease = claimed["tasks"][0]["lease_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let complete = json!({"lease_token": lease, "result": {"ok": true},
        "usage": {"total_tokens": 10},
        "provenance": {"provider": "openai", "model": "gpt", "route_name": "openai", "route": "external",
            "response_model": "gpt-2026-01-01", "system_fingerprint": "fp_1"}});
    assert_eq!(
        mail.post(&format!("/v1/worker/tasks/{id}/complete"), &complete)
            .await
            .status,
        200
    );
    assert_eq!(charged(&c, "user-9").await, 15);

    let listed = mail.get(&format!("/v1/tasks/{id}/attempts")).await.body;
    let items = listed["items"].as_array().unwrap();
    assert_eq!(items.len(), 2);
    assert_eq!(
        (
            &items[0]["attempt"],
            &items[0]["outcome"],
            &items[0]["provider"]
        ),
        (&json!(1), &json!("retry"), &json!("vllm"))
    );
    assert_eq!(items[0]["route_name"], "local-vllm");
    assert_eq!(items[0]["error"]["code"], "handler_error");
    assert!(items[0]["error"]["message"]
        .as_str()
        .unwrap()
        .contains("secret text"));
    assert_eq!(
        items[0]["usage"],
        json!({"input_tokens": 2, "output_tokens": 3, "total_tokens": 5})
    );
    // The claim's route is recorded, whatever the worker says.
    assert_eq!(
        (&items[1]["outcome"], &items[1]["route"], &items[1]["model"]),
        (&json!("succeeded"), &json!("local"), &json!("gpt"))
    );
    assert_eq!(
        (&items[1]["response_model"], &items[1]["system_fingerprint"]),
        (&json!("gpt-2026-01-01"), &json!("fp_1"))
    );
    assert!(items[0]["response_model"].is_null() && items[0]["system_fingerprint"].is_null());
    assert!(items[1]["error"].is_null());

    let view = mail.get(&format!("/v1/tasks/{id}")).await.body;
    assert_eq!(
        view["usage"],
        json!({"input_tokens": 2, "output_tokens": 3, "total_tokens": 15, "units": 15})
    );
    assert_eq!(
        view["provenance"],
        json!({"provider": "openai", "model": "gpt", "route": "local", "route_name": "openai",
            "response_model": "gpt-2026-01-01", "system_fingerprint": "fp_1"})
    );
    // A replay shows the same and charges nothing.
    let replay = mail
        .submit("remote", "s1", "k1", json!({"usage_subject": "user-9"}))
        .await;
    assert_eq!(replay.status, 200);
    assert_eq!(replay.body["usage"], view["usage"]);
    assert_eq!(charged(&c, "user-9").await, 15);

    // Scope tokens: no provider, model, route, route name or message; no usage or
    // provenance in the view.
    let redacted = scoped.get(&format!("/v1/tasks/{id}/attempts")).await.body;
    for item in redacted["items"].as_array().unwrap() {
        for hidden in [
            "provider",
            "model",
            "route",
            "route_name",
            "response_model",
            "system_fingerprint",
        ] {
            assert!(item.get(hidden).is_none(), "{hidden} shown: {item}");
        }
    }
    assert_eq!(
        redacted["items"][0]["error"],
        json!({"code": "handler_error"})
    );
    assert!(!redacted.to_string().contains("secret text"));
    let view = scoped.get(&format!("/v1/tasks/{id}")).await.body;
    for hidden in ["usage", "provenance"] {
        assert!(view.get(hidden).is_none(), "{hidden} shown: {view}");
    }
    let other = serve.api(&api::token(&db.url, "inventory", None, ALL).await);
    assert_eq!(
        other.get(&format!("/v1/tasks/{id}/attempts")).await.status,
        404
    );
    let doc = mail.get("/openapi.json").await.body;
    assert!(doc["paths"].get("/v1/tasks/{id}/attempts").is_some());
}

#[tokio::test]
async fn the_server_times_out_a_remote_attempt_at_its_deadline() {
    let db = common::test_db().await;
    let serve = InProcess::start(&db.url, remote_options()).await;
    let mail = serve.api(&api::token(&db.url, "mail", None, ALL).await);
    let submitted = mail.submit("brief", "s1", "k1", json!({})).await;
    let id = submitted.body["id"].as_str().unwrap().to_owned();
    let claim = json!({"worker_id": "w1", "task_types": ["brief"], "route": "local", "max": 1});
    let claimed = mail.post("/v1/worker/claim", &claim).await.body;
    let task = &claimed["tasks"][0];
    let lease = task["lease_token"].as_str().unwrap().to_owned();
    let deadline: chrono::DateTime<chrono::Utc> =
        serde_json::from_value(task["attempt_deadline_at"].clone()).unwrap();
    let expires: chrono::DateTime<chrono::Utc> =
        serde_json::from_value(task["lease_expires_at"].clone()).unwrap();
    assert!(expires <= deadline, "the lease never outlives the deadline");

    // The worker heartbeats on, but the deadline holds: the sweep retries the task.
    let view = eventually(Duration::from_secs(20), "the attempt to time out", || {
        let mail = &mail;
        let id = &id;
        let lease = &lease;
        async move {
            let beat = json!({"lease_token": lease});
            mail.post(&format!("/v1/worker/tasks/{id}/heartbeat"), &beat)
                .await;
            let view = mail.get(&format!("/v1/tasks/{id}")).await.body;
            if view["state"] == "waiting_for_retry" {
                Ok(view)
            } else {
                Err(view["state"].clone())
            }
        }
    })
    .await;
    assert_eq!(view["error"]["code"], "attempt_timeout");
    let late = json!({"lease_token": lease, "result": {}});
    let refused = mail
        .post(&format!("/v1/worker/tasks/{id}/complete"), &late)
        .await;
    assert_eq!((refused.status, refused.code()), (409, "lease_lost"));
    let attempts = mail.get(&format!("/v1/tasks/{id}/attempts")).await.body;
    assert_eq!(attempts["items"][0]["outcome"], "timed_out");
    assert_eq!(attempts["items"][0]["error"]["code"], "attempt_timeout");
    assert_eq!(attempts["items"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn a_complete_past_the_deadline_is_refused_before_any_sweep() {
    let db = common::test_db().await;
    let c = db.client().await;
    submit(&c, "late", json!({})).await;
    let claimed = claim_one(&c).await;
    c.execute(
        "UPDATE tasklane.tasks SET attempt_deadline_at = now() - interval '1 second'
         WHERE id = $1",
        &[&claimed.id],
    )
    .await
    .unwrap();
    let late = lease::complete(&c, claimed.id, claimed.lease_token, &Success::default()).await;
    assert!(matches!(late, Err(tasklane::store::LeaseError::Lost)));
    assert!(attempts(&c, claimed.id).await.is_empty());
    // A failure reported past the deadline ends the attempt as timed out.
    let mut c = c;
    let state = lease::settle(
        &mut c,
        claimed.id,
        claimed.lease_token,
        retryable(),
        &fast_backoff(),
    )
    .await
    .unwrap();
    assert_eq!(state, TaskState::WaitingForRetry);
    assert_eq!(
        attempts(&c, claimed.id).await,
        vec![(1, "timed_out".into(), Some("attempt_timeout".into()), None)]
    );
}
