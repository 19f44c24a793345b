//! Delivery to a real receiver: signed with every live secret, the app's view of the
//! task, retried with the same webhook-id, Retry-After honoured, 410 disabling, no
//! redirects, internal addresses refused unless allowed.

use std::time::Duration;

use serde_json::json;

use super::{counted, log, log_until, noop, register, replica, Receiver, Reply, SOON};
use crate::common;

const SECRET_A: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

#[tokio::test]
async fn a_terminal_task_is_delivered_signed_with_the_app_view() {
    let db = common::test_db().await;
    let (_replica, api) = replica(&db, &[]).await;
    let receiver = Receiver::start().await;
    let created = register(&api, "main", &receiver.url, None).await;
    let secret = created["secret"]
        .as_str()
        .expect("a new endpoint shows its secret");
    assert!(secret.starts_with("whsec_"));
    receiver.secrets(&[secret]);
    let listed = api.get("/v1/webhooks").await;
    assert_eq!(listed.body["items"][0]["name"], "main");
    assert!(
        listed.body["items"][0].get("secret").is_none(),
        "never listed"
    );

    let id = noop(&api, "k1").await;
    let got = receiver.until(1, SOON).await;
    let message = &got[0];
    assert_eq!(
        message.verified,
        [true],
        "signed with the endpoint's secret"
    );
    assert_eq!(message.content_type, "application/json");
    assert_eq!(message.body["type"], "task.succeeded");
    assert_eq!(message.body["data"]["id"], id);
    assert_eq!(message.body["data"]["state"], "succeeded");
    assert_eq!(message.body["data"]["result"], json!({"n": 1}));
    assert_eq!(
        message.body["data"]["links"]["self"],
        format!("/v1/tasks/{id}")
    );
    assert!(message.body["timestamp"].as_str().is_some());
    assert!((message.timestamp - chrono::Utc::now().timestamp()).abs() < 300);
    let rows = log_until(&api, "main", 1, "delivered").await;
    assert_eq!(rows[0]["id"], message.id, "the log's id is the webhook-id");
    assert_eq!(rows[0]["task_id"], id);
    assert_eq!(rows[0]["attempts"], 1);
    assert_eq!(rows[0]["last_status"], 200);
    assert!(rows[0]["delivered_at"].is_string());
    assert!(
        counted(&api, "delivered").await,
        "deliveries are counted by outcome"
    );

    // A cancelled task too, and a redelivery sends the same id again.
    let cancelled = api
        .submit(
            "sleep",
            "box-1",
            "k2",
            json!({"input": {"ms": 60000}, "deadline_seconds": 600}),
        )
        .await;
    let cancelled_id = cancelled.body["id"].as_str().unwrap().to_owned();
    api.post(&format!("/v1/tasks/{cancelled_id}/cancel"), &json!({}))
        .await;
    let got = receiver.until(2, SOON).await;
    assert_eq!(got[1].body["type"], "task.cancelled");
    assert_eq!(got[1].body["data"]["id"], cancelled_id);
    let answer = api
        .post(
            &format!("/v1/webhooks/main/deliveries/{}/redeliver", message.id),
            &json!({}),
        )
        .await;
    assert_eq!(answer.status, 202, "{:?}", answer.body);
    let got = receiver.until(3, SOON).await;
    assert_eq!(got[2].id, message.id);
    assert!(got.iter().all(|m| m.verified == [true]));
}

#[tokio::test]
async fn a_failed_attempt_is_retried_with_the_same_webhook_id() {
    let db = common::test_db().await;
    let (_replica, api) = replica(&db, &[]).await;
    let receiver = Receiver::start().await;
    register(&api, "main", &receiver.url, Some(SECRET_A)).await;
    receiver.secrets(&[SECRET_A]);
    receiver.script([Reply::status(500)]);
    noop(&api, "k1").await;
    let got = receiver.until(2, SOON).await;
    assert_eq!(got[0].id, got[1].id, "one notification, two attempts");
    assert!(got.iter().all(|m| m.verified == [true]));
    let rows = log_until(&api, "main", 1, "delivered").await;
    assert_eq!(
        (
            rows[0]["attempts"].as_i64(),
            rows[0]["last_status"].as_i64()
        ),
        (Some(2), Some(200))
    );
}

