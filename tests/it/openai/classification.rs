//! Every row of the contract's classification, against the mock: each asserts the
//! task's state and error code and the number of upstream calls. One replica serves a
//! type per row, each calling a model of its own on one mock.

use std::time::Duration;

use serde_json::json;
use tasklane::mockllm::{answered_by, MockLlm, Reply, SYSTEM_FINGERPRINT};

use super::{local_type, replica, state_code, submit, terminal, until_calls};
use crate::common::{self, fixtures};

/// The secret the keyed type sends; it must never come back in a task view.
const KEY: &str = "sk-test-0123456789abcdefSECRET";

#[tokio::test]
async fn every_classification_row() {
    let db = common::test_db().await;
    let mock = MockLlm::start().await.unwrap();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed_url = format!("http://{}/v1", closed.local_addr().unwrap());
    drop(closed); // nothing listens there now: connection refused
    let key_file = std::env::temp_dir().join(format!("tasklane-key-{}", uuid::Uuid::new_v4()));
    std::fs::write(&key_file, format!("{KEY}\n")).unwrap();
    let keyed = super::openai_type(
        "rejected",
        "max_attempts = 3",
        &[super::R {
            name: "rejected-local",
            kind: "local",
            model: "rejected",
            base_url: &mock.base_url(),
        }],
        Some(&key_file.to_string_lossy()),
    );
    let types = [
        local_type("ok", "", &mock, "ok"),
        local_type("flaky", "max_attempts = 3", &mock, "flaky"),
        local_type("down", "max_attempts = 2", &mock, "down"),
        local_type("limited", "max_attempts = 2", &mock, "limited"),
        local_type("limited_ms", "max_attempts = 2", &mock, "limited_ms"),
        local_type("quota", "max_attempts = 3", &mock, "quota"),
        keyed,
        local_type("malformed", "max_attempts = 2", &mock, "malformed"),
        local_type("conflict", "max_attempts = 2", &mock, "conflict"),
        local_type(
            "slow",
            "max_attempts = 1\nattempt_timeout_seconds = 2",
            &mock,
            "slow",
        ),
        super::openai_type(
            "refused",
            "max_attempts = 1",
            &[super::R {
                name: "refused-local",
                kind: "local",
                model: "refused",
                base_url: &closed_url,
            }],
            None,
        ),
    ]
    .concat();
    mock.script("flaky", [Reply::status(500, "boom", None)]);
    mock.set_default("down", Reply::status(503, "overloaded", None));
    mock.script("limited", [Reply::rate_limited(60)]);
    mock.script(
        "limited_ms",
        [Reply::status(429, "slow down", None).header("retry-after-ms", "45000")],
    );
    mock.set_default("quota", Reply::quota());
    mock.set_default(
        "rejected",
        Reply::status(
            401,
            &format!("Incorrect API key provided: {KEY}."),
            Some("invalid_api_key"),
        ),
    );
    mock.script("malformed", [Reply::malformed()]);
    mock.script("conflict", [Reply::status(409, "busy", None)]);
    mock.set_default("slow", Reply::ok().after(Duration::from_secs(30)));
    let (_serve, api) = replica(&db, types, Vec::new()).await;
    let c = db.client().await;

    let ids: Vec<(&str, String)> = futures_util::future::join_all(
        [
            "ok",
            "flaky",
            "down",
            "limited",
            "limited_ms",
            "quota",
            "rejected",
            "malformed",
            "conflict",
            "slow",
            "refused",
        ]
        .map(|t| {
            let api = &api;
            async move { (t, submit(api, t, t, json!({})).await) }
        }),
    )
    .await;
    let id = |t: &str| ids.iter().find(|(n, _)| *n == t).unwrap().1.clone();

    // 200 with usage: succeeded, the result as the contract shapes it.
    let ok = terminal(&api, &id("ok")).await;
    assert_eq!(state_code(&ok), ("succeeded".into(), None));
    assert_eq!(ok["result"]["message"]["content"], "ok");
    assert_eq!(ok["result"]["finish_reason"], "stop");
    assert_eq!(
        ok["result"]["usage"],
        json!({"input_tokens": 10, "output_tokens": 5, "total_tokens": 15, "cached_input_tokens": 5})
    );
    assert_eq!(mock.calls("ok"), 1);
    // The provenance keeps the model asked for and the one the answer says answered.
    assert_eq!(
        (
            &ok["provenance"]["model"],
            &ok["provenance"]["response_model"],
            &ok["provenance"]["system_fingerprint"],
        ),
        (
            &json!("ok"),
            &json!(answered_by("ok")),
            &json!(SYSTEM_FINGERPRINT)
        )
    );

    // 500 is transient: retried, then succeeded.
    let flaky = terminal(&api, &id("flaky")).await;
    assert_eq!(
        (state_code(&flaky).0.as_str(), flaky["attempt"].as_i64()),
        ("succeeded", Some(2))
    );
    assert_eq!(mock.calls("flaky"), 2);
    // One attempts row per attempt, each with its provenance; usage where it was reported.
    let attempts = api
        .get(&format!("/v1/tasks/{}/attempts", id("flaky")))
        .await;
    let items = attempts.body["items"]
        .as_array()
        .expect("attempt items")
        .clone();
    assert_eq!(items.len(), 2, "{:?}", attempts.body);
    assert_eq!(
        (items[0]["outcome"].as_str(), items[1]["outcome"].as_str()),
        (Some("retry"), Some("succeeded"))
    );
    assert_eq!(items[0]["route_name"], "flaky-local");
    assert_eq!(items[0]["model"], "flaky");
    // The 500 named no model; the answer that succeeded did, and its fingerprint.
    assert!(items[0]["response_model"].is_null(), "{:?}", items[0]);
    assert_eq!(
        (&items[1]["response_model"], &items[1]["system_fingerprint"]),
        (&json!(answered_by("flaky")), &json!(SYSTEM_FINGERPRINT))
    );
    assert_eq!(items[1]["usage"]["total_tokens"], 15);
    assert_eq!(flaky["usage"]["total_tokens"], 15, "{flaky}");

    // 503 on every attempt: failed once attempts run out, one call per attempt.
    let down = terminal(&api, &id("down")).await;
    assert_eq!(
        state_code(&down),
        ("failed".into(), Some("attempts_exhausted".into()))
    );
    assert!(
        down["error"]["message"]
            .as_str()
            .unwrap()
            .contains("HTTP 503"),
        "{down}"
    );
    assert_eq!(mock.calls("down"), 2);

    // 429 with Retry-After: 60 (and retry-after-ms: 45000): waiting about that long.
    for (name, seconds) in [("limited", 60.0), ("limited_ms", 45.0)] {
        let task = api
            .wait_for(&id(name), |t| t["state"] == "waiting_for_retry")
            .await;
        assert_eq!(state_code(&task).1.as_deref(), Some("upstream_unavailable"));
        let uuid: uuid::Uuid = id(name).parse().unwrap();
        let delay = fixtures::run_at_delay_seconds(&c, uuid).await;
        assert!(
            delay > seconds - 15.0 && delay <= seconds,
            "{name}: run_at in {delay} s"
        );
        assert_eq!(mock.calls(name), 1);
    }

    // 429 insufficient_quota: permanent at once.
    let quota = terminal(&api, &id("quota")).await;
    assert_eq!(
        state_code(&quota),
        ("failed".into(), Some("upstream_quota_exhausted".into()))
    );
    assert_eq!(mock.calls("quota"), 1);

    // 401: permanent, and the key sent (from api_key_file) never comes back.
    let rejected = terminal(&api, &id("rejected")).await;
    assert_eq!(
        state_code(&rejected),
        ("failed".into(), Some("upstream_rejected".into()))
    );
    assert_eq!(mock.calls("rejected"), 1);
    assert_eq!(
        mock.last_authorization("rejected"),
        Some(format!("Bearer {KEY}"))
    );
    let message = rejected["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("HTTP 401: Incorrect API key provided: [redacted]"),
        "{message}"
    );
    let events = api
        .get(&format!("/v1/tasks/{}/events", id("rejected")))
        .await;
    for text in [rejected.to_string(), events.body.to_string()] {
        assert!(!text.contains("SECRET"), "the key leaked: {text}");
    }
    assert_eq!(
        mock.last_authorization("ok"),
        None,
        "unkeyed routes send no key"
    );

    // 2xx that is not a completion: transient, then succeeded.
    let malformed = terminal(&api, &id("malformed")).await;
    assert_eq!(state_code(&malformed).0, "succeeded");
    assert_eq!(mock.calls("malformed"), 2);

    // 409 is transient too.
    let conflict = terminal(&api, &id("conflict")).await;
    assert_eq!(
        (
            state_code(&conflict).0.as_str(),
            conflict["attempt"].as_i64()
        ),
        ("succeeded", Some(2))
    );

    // Slower than the attempt timeout: the call is dropped and the attempt times out.
    let slow = terminal(&api, &id("slow")).await;
    assert_eq!(
        state_code(&slow),
        ("failed".into(), Some("attempts_exhausted".into()))
    );
    assert!(
        slow["error"]["message"]
            .as_str()
            .unwrap()
            .contains("timeout"),
        "{slow}"
    );
    assert_eq!(mock.calls("slow"), 1);

    // Nothing listening: connection refused is transient; one attempt allowed.
    let refused = terminal(&api, &id("refused")).await;
    assert_eq!(
        state_code(&refused),
        ("failed".into(), Some("attempts_exhausted".into()))
    );
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("connection failed"),
        "{refused}"
    );

    // The timed-out call's connection was closed, not left hanging.
    until_calls(&mock, "slow", 1).await;
    common::eventually(
        Duration::from_secs(10),
        "the slow call's disconnect",
        || async {
            if mock.disconnects() >= 1 {
                Ok(())
            } else {
                Err(mock.disconnects())
            }
        },
    )
    .await;
    std::fs::remove_file(key_file).unwrap();
}
