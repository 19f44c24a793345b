//! Routes in order within an attempt, the fallback to external routes on one default
//! replica, `local_only` tasks that never leave, the attempt cap on a fallback,
//! cancellation of a call in flight, and what a submit may ask of an openai type.

use std::time::Duration;

use serde_json::json;
use tasklane::mockllm::{MockLlm, Reply};

use super::{events, openai_type, replica, state_code, submit, terminal, until_calls, R};
use crate::common;

/// A type `name` with one local route (model `{name}-l`) and one external route
/// (model `{name}-x`), both on `mock`.
fn two_routes(name: &str, extra: &str, mock: &MockLlm) -> String {
    let base = mock.base_url();
    openai_type(
        name,
        &format!("external_allowed = true\n{extra}"),
        &[
            R {
                name: &format!("{name}-local"),
                kind: "local",
                model: &format!("{name}-l"),
                base_url: &base,
            },
            R {
                name: &format!("{name}-external"),
                kind: "external",
                model: &format!("{name}-x"),
                base_url: &base,
            },
        ],
        None,
    )
}

#[tokio::test]
async fn local_routes_in_order_then_fallback_to_external_on_one_replica() {
    let db = common::test_db().await;
    let mock = MockLlm::start().await.unwrap();
    let base = mock.base_url();
    let ordered = openai_type(
        "ordered",
        "",
        &[
            R {
                name: "first",
                kind: "local",
                model: "first",
                base_url: &base,
            },
            R {
                name: "second",
                kind: "local",
                model: "second",
                base_url: &base,
            },
        ],
        None,
    );
    let types = [
        ordered,
        two_routes("shared", "max_attempts = 3", &mock),
        two_routes("private", "max_attempts = 2", &mock),
        two_routes("last", "max_attempts = 1", &mock),
    ]
    .concat();
    mock.set_default("first", Reply::status(503, "down", None));
    for name in ["shared", "private", "last"] {
        mock.set_default(&format!("{name}-l"), Reply::status(503, "down", None));
        mock.set_default(
            &format!("{name}-x"),
            Reply::completion("from outside", 3, 4),
        );
    }
    let (_serve, api) = replica(&db, types, Vec::new()).await;

    // Two local routes: the second answers within the same attempt.
    let id = submit(&api, "ordered", "o", json!({})).await;
    let task = terminal(&api, &id).await;
    assert_eq!(
        (state_code(&task).0.as_str(), task["attempt"].as_i64()),
        ("succeeded", Some(1))
    );
    assert_eq!((mock.calls("first"), mock.calls("second")), (1, 1));

    // external_allowed: the local route fails, the next attempt runs externally.
    let id = submit(&api, "shared", "s", json!({"privacy": "external_allowed"})).await;
    let task = terminal(&api, &id).await;
    assert_eq!(state_code(&task).0, "succeeded", "{task}");
    assert_eq!(task["attempt"], 2);
    assert_eq!(task["result"]["message"]["content"], "from outside");
    assert_eq!((mock.calls("shared-l"), mock.calls("shared-x")), (1, 1));
    let seen = events(&api, &id).await;
    let fell = seen
        .iter()
        .position(|e| e == "task.waiting_for_external_fallback");
    assert!(fell.is_some(), "{seen:?}");

    // local_only (the type's default): retried locally, then no_fallback_allowed.
    let id = submit(&api, "private", "p", json!({})).await;
    let task = terminal(&api, &id).await;
    assert_eq!(
        state_code(&task),
        ("failed".into(), Some("no_fallback_allowed".into()))
    );
    assert_eq!((mock.calls("private-l"), mock.calls("private-x")), (2, 0));

    // A fallback on the last attempt would be one attempt too many.
    let id = submit(&api, "last", "l", json!({"privacy": "external_allowed"})).await;
    let task = terminal(&api, &id).await;
    assert_eq!(
        state_code(&task),
        ("failed".into(), Some("attempts_exhausted".into()))
    );
    assert_eq!(task["attempt"], 1);
    assert_eq!(mock.calls("last-x"), 0);
}

#[tokio::test]
async fn cancel_during_a_slow_call_aborts_it() {
    let db = common::test_db().await;
    let mock = MockLlm::start().await.unwrap();
    let types = super::local_type("slow", "lease_seconds = 3", &mock, "slow");
    mock.set_default("slow", Reply::ok().after(Duration::from_secs(120)));
    let (_serve, api) = replica(&db, types, Vec::new()).await;
    let id = submit(&api, "slow", "c", json!({})).await;
    until_calls(&mock, "slow", 1).await;
    assert_eq!(mock.disconnects(), 0);
    let answer = api
        .post(&format!("/v1/tasks/{id}/cancel"), &json!({}))
        .await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    let task = terminal(&api, &id).await;
    assert_eq!(state_code(&task), ("cancelled".into(), None));
    common::eventually(
        Duration::from_secs(10),
        "the mock to see the hang-up",
        || async {
            if mock.disconnects() == 1 {
                Ok(())
            } else {
                Err(mock.disconnects())
            }
        },
    )
    .await;
    assert_eq!((mock.calls("slow"), mock.answered()), (1, 0));
}

#[tokio::test]
async fn a_submit_may_narrow_privacy_but_never_widen_it_and_sends_a_chat_body() {
    let db = common::test_db().await;
    let mock = MockLlm::start().await.unwrap();
    let types = [
        super::local_type("closed", "", &mock, "closed"),
        two_routes("open", "", &mock),
    ]
    .concat();
    let (_serve, api) = replica(&db, types, Vec::new()).await;
    let refused = |body: serde_json::Value, field: &'static str| {
        let api = api.clone();
        async move {
            let answer = api.submit("closed", "s", "k", body).await;
            assert_eq!(
                (answer.status, answer.code()),
                (422, "validation_failed"),
                "{field}: {:?}",
                answer.body
            );
            assert!(
                answer.body["detail"].as_str().unwrap_or("").contains(field),
                "{field}: {:?}",
                answer.body
            );
        }
    };
    refused(
        json!({"input": super::chat(), "privacy": "external_allowed"}),
        "privacy",
    )
    .await;
    let mut model = super::chat();
    model["model"] = "gpt-4".into();
    refused(json!({"input": model}), "input.model").await;
    let mut stream = super::chat();
    stream["stream"] = true.into();
    refused(json!({"input": stream}), "input.stream").await;
    refused(json!({"input": {"prompt": "hi"}}), "input.messages").await;
    // Narrowing is allowed on an allowlisted type, and widening too (it allowlists).
    submit(&api, "open", "narrow", json!({"privacy": "local_only"})).await;
    submit(&api, "open", "wide", json!({"privacy": "external_allowed"})).await;
    submit(&api, "closed", "ok", json!({"privacy": "local_only"})).await;
}