/// A round whose attempts partly fail: the deliverer settles a round's outcomes in one
/// statement, and each row must still get its own (the failed ones retried with their
/// webhook-id, the others delivered once).
#[tokio::test]
async fn a_round_where_some_attempts_fail_settles_each_on_its_own() {
    let db = common::test_db().await;
    // Enough steps that three 500s can never use up one row's attempts.
    let schedule = [("TASKLANE_WEBHOOK_RETRY_SCHEDULE", "100ms,100ms,100ms,100ms")];
    let (_replica, api) = replica(&db, &schedule).await;
    let receiver = Receiver::start().await;
    register(&api, "main", &receiver.url, Some(SECRET_A)).await;
    receiver.secrets(&[SECRET_A]);
    receiver.script([Reply::status(500), Reply::status(503), Reply::status(500)]);
    for n in 0..10 {
        noop(&api, &format!("k{n}")).await;
    }
    let rows = log_until(&api, "main", 10, "delivered").await;
    let attempts: i64 = rows.iter().map(|r| r["attempts"].as_i64().unwrap()).sum();
    assert_eq!(attempts, 13, "ten first attempts and one more per failure");
    assert!(rows.iter().all(|r| r["last_status"] == 200));
    let received = receiver.received();
    assert_eq!(received.len(), 13);
    let ids: std::collections::HashSet<&String> = received.iter().map(|m| &m.id).collect();
    assert_eq!(
        ids.len(),
        10,
        "a retry carries its notification's webhook-id"
    );
    assert!(received.iter().all(|m| m.verified == [true]));
}

#[tokio::test]
async fn retries_run_out_and_the_notification_fails() {
    let db = common::test_db().await;
    let (_replica, api) = replica(&db, &[]).await;
    let receiver = Receiver::start().await;
    register(&api, "main", &receiver.url, None).await;
    receiver.script([Reply::status(500), Reply::status(502), Reply::status(503)]);
    noop(&api, "k1").await;
    let rows = log_until(&api, "main", 1, "failed").await;
    assert_eq!(rows[0]["attempts"], 3, "the first attempt and one per step");
    assert_eq!(rows[0]["last_status"], 503);
    assert_eq!(rows[0]["last_error"], "HTTP 503");
    assert_eq!(receiver.received().len(), 3);
}

#[tokio::test]
async fn retry_after_on_429_is_honoured() {
    let db = common::test_db().await;
    let (_replica, api) = replica(&db, &[]).await;
    let receiver = Receiver::start().await;
    register(&api, "main", &receiver.url, None).await;
    receiver.script([Reply::status(429).header("retry-after", "2")]);
    noop(&api, "k1").await;
    let got = receiver.until(2, SOON).await;
    let waited = got[1].at - got[0].at;
    assert!(waited >= Duration::from_secs(2), "retried after {waited:?}");
    log_until(&api, "main", 1, "delivered").await;
}

#[tokio::test]
async fn a_410_disables_the_endpoint_until_it_is_put_again() {
    let db = common::test_db().await;
    let (_replica, api) = replica(&db, &[]).await;
    let receiver = Receiver::start().await;
    register(&api, "main", &receiver.url, None).await;
    receiver.script([Reply::status(410)]);
    noop(&api, "k1").await;
    let rows = log_until(&api, "main", 1, "failed").await;
    assert_eq!(rows[0]["last_status"], 410);
    let listed = api.get("/v1/webhooks").await;
    assert_eq!(listed.body["items"][0]["disabled"], true);
    let redeliver = api
        .post(
            &format!(
                "/v1/webhooks/main/deliveries/{}/redeliver",
                rows[0]["id"].as_str().unwrap()
            ),
            &json!({}),
        )
        .await;
    assert_eq!(
        (redeliver.status, redeliver.code()),
        (409, "endpoint_disabled")
    );

    // Nothing is written for a disabled endpoint.
    let id = noop(&api, "k2").await;
    api.wait_for(&id, |t| t["state"] == "succeeded").await;
    assert_eq!(log(&api, "main").await.len(), 1);

    let again = register(&api, "main", &receiver.url, None).await;
    assert_eq!(again["disabled"], false);
    assert!(
        again.get("secret").is_none(),
        "an update does not show the secret"
    );
    noop(&api, "k3").await;
    receiver.until(2, SOON).await;
    assert_eq!(receiver.received().len(), 2);
}

