//! The restart-policy table (what becomes of a task whose worker was lost: by state,
//! policy and attempts left), every cell: tasks found with an expired lease (the
//! rescuer) and at a cold start (a replica starting with no other live).

use crate::common;

use std::time::Duration;

use common::fixtures::*;
use tasklane::maintenance::replicas::ReplicaRegistry;
use tasklane::store::claim;
use tasklane::store::lease;
use tasklane::task::claim::Claimant;
use tasklane::task::lease::Beat;
use tasklane::task::owner::Owner;
use tasklane::task::{Locality, RestartPolicy, TaskState};
use tokio_postgres::Client;
use uuid::Uuid;

const POLICIES: [RestartPolicy; 3] = [
    RestartPolicy::Fail,
    RestartPolicy::Retry,
    RestartPolicy::Resume,
];

async fn submit_policy(c: &Client, key: &str, policy: RestartPolicy, max_attempts: i32) -> Uuid {
    submit_with(c, key, serde_json::json!({}), |r| {
        r.on_restart = Some(policy);
        r.max_attempts = Some(max_attempts);
    })
    .await
    .id
}

/// Claims exactly `id` as a worker of replica `replica`.
async fn claim_as(
    c: &Client,
    id: Uuid,
    replica: Option<Uuid>,
) -> tasklane::task::claim::ClaimedTask {
    let claimant = Claimant {
        worker_id: "w",
        locality: Locality::Local,
        replica_id: replica,
    };
    let claimed = claim::claim(c, &claimant, &[TYPE.to_owned()], 1)
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].id, id);
    claimed.into_iter().next().unwrap()
}

fn registry(db: &common::TestDb) -> ReplicaRegistry {
    ReplicaRegistry {
        pool: db.pool.clone(),
        id: Uuid::now_v7(),
        name: "test".into(),
        ttl: Duration::from_secs(15),
        duties: tasklane::store::replicas::Duties {
            maintains: true,
            works: true,
        },
        sweeps: Default::default(),
        polls: Default::default(),
    }
}

#[tokio::test]
async fn expired_running_tasks_follow_their_policy() {
    let db = common::test_db().await;
    let c = db.client().await;
    let mut ids = Vec::new();
    for policy in POLICIES {
        let id = submit_policy(&c, policy.as_str(), policy, 3).await;
        let claimed = claim_as(&c, id, None).await;
        let beat = Beat {
            snapshot: Some(serde_json::json!({"step": 7})),
            progress: Some(70),
            ..Default::default()
        };
        lease::heartbeat(&c, id, claimed.lease_token, &beat)
            .await
            .unwrap();
        expire_lease(&c, id).await;
        ids.push(id);
    }
    assert_eq!(rescue_expired(&c).await, 3);
    let fail = get(&c, ids[0]).await;
    assert_eq!(
        (fail.state, fail.error_code.as_deref()),
        (TaskState::Failed, Some("server_restarted"))
    );
    assert_eq!(get(&c, ids[1]).await.state, TaskState::Queued);
    assert_eq!(get(&c, ids[2]).await.state, TaskState::Queued);
    assert_eq!(
        event_types(&c, ids[1]).await,
        vec![
            "task.queued",
            "task.running",
            "task.progress",
            "task.queued"
        ]
    );

    // retry starts from scratch; resume hands the last snapshot to the next attempt.
    let retried = claim_as(&c, ids[1], None).await;
    assert_eq!((retried.attempt, retried.snapshot), (2, None));
    let resumed = claim_as(&c, ids[2], None).await;
    assert_eq!(
        (resumed.attempt, resumed.snapshot),
        (2, Some(serde_json::json!({"step": 7})))
    );
}

#[tokio::test]
async fn retry_and_resume_give_up_past_max_attempts() {
    let db = common::test_db().await;
    let c = db.client().await;
    for policy in [RestartPolicy::Retry, RestartPolicy::Resume] {
        let id = submit_policy(&c, policy.as_str(), policy, 2).await;
        for attempt in 1..=2 {
            let claimed = claim_as(&c, id, None).await;
            assert_eq!(claimed.attempt, attempt);
            expire_lease(&c, id).await;
            rescue_expired(&c).await;
        }
        let done = get(&c, id).await;
        assert_eq!(
            (done.state, done.error_code.as_deref()),
            (TaskState::Failed, Some("attempts_exhausted"))
        );
        assert_eq!(done.attempt, 2);
    }
    assert!(claim(&c, 10).await.is_empty());
}

#[tokio::test]
async fn expired_cancelling_tasks_are_cancelled_whatever_the_policy() {
    let db = common::test_db().await;
    let c = db.client().await;
    for policy in POLICIES {
        let id = submit_policy(&c, policy.as_str(), policy, 3).await;
        claim_as(&c, id, None).await;
        tasklane::store::cancel::cancel(&c, &Owner::app(APP), id)
            .await
            .unwrap();
        expire_lease(&c, id).await;
        rescue_expired(&c).await;
        assert_eq!(get(&c, id).await.state, TaskState::Cancelled, "{policy:?}");
        assert_eq!(event_types(&c, id).await.last().unwrap(), "task.cancelled");
    }
}

