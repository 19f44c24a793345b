//! Structured outputs: a type with an output schema asks the provider for it, and its
//! task succeeds only with an answer that ended on its own and matches; anything else
//! is retried as `invalid_output` (charged all the same) and fails the last attempt with
//! it. A remote worker's result is checked the same way, and refused without a change.

use serde_json::{json, Value};
use tasklane::mockllm::{MockLlm, Reply};

use super::{chat, local_type, replica, state_code, submit, terminal};
use crate::common::{self, api::Api};

/// The schema of every type here, as an inline TOML table.
const SCHEMA_TOML: &str = "output_schema = { type = \"object\", properties = { label = { type = \"string\", enum = [\"spam\", \"ham\"] }, score = { type = \"number\" } }, required = [\"label\", \"score\"], additionalProperties = false }";

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "label": {"type": "string", "enum": ["spam", "ham"]},
            "score": {"type": "number"}
        },
        "required": ["label", "score"],
        "additionalProperties": false
    })
}

const VALID: &str = r#"{"label": "spam", "score": 0.9}"#;

/// Each attempt's `(outcome, error.code, usage.total_tokens)`.
async fn attempts(api: &Api, id: &str) -> Vec<(String, Option<String>, Option<i64>)> {
    let answer = api.get(&format!("/v1/tasks/{id}/attempts")).await;
    answer.body["items"]
        .as_array()
        .expect("attempt items")
        .iter()
        .map(|a| {
            (
                a["outcome"].as_str().unwrap_or("").to_owned(),
                a["error"]["code"].as_str().map(str::to_owned),
                a["usage"]["total_tokens"].as_i64(),
            )
        })
        .collect()
}

fn message(task: &Value) -> String {
    task["error"]["message"].as_str().unwrap_or("").to_owned()
}

