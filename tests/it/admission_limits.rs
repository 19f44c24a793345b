//! Rate limits, budgets, emergency stops and the order and atomicity of admission,
//! against a real PostgreSQL with concurrent submitters. The clock is moved by
//! rewriting the rate tokens' last use into the past, never by sleeping.

use crate::admission_support;
use crate::common;

use admission_support::*;
use common::fixtures::{self, APP};
use tasklane::admission::{self, EmergencyStopSpec, LimitKind, RefusalCode};
use tasklane::service::{Owner, ServiceError};
use tasklane::task::record::SubmitOutcome;

/// Moves the `n` oldest token uses of the rate limits with window `window` `secs` into
/// the past.
async fn age_tokens(c: &tokio_postgres::Client, window: i32, n: i64, secs: f64) {
    c.execute(
        "UPDATE tasklane.rate_tokens t SET used_at = t.used_at - $2 * interval '1 second'
         FROM (SELECT r.limit_id, r.token FROM tasklane.rate_tokens r
               JOIN tasklane.limits l ON l.id = r.limit_id AND l.window_seconds = $3
               WHERE r.used_at > '-infinity' ORDER BY r.used_at LIMIT $1) o
         WHERE t.limit_id = o.limit_id AND t.token = o.token",
        &[&n, &secs, &window],
    )
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn rate_admits_exactly_n_per_window_under_concurrency() {
    let db = common::test_db().await;
    let c = db.client().await;
    set(&c, limit(LimitKind::Rate, Some(APP), None, 10, Some(60))).await;
    let tl = tasklane(&db.url, 64);

    let first = submit_together(&tl, APP, "a", 64, None).await;
    assert_eq!(first.admitted.len(), 10);
    assert!(first.refused.iter().all(|c| *c == RefusalCode::RateLimited));
    // Completing tasks gives nothing back: rate history is never returned.
    complete_all(&c, None).await;
    let second = submit_together(&tl, APP, "b", 64, None).await;
    assert_eq!(second.admitted.len(), 0);

    // Four admissions leave the window (the clock moved 61 s for them): four more.
    age_tokens(&c, 60, 4, 61.0).await;
    let third = submit_together(&tl, APP, "c", 64, None).await;
    assert_eq!(third.admitted.len(), 4);
    // The whole window passes: ten again, never eleven.
    c.execute(
        "UPDATE tasklane.rate_tokens SET used_at = used_at - interval '61 seconds'",
        &[],
    )
    .await
    .unwrap();
    let fourth = submit_together(&tl, APP, "d", 64, None).await;
    assert_eq!(fourth.admitted.len(), 10);
    // One history row per admission, none for the refusals.
    assert_eq!(
        count(&c, "SELECT count(*) FROM tasklane.admission_history").await,
        24
    );
}

#[tokio::test]
async fn rate_retry_after_is_when_the_window_frees_a_token() {
    let db = common::test_db().await;
    let c = db.client().await;
    set(
        &c,
        limit(LimitKind::Rate, Some(APP), Some("u"), 2, Some(3600)),
    )
    .await;
    set(
        &c,
        limit(LimitKind::Rate, Some(APP), Some("u"), 100, Some(60)),
    )
    .await;
    let tl = tasklane(&db.url, 2);
    submit_one(&tl, "a", Some("u")).await.unwrap();
    submit_one(&tl, "b", Some("u")).await.unwrap();
    // The oldest use is 3000 s ago: free in ~600 s.
    age_tokens(&c, 3600, 1, 3000.0).await;
    let refused = match tl.submit(&Owner::app(APP), &request("c", Some("u"))).await {
        Err(ServiceError::Refused(r)) => r,
        other => panic!("expected a refusal, got {other:?}"),
    };
    assert_eq!(refused.code, RefusalCode::RateLimited);
    assert!(
        (595..=601).contains(&refused.retry_after_seconds()),
        "{}",
        refused.retry_after_seconds()
    );
    // The 60 s window's token taken before the refusal was given back as it was.
    assert_eq!(
        count(
            &c,
            "SELECT count(*) FROM tasklane.rate_tokens WHERE used_at > '-infinity'"
        )
        .await,
        4
    );
    // Other subjects and no subject are not limited by u's rate.
    submit_one(&tl, "d", Some("v")).await.unwrap();
    submit_one(&tl, "e", None).await.unwrap();
}

#[tokio::test]
async fn a_new_rate_limit_starts_from_the_admission_history() {
    let db = common::test_db().await;
    let c = db.client().await;
    set(
        &c,
        limit(LimitKind::Rate, Some(APP), None, 100, Some(86_400)),
    )
    .await;
    let tl = tasklane(&db.url, 2);
    for i in 0..3 {
        submit_one(&tl, &format!("k{i}"), None).await.unwrap();
    }
    // A tighter window added later already counts the three admissions.
    set(&c, limit(LimitKind::Rate, Some(APP), None, 3, Some(60))).await;
    assert_eq!(
        submit_one(&tl, "k3", None).await.unwrap_err(),
        RefusalCode::RateLimited
    );
}

#[tokio::test]
async fn budget_refuses_once_spent_and_nothing_gives_it_back() {
    let db = common::test_db().await;
    let c = db.client().await;
    set(
        &c,
        limit(LimitKind::Budget, Some(APP), Some("u"), 100, None),
    )
    .await;
    set(&c, limit(LimitKind::Budget, Some(APP), None, 10, None)).await;
    let tl = tasklane(&db.url, 2);
    submit_one(&tl, "a", Some("u")).await.unwrap();
    complete_all(&c, Some(60)).await;
    submit_one(&tl, "b", Some("u")).await.unwrap();
    complete_all(&c, Some(50)).await;
    // 110 of 100 spent: refused until the next UTC day.
    let refused = match tl.submit(&Owner::app(APP), &request("c", Some("u"))).await {
        Err(ServiceError::Refused(r)) => r,
        other => panic!("expected a refusal, got {other:?}"),
    };
    assert_eq!(refused.code, RefusalCode::BudgetExhausted);
    let midnight: f64 = c
        .query_one("SELECT extract(epoch FROM date_trunc('day', now() AT TIME ZONE 'UTC') + interval '1 day' - (now() AT TIME ZONE 'UTC'))::float8", &[])
        .await
        .unwrap()
        .get(0);
    assert!((refused.retry_after_seconds() as f64 - midnight).abs() <= 2.0);
    // Tasks without a subject draw on the app's background budget.
    submit_one(&tl, "n1", None).await.unwrap();
    complete_all(&c, Some(10)).await;
    assert_eq!(
        submit_one(&tl, "n2", None).await.unwrap_err(),
        RefusalCode::BudgetExhausted
    );
    // Another subject has no budget set: admitted.
    submit_one(&tl, "v1", Some("v")).await.unwrap();
    // Releasing and deleting restore nothing.
    c.execute("UPDATE tasklane.tasks SET released_at = now()", &[])
        .await
        .unwrap();
    c.execute("DELETE FROM tasklane.tasks", &[]).await.unwrap();
    assert_eq!(
        submit_one(&tl, "c", Some("u")).await.unwrap_err(),
        RefusalCode::BudgetExhausted
    );
    assert_eq!(
        submit_one(&tl, "n3", None).await.unwrap_err(),
        RefusalCode::BudgetExhausted
    );
    // Spending yesterday does not count today.
    c.execute("UPDATE tasklane.budget_usage SET day = day - 1", &[])
        .await
        .unwrap();
    submit_one(&tl, "c", Some("u")).await.unwrap();
}

#[tokio::test]
async fn emergency_stop_global_and_per_app() {
    let db = common::test_db().await;
    let c = db.client().await;
    let tl = tasklane(&db.url, 2);
    let running = submit_one(&tl, "running", None).await.unwrap().task;
    let claimed = fixtures::claim_one(&c).await;
    submit_one(&tl, "queued", None).await.unwrap();

    let stop = |enabled, app: Option<&str>| EmergencyStopSpec {
        enabled,
        app: app.map(str::to_owned),
    };
    admission::set_emergency_stop(&c, &stop(true, None))
        .await
        .unwrap();
    let refused = match tl.submit(&Owner::app(APP), &request("new", None)).await {
        Err(ServiceError::Refused(r)) => r,
        other => panic!("expected a refusal, got {other:?}"),
    };
    assert_eq!(
        (refused.code, refused.code.http_status()),
        (RefusalCode::EmergencyStop, 503)
    );
    assert!(refused.retry_after_seconds() > 0);
    assert_eq!(
        tl.submit(&Owner::app("other"), &request("new", None))
            .await
            .unwrap_err()
            .to_string(),
        refused.to_string()
    );
    // Joins still answer; running tasks finish; replays of succeeded tasks still work.
    assert_eq!(
        submit_one(&tl, "queued", None).await.unwrap().outcome,
        SubmitOutcome::Joined
    );
    tasklane::store::lease::complete(&c, claimed.id, claimed.lease_token, &Default::default())
        .await
        .unwrap();
    let replay = submit_one(&tl, "running", None).await.unwrap();
    assert_eq!(
        (replay.outcome, replay.task.id),
        (SubmitOutcome::Existing, running.id)
    );

    admission::set_emergency_stop(&c, &stop(false, None))
        .await
        .unwrap();
    admission::set_emergency_stop(&c, &stop(true, Some(APP)))
        .await
        .unwrap();
    assert_eq!(
        submit_one(&tl, "new", None).await.unwrap_err(),
        RefusalCode::EmergencyStop
    );
    tl.submit(&Owner::app("other"), &request("new", None))
        .await
        .expect("another app is not stopped");
    admission::set_emergency_stop(&c, &stop(false, Some(APP)))
        .await
        .unwrap();
    submit_one(&tl, "new", None).await.unwrap();
}

#[tokio::test]
async fn checks_run_in_order_and_a_refusal_leaves_nothing_behind() {
    let db = common::test_db().await;
    let c = db.client().await;
    set(&c, limit(LimitKind::Capacity, Some(APP), None, 1, None)).await;
    set(&c, limit(LimitKind::Rate, Some(APP), None, 1, Some(60))).await;
    set(&c, limit(LimitKind::Budget, Some(APP), None, 5, None)).await;
    let tl = tasklane(&db.url, 2);
    submit_one(&tl, "a", None).await.unwrap();
    // Capacity and rate both exhausted: capacity answers (it comes first).
    assert_eq!(
        submit_one(&tl, "b", None).await.unwrap_err(),
        RefusalCode::CapacityExhausted
    );
    complete_all(&c, Some(5)).await;
    // Room again, but rate and budget exhausted: rate answers, and the capacity slot
    // it took first is given back.
    assert_eq!(
        submit_one(&tl, "b", None).await.unwrap_err(),
        RefusalCode::RateLimited
    );
    assert_eq!(held_slots(&c).await, 0);
    c.execute(
        "UPDATE tasklane.rate_tokens SET used_at = used_at - interval '61 seconds'",
        &[],
    )
    .await
    .unwrap();
    // Only the budget is left: its refusal gives back both the slot and the token.
    let tokens_before = count(
        &c,
        "SELECT count(*) FROM tasklane.rate_tokens WHERE used_at > now() - interval '60 s'",
    )
    .await;
    assert_eq!(
        submit_one(&tl, "b", None).await.unwrap_err(),
        RefusalCode::BudgetExhausted
    );
    assert_eq!(held_slots(&c).await, 0);
    assert_eq!(
        count(
            &c,
            "SELECT count(*) FROM tasklane.rate_tokens WHERE used_at > now() - interval '60 s'"
        )
        .await,
        tokens_before
    );
    assert_eq!(
        count(&c, "SELECT count(*) FROM tasklane.admission_history").await,
        1
    );
    assert_eq!(count(&c, "SELECT count(*) FROM tasklane.tasks").await, 1);
    // Refusals were counted outside the refused transactions.
    let overview = admission::overview(&c).await.unwrap();
    let refusals: i64 = overview.refusals_today.iter().map(|r| r.count).sum();
    assert_eq!(refusals, 3);
    let budget = overview.limits.iter().find(|l| l.kind == "budget").unwrap();
    assert_eq!((budget.used, budget.limit), (5, 5));
}

#[tokio::test]
async fn joins_and_concurrent_duplicates_consume_nothing() {
    let db = common::test_db().await;
    let c = db.client().await;
    set(&c, limit(LimitKind::Capacity, Some(APP), None, 5, None)).await;
    set(&c, limit(LimitKind::Rate, Some(APP), None, 5, Some(60))).await;
    let tl = tasklane(&db.url, 8);
    // Sixteen concurrent submits of one identity: one task, one slot, one token.
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..16 {
        let tl = tl.clone();
        set.spawn(async move {
            tl.submit(&Owner::app(APP), &request("same", None))
                .await
                .map(|s| s.task.id)
        });
    }
    let mut ids = std::collections::HashSet::new();
    while let Some(r) = set.join_next().await {
        ids.insert(r.unwrap().expect("join or create"));
    }
    assert_eq!(ids.len(), 1);
    assert_eq!(held_slots(&c).await, 1);
    assert_eq!(
        count(
            &c,
            "SELECT count(*) FROM tasklane.rate_tokens WHERE used_at > '-infinity'"
        )
        .await,
        1
    );
    assert_eq!(
        count(&c, "SELECT count(*) FROM tasklane.admission_history").await,
        1
    );
    assert_eq!(
        submit_one(&tl, "same", None).await.unwrap().outcome,
        SubmitOutcome::Joined
    );
    assert_eq!(held_slots(&c).await, 1);
}

#[tokio::test]
async fn overview_shows_use_against_every_limit() {
    let db = common::test_db().await;
    let c = db.client().await;
    set(&c, limit(LimitKind::Capacity, None, None, 50, None)).await;
    set(
        &c,
        limit(LimitKind::Rate, Some(APP), Some("u"), 7, Some(3600)),
    )
    .await;
    admission::set_resource(&c, "local-model", 2).await.unwrap();
    let tl = tasklane(&db.url, 2);
    submit_one(&tl, "a", Some("u")).await.unwrap();
    submit_one(&tl, "b", Some("u")).await.unwrap();
    let overview = admission::overview(&c).await.unwrap();
    let json = serde_json::to_value(&overview).unwrap();
    assert_eq!(json["limits"][0]["kind"], "capacity");
    assert_eq!(json["limits"][0]["app"], serde_json::Value::Null);
    assert_eq!(
        (
            json["limits"][0]["used"].as_i64(),
            json["limits"][0]["limit"].as_i64()
        ),
        (Some(2), Some(50))
    );
    assert_eq!(json["limits"][1]["window_seconds"], 3600);
    assert_eq!(json["limits"][1]["used"], 2);
    assert_eq!(json["queue"][0]["state"], "queued");
    assert_eq!(json["queue"][0]["count"], 2);
    assert_eq!(json["resources"][0]["slots"], 2);
    assert_eq!(json["resources"][0]["in_use"], 0);
    // Pruning keeps the last 24 h.
    c.execute("UPDATE tasklane.admission_history SET at = at - interval '25 hours' WHERE task_id IN (SELECT task_id FROM tasklane.admission_history LIMIT 1)", &[]).await.unwrap();
    assert_eq!(tasklane::store::admission::prune(&c, 100).await.unwrap(), 1);
    assert_eq!(
        count(&c, "SELECT count(*) FROM tasklane.admission_history").await,
        1
    );
}

#[tokio::test]
async fn a_refusal_leaves_nothing_even_when_the_caller_commits() {
    let db = common::test_db().await;
    let c = db.client().await;
    set(&c, limit(LimitKind::Capacity, Some(APP), None, 5, None)).await;
    set(&c, limit(LimitKind::Rate, Some(APP), None, 5, Some(60))).await;
    set(&c, limit(LimitKind::Budget, Some(APP), None, 0, None)).await;
    // Budget 0: refused after capacity and rate took their rows; the application
    // commits its own transaction anyway.
    c.batch_execute("BEGIN").await.unwrap();
    c.batch_execute("CREATE TABLE app_side (x int); INSERT INTO app_side VALUES (1)")
        .await
        .unwrap();
    let task = request("a", None)
        .resolve(APP, &fixtures::task_type(), 1 << 20)
        .unwrap();
    let refused = tasklane::service::submit_in(&c, &task).await;
    assert!(
        matches!(refused, Err(ServiceError::Refused(ref r)) if r.code == RefusalCode::BudgetExhausted)
    );
    c.batch_execute("COMMIT").await.unwrap();
    assert_eq!(count(&c, "SELECT count(*) FROM app_side").await, 1);
    assert_eq!(held_slots(&c).await, 0);
    assert_eq!(
        count(
            &c,
            "SELECT count(*) FROM tasklane.rate_tokens WHERE used_at > '-infinity'"
        )
        .await,
        0
    );
    assert_eq!(
        count(&c, "SELECT count(*) FROM tasklane.admission_history").await,
        0
    );
    assert_eq!(count(&c, "SELECT count(*) FROM tasklane.tasks").await, 0);
}

#[tokio::test]
async fn the_window_slides_with_the_database_clock() {
    use chrono::{Duration, SubsecRound, Utc};
    use tasklane::store::admission::admit;
    let db = common::test_db().await;
    let c = db.client().await;
    set(&c, limit(LimitKind::Rate, Some(APP), None, 2, Some(30))).await;
    let t0 = Utc::now().trunc_subsecs(0);
    let at = |s: i64| Some(t0 + Duration::seconds(s));
    let mut results = Vec::new();
    // Admissions at 0 s and 10 s fill the window; at 29 s still full (free at 30 s);
    // at 30 s the first has left it; at 35 s full again until 40 s.
    for s in [0, 10, 29, 30, 35, 40] {
        let report = admit(&c, uuid::Uuid::now_v7(), APP, None, at(s))
            .await
            .unwrap();
        results.push((
            s,
            report.refused.clone(),
            report.free_at.map(|f| (f - t0).num_seconds()),
        ));
    }
    assert_eq!(
        results,
        vec![
            (0, None, None),
            (10, None, None),
            (29, Some("rate_limited".into()), Some(30)),
            (30, None, None),
            (35, Some("rate_limited".into()), Some(40)),
            (40, None, None),
        ]
    );
}
