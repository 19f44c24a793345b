//! The events NOTIFY (`tasklane_events`, migration V28): one notification per statement
//! naming every task whose terminal event or worker output the statement wrote, up to
//! 200 ids to a payload, sent at commit; statements that write other events (a claim's
//! `task.running`) send nothing. The replicas' watch (`src/http/watch.rs`) wakes the
//! waiters of each id.

use crate::common;

use std::collections::HashSet;

use common::fixtures::*;
use tasklane::store::cancel;
use tasklane::store::complete_many::complete_many;
use tasklane::task::owner::Owner;
use uuid::Uuid;

/// Payloads heard until `marker` (sent by another connection after the statements
/// under test committed, so everything they sent arrives before it).
async fn heard_until_marker(
    db: &common::TestDb,
    notifications: &mut tokio::sync::mpsc::UnboundedReceiver<String>,
) -> Vec<String> {
    db.client()
        .await
        .execute("NOTIFY tasklane_events, 'marker'", &[])
        .await
        .unwrap();
    let mut heard = Vec::new();
    loop {
        let payload = notifications.recv().await.expect("a notification");
        if payload == "marker" {
            return heard;
        }
        heard.push(payload);
    }
}

fn ids(payload: &str) -> Vec<Uuid> {
    payload
        .split(',')
        .map(|id| Uuid::parse_str(id).expect("a task id"))
        .collect()
}

#[tokio::test]
async fn a_group_commit_notifies_its_tasks_in_one_notification_per_200() {
    let (heard, settled) = group_commit_heard(250).await;
    let sizes: Vec<usize> = heard.iter().map(|payload| ids(payload).len()).collect();
    assert_eq!(sizes, [200, 50], "one statement's 250 tasks");
    let named: HashSet<Uuid> = heard.iter().flat_map(|payload| ids(payload)).collect();
    assert_eq!(named, settled, "each settled task named once");
}

/// At the edge of a payload: 200 tasks fill exactly one notification, with no empty
/// second one.
#[tokio::test]
async fn a_group_commit_of_200_sends_one_notification() {
    let (heard, settled) = group_commit_heard(200).await;
    assert_eq!(heard.len(), 1, "{heard:?}");
    let named: HashSet<Uuid> = ids(&heard[0]).into_iter().collect();
    assert_eq!(named, settled);
}

/// Queues and claims `tasks` tasks (checking that neither sends a notification), settles
/// them in one group commit, and returns the payloads that commit sent with the ids
/// it settled.
async fn group_commit_heard(tasks: usize) -> (Vec<String>, HashSet<Uuid>) {
    let db = common::test_db().await;
    let c = db.client().await;
    c.batch_execute(&queue_sql(tasks, &format!("'{TYPE}'"), "0", "k"))
        .await
        .unwrap();
    let (_listener, mut notifications) = listen(&db.url, "tasklane_events").await;

    // Submits and claims write queued and running events: nothing is sent.
    let claimed = claim(&c, tasks as i64).await;
    assert_eq!(claimed.len(), tasks);
    assert_eq!(
        heard_until_marker(&db, &mut notifications).await,
        Vec::<String>::new()
    );

    let pool = db.pool.get().await.unwrap();
    let answers = complete_many(&pool, &successes(&claimed), None)
        .await
        .unwrap()
        .answers;
    assert!(answers.iter().all(Result::is_ok));
    let heard = heard_until_marker(&db, &mut notifications).await;
    (heard, claimed.iter().map(|task| task.id).collect())
}

#[tokio::test]
async fn a_single_terminal_transition_names_its_task_at_commit_only() {
    let db = common::test_db().await;
    let mut c = db.client().await;
    let task = submit(&c, "one", serde_json::json!({})).await;
    let (_listener, mut notifications) = listen(&db.url, "tasklane_events").await;
    let owner = Owner::app(APP);

    let tx = c.transaction().await.unwrap();
    cancel::cancel(&tx, &owner, task.id).await.unwrap();
    tx.rollback().await.unwrap();
    assert_eq!(
        heard_until_marker(&db, &mut notifications).await,
        Vec::<String>::new()
    );

    cancel::cancel(&c, &owner, task.id).await.unwrap();
    assert_eq!(
        heard_until_marker(&db, &mut notifications).await,
        [task.id.to_string()]
    );
}