#[tokio::test]
async fn answers_are_validated_before_a_task_succeeds() {
    let db = common::test_db().await;
    let mock = MockLlm::start().await.unwrap();
    // One type reads its schema from a file named relative to the task-types file,
    // which the harness writes into the temporary directory.
    let file = format!("tasklane-schema-{}.json", uuid::Uuid::new_v4());
    let path = std::env::temp_dir().join(&file);
    std::fs::write(&path, schema().to_string()).unwrap();
    let typed = |name: &str, attempts: u32| {
        local_type(
            name,
            &format!("max_attempts = {attempts}\n{SCHEMA_TOML}"),
            &mock,
            name,
        )
    };
    let types = [
        local_type(
            "filed",
            &format!("max_attempts = 1\noutput_schema_file = \"{file}\""),
            &mock,
            "filed",
        ),
        typed("prose", 2),
        typed("broken", 1),
        typed("cut", 1),
        typed("second", 3),
    ]
    .concat();
    mock.set_default("filed", Reply::completion(VALID, 10, 5));
    mock.set_default("prose", Reply::completion("Sure! It is spam.", 10, 5));
    mock.set_default(
        "broken",
        Reply::completion(r#"{"label": "spam", "score": "high"}"#, 10, 5),
    );
    mock.set_default(
        "cut",
        Reply::completion(r#"{"label": "sp"#, 10, 5).finish("length"),
    );
    mock.script("second", [Reply::completion("{\"label\": ", 10, 5)]);
    mock.set_default("second", Reply::completion(VALID, 10, 5));
    let (_serve, api) = replica(&db, types, Vec::new()).await;

    // A submit that brings its own response_format is refused, and writes nothing.
    let mut input = chat();
    input["response_format"] = json!({"type": "json_object"});
    let refused = api
        .submit("filed", "s", "own-format", json!({"input": input}))
        .await;
    assert_eq!(
        (refused.status, refused.code()),
        (422, "validation_failed"),
        "{:?}",
        refused.body
    );
    assert_eq!(refused.body["field"], "input.response_format");

    let ids: Vec<String> =
        futures_util::future::join_all(["filed", "prose", "broken", "cut", "second"].map(|t| {
            let api = &api;
            async move { submit(api, t, t, json!({})).await }
        }))
        .await;
    let listed = api.get("/v1/tasks?limit=100").await;
    assert_eq!(listed.body["items"].as_array().unwrap().len(), 5);

    // A valid answer: the request asked for the schema; the result keeps the text and
    // carries the parsed value as `output`.
    let filed = terminal(&api, &ids[0]).await;
    assert_eq!(state_code(&filed), ("succeeded".into(), None));
    assert_eq!(
        filed["result"]["output"],
        json!({"label": "spam", "score": 0.9})
    );
    assert_eq!(filed["result"]["message"]["content"], VALID);
    assert_eq!(filed["result"]["finish_reason"], "stop");
    let request = mock.last_request("filed").unwrap();
    assert_eq!(
        request["response_format"],
        json!({"type": "json_schema",
               "json_schema": {"name": "filed", "schema": schema(), "strict": true}})
    );
    assert_eq!(
        (request["model"].clone(), request["max_tokens"].clone()),
        (json!("filed"), json!(20))
    );

    // Text that is not JSON: retried, and the last attempt fails invalid_output; every
    // answer's usage is recorded and charged.
    let prose = terminal(&api, &ids[1]).await;
    assert_eq!(
        state_code(&prose),
        ("failed".into(), Some("invalid_output".into()))
    );
    assert!(message(&prose).contains("not JSON"), "{prose}");
    assert_eq!(mock.calls("prose"), 2);
    assert_eq!(prose["usage"]["total_tokens"], 30, "{prose}");
    let invalid = || {
        (
            "retry".to_owned(),
            Some("invalid_output".to_owned()),
            Some(15),
        )
    };
    let failed = (
        "failed".to_owned(),
        Some("invalid_output".to_owned()),
        Some(15),
    );
    assert_eq!(attempts(&api, &ids[1]).await, [invalid(), failed.clone()]);

    // JSON that breaks the schema: the message names the pointer and the keyword, and
    // none of the model's value.
    let broken = terminal(&api, &ids[2]).await;
    assert_eq!(
        state_code(&broken),
        ("failed".into(), Some("invalid_output".into()))
    );
    let text = message(&broken);
    assert!(
        text.contains("\"/score\"") && text.contains("keyword \"type\"") && !text.contains("high"),
        "{text}"
    );
    assert!(text.starts_with("route \"broken-local\": "), "{text}");

    // A truncated answer is refused whatever its text.
    let cut = terminal(&api, &ids[3]).await;
    assert_eq!(
        state_code(&cut),
        ("failed".into(), Some("invalid_output".into()))
    );
    assert!(message(&cut).contains("finish_reason \"length\""), "{cut}");
    assert_eq!(attempts(&api, &ids[3]).await, [failed]);

    // Valid on the second attempt: succeeded, the first attempt kept as a retry.
    let second = terminal(&api, &ids[4]).await;
    assert_eq!(
        (state_code(&second), second["attempt"].as_i64()),
        (("succeeded".into(), None), Some(2))
    );
    assert_eq!(second["result"]["output"]["label"], "spam");
    let rows = attempts(&api, &ids[4]).await;
    assert_eq!(rows[0], invalid());
    assert_eq!(rows[1].0, "succeeded");
    std::fs::remove_file(path).unwrap();
}

#[tokio::test]
async fn a_remote_result_must_carry_a_matching_output() {
    let db = common::test_db().await;
    let types = format!(
        "[[task_type]]\nname = \"extract\"\nexecutor = \"remote\"\nmax_attempts = 1\n{SCHEMA_TOML}\n"
    );
    let (_serve, api) = replica(&db, types, Vec::new()).await;
    let claim = json!({"worker_id": "w1", "task_types": ["extract"], "route": "local", "max": 1});
    let first = submit_input(&api, "first").await;
    let claimed = api.post("/v1/worker/claim", &claim).await.body;
    let lease = claimed["tasks"][0]["lease_token"].clone();
    let complete = format!("/v1/worker/tasks/{first}/complete");

    // The bare value, or an output that breaks the schema: 422, nothing changes.
    for (result, says) in [
        (json!({"label": "ham", "score": 1}), "\"output\" member"),
        (
            json!({"output": {"label": "eggs", "score": 1}}),
            "\"/label\"",
        ),
    ] {
        let body = json!({"lease_token": lease, "result": result,
                          "usage": {"input_tokens": 3, "output_tokens": 4}});
        let refused = api.post(&complete, &body).await;
        assert_eq!(
            (refused.status, refused.code()),
            (422, "invalid_output"),
            "{:?}",
            refused.body
        );
        let detail = refused.body["detail"].as_str().unwrap();
        assert!(
            detail.contains(says) && !detail.contains("eggs"),
            "{detail}"
        );
        let task = api.get(&format!("/v1/tasks/{first}")).await.body;
        assert_eq!(
            (
                task["state"].as_str(),
                task["attempt"].as_i64(),
                &task["result"],
                &task["usage"]
            ),
            (Some("running"), Some(1), &Value::Null, &Value::Null)
        );
    }

    // A matching output completes it, the worker's other members kept.
    let result = json!({"output": {"label": "ham", "score": 0.2}, "text": "ham"});
    let done = api
        .post(&complete, &json!({"lease_token": lease, "result": result}))
        .await;
    assert_eq!(done.status, 200, "{:?}", done.body);
    let task = api.get(&format!("/v1/tasks/{first}")).await.body;
    assert_eq!(
        (task["state"].as_str(), &task["result"]),
        (Some("succeeded"), &result)
    );

    // A worker that gives up with invalid_output fails its last attempt with it.
    let second = submit_input(&api, "second").await;
    let claimed = api.post("/v1/worker/claim", &claim).await.body;
    let fail = json!({"lease_token": claimed["tasks"][0]["lease_token"], "code": "invalid_output",
                      "message": "the model never matched", "retryable": true});
    let failed = api
        .post(&format!("/v1/worker/tasks/{second}/fail"), &fail)
        .await;
    assert_eq!(failed.body["state"], "failed", "{:?}", failed.body);
    let task = api.get(&format!("/v1/tasks/{second}")).await.body;
    assert_eq!(
        state_code(&task),
        ("failed".into(), Some("invalid_output".into()))
    );
}

/// Submits an `extract` task; its id.
async fn submit_input(api: &Api, key: &str) -> String {
    let answer = api
        .submit("extract", "s", key, json!({"input": {"doc": key}}))
        .await;
    assert_eq!(answer.status, 202, "{:?}", answer.body);
    answer.body["id"].as_str().unwrap().to_owned()
}