#[tokio::test]
async fn a_redirect_is_not_followed() {
    let db = common::test_db().await;
    let (_replica, api) = replica(&db, &[]).await;
    let receiver = Receiver::start().await;
    let elsewhere = Receiver::start().await;
    register(&api, "main", &receiver.url, None).await;
    receiver.script([Reply::status(307).header("location", elsewhere.url.clone())]);
    noop(&api, "k1").await;
    let rows = log_until(&api, "main", 1, "delivered").await;
    assert_eq!(
        rows[0]["attempts"], 2,
        "the redirect counted as a failed attempt"
    );
    assert_eq!(receiver.received().len(), 2);
    assert!(
        elsewhere.received().is_empty(),
        "the redirect target was never called"
    );
}

#[tokio::test]
async fn internal_addresses_are_refused_unless_allowed() {
    let db = common::test_db().await;
    let (_replica, api) = replica(&db, &[("TASKLANE_WEBHOOK_ALLOW_CIDRS", "10.0.0.0/8")]).await;
    let receiver = Receiver::start().await;
    register(&api, "literal", &receiver.url, None).await;
    let by_name = receiver.url.replace("127.0.0.1", "localhost");
    register(&api, "named", &by_name, None).await;
    noop(&api, "k1").await;
    for name in ["literal", "named"] {
        let what = format!("{name}: an attempt refused");
        let row = common::eventually(SOON, &what, || async {
            let rows = log(&api, name).await;
            match rows.first() {
                Some(row) if row["last_error"].is_string() => Ok(row.clone()),
                other => Err(other.cloned()),
            }
        })
        .await;
        let error = row["last_error"].as_str().unwrap();
        assert!(error.contains("address refused"), "{name}: {error}");
        assert!(row["last_status"].is_null());
    }
    assert!(
        receiver.received().is_empty(),
        "nothing reached the loopback receiver"
    );
}

#[tokio::test]
async fn after_a_rotation_both_secrets_sign_for_a_day() {
    let db = common::test_db().await;
    let (_replica, api) = replica(&db, &[]).await;
    let receiver = Receiver::start().await;
    register(&api, "main", &receiver.url, Some(SECRET_A)).await;
    let rotated = api
        .post("/v1/webhooks/main/rotate-secret", &json!({}))
        .await;
    assert_eq!(rotated.status, 200, "{:?}", rotated.body);
    let secret_b = rotated.body["secret"].as_str().unwrap().to_owned();
    assert_ne!(secret_b, SECRET_A);
    receiver.secrets(&[SECRET_A, &secret_b]);
    noop(&api, "k1").await;
    let got = receiver.until(1, SOON).await;
    assert_eq!(got[0].signature.split(' ').count(), 2);
    assert_eq!(
        got[0].verified,
        [true, true],
        "the old and the new secret both verify"
    );

    // Once the old secret's day is over, only the new one signs.
    let c = db.client().await;
    c.execute(
        "UPDATE tasklane.webhook_secrets SET expires_at = now() - interval '1 second'
         WHERE expires_at IS NOT NULL",
        &[],
    )
    .await
    .unwrap();
    noop(&api, "k2").await;
    let got = receiver.until(2, SOON).await;
    assert_eq!(got[1].verified, [false, true]);
    assert_eq!(got[1].signature.split(' ').count(), 1);
}

/// A claim no longer than an attempt's timeout could never see a row sent in time (each
/// would be released unsent): refused at start, before anything connects, naming both
/// settings.
#[test]
fn a_claim_not_above_the_timeout_is_refused_at_start() {
    let output = std::process::Command::new(common::serve::binary())
        .args(["serve", "--no-migrate"])
        .env("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none")
        .env("TASKLANE_WEBHOOK_CLAIM_SECONDS", "15")
        .env("TASKLANE_WEBHOOK_TIMEOUT_SECONDS", "15")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("TASKLANE_WEBHOOK_CLAIM_SECONDS")
            && stderr.contains("TASKLANE_WEBHOOK_TIMEOUT_SECONDS"),
        "{stderr}"
    );
}

