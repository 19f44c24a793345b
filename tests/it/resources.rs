//! Resource slots in the claim statement: never more running than slots,
//! slots back on finish, retry, cancellation, deletion and lease expiry; tasks without
//! a resource are claimed as before.

use crate::common;

use common::fixtures::{self, TYPE};
use tasklane::admission;
use tasklane::store::lease;
use tasklane::task::settlement::Report;
use tasklane::task::settlement::Success;
use tasklane::task::{Executor, TaskType};
use tokio_postgres::Client;

const RESOURCE: &str = "local-model";

/// Submits a task of the fixture type as if the type named `resource`.
async fn submit(c: &Client, key: &str, resource: Option<&str>) -> uuid::Uuid {
    submit_as(c, key, resource, tasklane::task::Privacy::LocalOnly).await
}

async fn submit_as(
    c: &Client,
    key: &str,
    resource: Option<&str>,
    privacy: tasklane::task::Privacy,
) -> uuid::Uuid {
    let task_type = TaskType {
        resource: resource.map(str::to_owned),
        external_allowed: true,
        ..TaskType::new(TYPE, Executor::Noop)
    };
    let mut request = fixtures::request(key, serde_json::json!({}));
    request.privacy = Some(privacy);
    let task = request.resolve(fixtures::APP, &task_type, 1 << 20).unwrap();
    c.batch_execute("BEGIN").await.unwrap();
    let submitted = tasklane::service::submit_in(c, &task)
        .await
        .expect("submit");
    c.batch_execute("COMMIT").await.unwrap();
    submitted.task.id
}

async fn in_use(c: &Client) -> i64 {
    c.query_one(
        "SELECT count(*) FROM tasklane.resource_slots WHERE task_id IS NOT NULL",
        &[],
    )
    .await
    .unwrap()
    .get(0)
}

async fn running_with_resource(c: &Client) -> i64 {
    c.query_one(
        "SELECT count(*) FROM tasklane.tasks WHERE resource IS NOT NULL AND state IN ('running', 'cancelling')",
        &[],
    )
    .await
    .unwrap()
    .get(0)
}