#[tokio::test]
async fn live_leases_and_queued_tasks_are_left_alone_by_the_rescuer() {
    let db = common::test_db().await;
    let c = db.client().await;
    let running = submit_policy(&c, "running", RestartPolicy::Fail, 3).await;
    let queued = submit_policy(&c, "queued", RestartPolicy::Fail, 3).await;
    claim_as(&c, running, None).await; // the older one; its lease is live
    assert_eq!(rescue_expired(&c).await, 0);
    assert_eq!(get(&c, running).await.state, TaskState::Running);
    assert_eq!(get(&c, queued).await.state, TaskState::Queued);
}

/// A cold start applies the whole table: queued rows included, running rows whatever
/// their lease says; a task leased by a remote worker is left to its lease.
#[tokio::test]
async fn cold_start_applies_every_cell_of_the_table() {
    let db = common::test_db().await;
    let c = db.client().await;
    let dead_replica = Some(Uuid::now_v7());
    let mut queued = Vec::new();
    let mut running = Vec::new();
    let mut cancelling = Vec::new();
    for policy in POLICIES {
        queued.push(submit_policy(&c, &format!("q-{}", policy.as_str()), policy, 3).await);
    }
    // Claim the queued ones of this batch later; first create running and cancelling.
    for policy in POLICIES {
        let id = submit_policy(&c, &format!("r-{}", policy.as_str()), policy, 3).await;
        running.push(id);
        let id = submit_policy(&c, &format!("c-{}", policy.as_str()), policy, 3).await;
        cancelling.push(id);
    }
    for id in running.iter().chain(&cancelling) {
        c.execute(
            "UPDATE tasklane.tasks SET priority = 1 WHERE id = $1",
            &[id],
        )
        .await
        .unwrap();
        let claimed = claim_as(&c, *id, dead_replica).await;
        let beat = Beat {
            snapshot: Some(serde_json::json!({"at": id.to_string()})),
            ..Default::default()
        };
        lease::heartbeat(&c, *id, claimed.lease_token, &beat)
            .await
            .unwrap();
    }
    for id in &cancelling {
        tasklane::store::cancel::cancel(&c, &Owner::app(APP), *id)
            .await
            .unwrap();
    }
    let remote = submit_policy(&c, "remote", RestartPolicy::Fail, 3).await;
    c.execute(
        "UPDATE tasklane.tasks SET priority = 1 WHERE id = $1",
        &[&remote],
    )
    .await
    .unwrap();
    claim_as(&c, remote, None).await;

    assert!(
        registry(&db).register().await.unwrap(),
        "no replica is live: a cold start"
    );

    let state = |id| {
        let c = &c;
        async move {
            let t = get(c, id).await;
            (t.state, t.error_code)
        }
    };
    let failed = (TaskState::Failed, Some("server_restarted".to_owned()));
    let queued_again = (TaskState::Queued, None);
    assert_eq!(state(queued[0]).await, failed);
    assert_eq!(state(queued[1]).await, queued_again);
    assert_eq!(state(queued[2]).await, queued_again);
    assert_eq!(state(running[0]).await, failed);
    assert_eq!(state(running[1]).await, queued_again);
    assert_eq!(state(running[2]).await, queued_again);
    for id in &cancelling {
        assert_eq!(state(*id).await.0, TaskState::Cancelled);
    }
    assert_eq!(
        state(remote).await.0,
        TaskState::Running,
        "a remote worker's lease is its own"
    );
    // Nothing was requeued twice: each moved task has exactly one event for the move.
    assert_eq!(
        event_types(&c, running[1]).await,
        vec!["task.queued", "task.running", "task.queued"]
    );
    let snapshot: Option<serde_json::Value> = c
        .query_one(
            "SELECT snapshot FROM tasklane.tasks WHERE id = $1",
            &[&running[2]],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        snapshot,
        Some(serde_json::json!({"at": running[2].to_string()})),
        "resume keeps the snapshot"
    );
}

#[tokio::test]
async fn a_replica_joining_live_ones_is_not_a_cold_start() {
    let db = common::test_db().await;
    let c = db.client().await;
    let id = submit_policy(&c, "q", RestartPolicy::Fail, 3).await;
    assert!(registry(&db).register().await.unwrap());
    assert!(
        !registry(&db).register().await.unwrap(),
        "the first replica is live"
    );
    // The second start failed nothing (the first one's cold start already did).
    assert_eq!(
        event_types(&c, id).await,
        vec!["task.queued", "task.failed"]
    );
    let again = submit_policy(&c, "q2", RestartPolicy::Fail, 3).await;
    assert!(!registry(&db).register().await.unwrap());
    assert_eq!(get(&c, again).await.state, TaskState::Queued);
}