/// One slot, answers that take 3 s, and a claim of 5 s with a 4 s timeout: the second
/// notification's turn comes 3 s after its claim, too late for an attempt to be answered
/// within it. It is released unsent and sent on a claim of its own, so each
/// notification reaches the receiver once, on its first counted attempt. Sent late
/// instead, its claim would run out mid-attempt and the replica would send it twice.
#[tokio::test]
async fn a_row_whose_turn_comes_too_late_for_its_claim_is_released_not_sent_twice() {
    let db = common::test_db().await;
    let (_replica, api) = replica(
        &db,
        &[
            ("TASKLANE_WEBHOOK_CLAIM_SECONDS", "5"),
            ("TASKLANE_WEBHOOK_TIMEOUT_SECONDS", "4"),
            ("TASKLANE_WEBHOOK_ENDPOINT_CONCURRENCY", "1"),
        ],
    )
    .await;
    let receiver = Receiver::start().await;
    register(&api, "main", &receiver.url, Some(SECRET_A)).await;
    receiver.secrets(&[SECRET_A]);
    receiver.script((0..4).map(|_| Reply::status(200).delay(Duration::from_secs(3))));
    noop(&api, "k1").await;
    noop(&api, "k2").await;
    let rows = log_until(&api, "main", 2, "delivered").await;
    assert!(rows.iter().all(|r| r["attempts"] == 1), "{rows:?}");
    let received = receiver.received();
    let mut ids: Vec<&str> = received.iter().map(|m| m.id.as_str()).collect();
    ids.sort_unstable();
    let mut logged: Vec<&str> = rows.iter().map(|r| r["id"].as_str().unwrap()).collect();
    logged.sort_unstable();
    assert_eq!(ids, logged, "each notification was sent once");
    assert!(counted(&api, "released").await, "the release is counted");
}

/// The row version a delivery in flight holds: whether the transaction that made the
/// task terminal wrote it (the hand-off: the batch settle claimed it), its attempt
/// count, and whether it is claimed.
async fn in_flight_row(db: &common::TestDb) -> (bool, i32, bool) {
    let row = db
        .client()
        .await
        .query_one(
            "SELECT d.xmin::text = t.xmin::text, d.attempts, d.claim_token IS NOT NULL
             FROM tasklane.webhook_deliveries d JOIN tasklane.tasks t ON t.id = d.task_id",
            &[],
        )
        .await
        .unwrap();
    (row.get(0), row.get(1), row.get(2))
}

/// A replica that works and delivers sends its own completions' notifications as its
/// batch settle claimed them (webhooks::handoff): the row in flight is the version the
/// task's terminal transaction wrote, claimed and counted there, with no claim
/// statement after it.
#[tokio::test]
async fn a_replica_sends_its_own_completions_as_its_settle_claimed_them() {
    let db = common::test_db().await;
    let (_replica, api) = replica(&db, &[]).await;
    let receiver = Receiver::start().await;
    register(&api, "main", &receiver.url, None).await;
    receiver.script([Reply::status(200).delay(Duration::from_secs(120))]);
    noop(&api, "k1").await;
    receiver.until(1, SOON).await;
    assert_eq!(in_flight_row(&db).await, (true, 1, true));
}

/// Without a deliverer in the working replica, another replica's claim takes the row:
/// the version in flight is the claim's, not the settle's.
#[tokio::test]
async fn a_worker_without_a_deliverer_leaves_the_row_to_a_claim() {
    let db = common::test_db().await;
    let env: Vec<(&'static str, String)> =
        vec![("TASKLANE_WEBHOOK_ALLOW_CIDRS", "127.0.0.0/8".to_owned())];
    let worker = common::serve::Serve::start(
        &db.url,
        common::serve::Options {
            roles: Some("api,worker"),
            env: env.clone(),
            ..Default::default()
        },
    )
    .await;
    let _deliverer = common::serve::Serve::start(
        &db.url,
        common::serve::Options {
            roles: Some("maintenance"),
            env,
            ..Default::default()
        },
    )
    .await;
    let token = common::api::token(&db.url, "mail", None, &["submit", "read", "webhooks"]).await;
    let api = worker.api(&token);
    let receiver = Receiver::start().await;
    register(&api, "main", &receiver.url, None).await;
    receiver.script([Reply::status(200).delay(Duration::from_secs(120))]);
    noop(&api, "k1").await;
    receiver.until(1, SOON).await;
    assert_eq!(in_flight_row(&db).await, (false, 1, true));
}