#[tokio::test]
async fn one_slot_runs_one_task_and_every_ending_gives_it_back() {
    let db = common::test_db().await;
    let mut c = db.client().await;
    admission::set_resource(&c, RESOURCE, 1).await.unwrap();
    let gpu: Vec<_> = futures_util::future::join_all((0..4).map(|i| {
        let c = &c;
        async move { submit(c, &format!("g{i}"), Some(RESOURCE)).await }
    }))
    .await;
    let plain = submit(&c, "p", None).await;
    // One claim of ten: the plain task and one resource task.
    let claimed = fixtures::claim(&c, 10).await;
    assert_eq!(claimed.len(), 2);
    assert!(claimed.iter().any(|t| t.id == plain));
    assert_eq!((in_use(&c).await, running_with_resource(&c).await), (1, 1));
    assert!(fixtures::claim(&c, 10).await.is_empty());
    let holder = claimed.into_iter().find(|t| t.id != plain).unwrap();

    // Success gives it back.
    lease::complete(&c, holder.id, holder.lease_token, &Success::default())
        .await
        .unwrap();
    assert_eq!(in_use(&c).await, 0);
    let next = fixtures::claim_one(&c).await;
    // A retryable error (waiting for retry) gives it back.
    let report = Report::Error {
        code: "x".into(),
        message: "m".into(),
        retryable: true,
        retry_after: None,
    };
    lease::settle(
        &mut c,
        next.id,
        next.lease_token,
        report,
        &fixtures::fast_backoff(),
    )
    .await
    .unwrap();
    assert_eq!(in_use(&c).await, 0);
    // Lease expiry gives it back through the rescuer.
    let next = fixtures::claim_one(&c).await;
    fixtures::expire_lease(&c, next.id).await;
    assert!(
        fixtures::claim(&c, 10).await.is_empty(),
        "an expired lease still holds the slot until rescued"
    );
    assert_eq!(fixtures::rescue_expired(&c).await, 1);
    assert_eq!(in_use(&c).await, 0);
    // Cancellation: a running task keeps its slot while cancelling, gives it back once
    // cancelled.
    let next = fixtures::claim_one(&c).await;
    let owner = tasklane::task::owner::Owner::app(fixtures::APP);
    tasklane::store::cancel::cancel(&c, &owner, next.id)
        .await
        .unwrap();
    assert_eq!(in_use(&c).await, 1);
    lease::settle(
        &mut c,
        next.id,
        next.lease_token,
        Report::Cancelled,
        &fixtures::fast_backoff(),
    )
    .await
    .unwrap();
    assert_eq!(in_use(&c).await, 0);
    // Deletion gives it back.
    let next = fixtures::claim_one(&c).await;
    c.execute("DELETE FROM tasklane.tasks WHERE id = $1", &[&next.id])
        .await
        .unwrap();
    assert_eq!(in_use(&c).await, 0);
    assert!(gpu.len() == 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_claimers_never_exceed_the_slots() {
    let db = common::test_db().await;
    let c = db.client().await;
    admission::set_resource(&c, RESOURCE, 2).await.unwrap();
    for i in 0..40 {
        submit(&c, &format!("g{i}"), Some(RESOURCE)).await;
    }
    let mut claimers = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let c = db.client().await;
        claimers.spawn(async move {
            let mut max = 0;
            let mut done = 0;
            while done < 40 {
                let claimed = fixtures::claim(&c, 5).await;
                max = max.max(running_with_resource(&c).await);
                for t in &claimed {
                    lease::complete(&c, t.id, t.lease_token, &Success::default())
                        .await
                        .unwrap();
                }
                let left: i64 = c
                    .query_one(
                        "SELECT count(*) FROM tasklane.tasks WHERE state <> 'succeeded'",
                        &[],
                    )
                    .await
                    .unwrap()
                    .get(0);
                if left == 0 {
                    break;
                }
                done += claimed.len();
                assert!(claimed.len() <= 2);
            }
            max
        });
    }
    while let Some(max) = claimers.join_next().await {
        assert!(max.unwrap() <= 2);
    }
    assert_eq!(in_use(&c).await, 0);
}

#[tokio::test]
async fn lowered_slots_hand_out_nothing_until_under_and_unknown_resources_are_free() {
    let db = common::test_db().await;
    let c = db.client().await;
    admission::set_resource(&c, RESOURCE, 3).await.unwrap();
    for i in 0..5 {
        submit(&c, &format!("g{i}"), Some(RESOURCE)).await;
    }
    let running = fixtures::claim(&c, 10).await;
    assert_eq!(running.len(), 3);
    admission::set_resource(&c, RESOURCE, 1).await.unwrap();
    for (i, t) in running.iter().enumerate() {
        assert!(
            fixtures::claim(&c, 10).await.is_empty(),
            "still {} running",
            3 - i
        );
        lease::complete(&c, t.id, t.lease_token, &Success::default())
            .await
            .unwrap();
    }
    assert_eq!(fixtures::claim(&c, 10).await.len(), 1);
    // A resource nobody configured does not limit.
    for i in 0..3 {
        submit(&c, &format!("u{i}"), Some("unconfigured")).await;
    }
    assert_eq!(fixtures::claim(&c, 10).await.len(), 3);
}

#[tokio::test]
async fn external_claims_take_slots_and_a_fallback_gives_them_back() {
    use tasklane::task::{Locality, Privacy};
    let db = common::test_db().await;
    let mut c = db.client().await;
    admission::set_resource(&c, RESOURCE, 1).await.unwrap();
    let a = submit_as(&c, "a", Some(RESOURCE), Privacy::ExternalAllowed).await;
    submit_as(&c, "b", Some(RESOURCE), Privacy::ExternalAllowed).await;
    // A local worker takes the slot; the task falls back to an external worker.
    let local = fixtures::claim_one(&c).await;
    assert_eq!(local.id, a);
    assert!(
        fixtures::claim_at(&c, Locality::External, 10)
            .await
            .is_empty(),
        "the slot is taken"
    );
    let report = Report::Fallback {
        reason: "overloaded".into(),
    };
    lease::settle(
        &mut c,
        a,
        local.lease_token,
        report,
        &fixtures::fast_backoff(),
    )
    .await
    .unwrap();
    assert_eq!(in_use(&c).await, 0);
    // An external worker now takes one of the two, never both.
    let external = fixtures::claim_at(&c, Locality::External, 10).await;
    assert_eq!(external.len(), 1);
    assert_eq!((in_use(&c).await, running_with_resource(&c).await), (1, 1));
    lease::complete(
        &c,
        external[0].id,
        external[0].lease_token,
        &Success::default(),
    )
    .await
    .unwrap();
    assert_eq!(
        fixtures::claim_at(&c, Locality::External, 10).await.len(),
        1
    );
}

/// The plain claim of the external locality (an external claimer none of whose types names
/// a resource): external-allowed tasks without a resource, fresh or fallen back, with
/// their lease, attempt and locality; never a local-only task, and never one that needs a
/// slot, which stays for a resource-aware claimer.
#[tokio::test]
async fn external_plain_claims_leave_local_only_and_resource_tasks() {
    use tasklane::store::claim;
    use tasklane::task::{Locality, Privacy, TaskState};
    let db = common::test_db().await;
    let mut c = db.client().await;
    admission::set_resource(&c, RESOURCE, 1).await.unwrap();
    let fell = submit_as(&c, "fell", None, Privacy::ExternalAllowed).await;
    let local = fixtures::claim_one(&c).await;
    let report = Report::Fallback {
        reason: "overloaded".into(),
    };
    let backoff = fixtures::fast_backoff();
    lease::settle(&mut c, fell, local.lease_token, report, &backoff)
        .await
        .unwrap();
    let open = submit_as(&c, "open", None, Privacy::ExternalAllowed).await;
    let local_only = submit_as(&c, "local", None, Privacy::LocalOnly).await;
    let gpu = submit_as(&c, "gpu", Some(RESOURCE), Privacy::ExternalAllowed).await;

    let external = fixtures::claimant(Locality::External);
    let types = [TYPE.to_owned()];
    let claimed = claim::claim_without_resources(&c, &external, &types, 10)
        .await
        .unwrap();
    let mut got: Vec<_> = claimed.iter().map(|t| (t.id, t.attempt)).collect();
    got.sort();
    let mut want = vec![(fell, 2), (open, 1)];
    want.sort();
    assert_eq!(got, want);
    for id in [fell, open] {
        let task = fixtures::get(&c, id).await;
        assert_eq!(task.state, TaskState::Running);
        assert_eq!(task.route.as_deref(), Some("external"));
    }
    assert_eq!(in_use(&c).await, 0, "the plain claim takes no slot");
    for id in [local_only, gpu] {
        assert_eq!(fixtures::get(&c, id).await.state, TaskState::Queued);
    }
    // The resource task was left for a resource-aware claimer, not lost to it.
    let aware = fixtures::claim_at(&c, Locality::External, 10).await;
    assert_eq!(aware.iter().map(|t| t.id).collect::<Vec<_>>(), vec![gpu]);
    assert_eq!(in_use(&c).await, 1);
}
