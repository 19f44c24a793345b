//! The group commit of completions (`store::complete_many`, `worker::completer`) must
//! answer each task exactly as the one-at-a-time completion would: settled with one
//! event, lease lost (stale token, even beside the fresh one in the same batch), or gone.

use crate::common;

use common::fixtures::*;
use tasklane::service::ServiceError;
use tasklane::store::complete_many::complete_many;
use tasklane::store::lease::LeaseError;
use tasklane::task::settlement::Completion;
use tasklane::task::settlement::Success;
use tasklane::task::TaskState;
use tasklane::worker::completer::Completer;

fn done(id: uuid::Uuid, lease_token: uuid::Uuid, result: serde_json::Value) -> Completion {
    Completion {
        id,
        lease_token,
        success: Success {
            result,
            ..Default::default()
        },
    }
}

#[tokio::test]
async fn batch_answers_each_task_like_a_single_completion() {
    let db = common::test_db().await;
    let object = db.pool.get().await.unwrap();
    let c: &tokio_postgres::Client = &object;
    let ok = submit(c, "ok", serde_json::json!({})).await;
    let stale = submit(c, "stale", serde_json::json!({})).await;
    let gone = submit(c, "gone", serde_json::json!({})).await;
    let claimed = claim(c, 3).await;
    let token = |id| claimed.iter().find(|t| t.id == id).unwrap().lease_token;
    // `stale` is rescued and re-claimed: its first token is stale, the new one fresh.
    expire_lease(c, stale.id).await;
    rescue_expired(c).await;
    let fresh = claim_one(c).await;
    assert_eq!(fresh.id, stale.id);
    c.execute("DELETE FROM tasklane.tasks WHERE id = $1", &[&gone.id])
        .await
        .unwrap();
    let events_before = event_types(c, stale.id).await;

    let mut batch = vec![
        done(ok.id, token(ok.id), serde_json::json!("ok")),
        done(stale.id, token(stale.id), serde_json::json!("stale")),
        done(fresh.id, fresh.lease_token, serde_json::json!("fresh")),
        done(gone.id, token(gone.id), serde_json::json!("gone")),
    ];
    batch.sort_by_key(|c| c.id);
    let answers = complete_many(&object, &batch, None).await.unwrap().answers;
    for (completion, answer) in batch.iter().zip(&answers) {
        let expected = match completion.success.result.as_str() {
            Some("ok") | Some("fresh") => "ok",
            Some("stale") => "lost",
            _ => "gone",
        };
        let got = match answer {
            Ok(()) => "ok",
            Err(LeaseError::Lost) => "lost",
            Err(LeaseError::Gone) => "gone",
            Err(error) => panic!("unexpected {error}"),
        };
        assert_eq!(got, expected, "{:?}", completion.success.result);
    }
    let ok_now = get(c, ok.id).await;
    assert_eq!(
        (ok_now.state, ok_now.result),
        (TaskState::Succeeded, Some(serde_json::json!("ok")))
    );
    assert_eq!(
        event_types(c, ok.id).await,
        vec!["task.queued", "task.running", "task.succeeded"]
    );
    let fresh_now = get(c, fresh.id).await;
    assert_eq!(
        (fresh_now.state, fresh_now.result),
        (TaskState::Succeeded, Some(serde_json::json!("fresh")))
    );
    let mut expected = events_before.clone();
    expected.push("task.succeeded".into());
    assert_eq!(
        event_types(c, stale.id).await,
        expected,
        "exactly one settlement event"
    );
    let seqs: Vec<i32> = c
        .query(
            "SELECT seq FROM tasklane.task_events WHERE task_id = $1 ORDER BY seq",
            &[&stale.id],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(
        seqs,
        (1..=seqs.len() as i32).collect::<Vec<_>>(),
        "contiguous seqs"
    );
    let count: i64 = c
        .query_one(
            "SELECT count(*) FROM tasklane.tasks WHERE id = $1",
            &[&gone.id],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(count, 0, "a late write recreates nothing");
}

#[tokio::test]
async fn completer_settles_concurrent_attempts_each_once() {
    let db = common::test_db().await;
    let c = db.client().await;
    for n in 0..60 {
        submit(&c, &format!("k{n}"), serde_json::json!({"n": n})).await;
    }
    let claimed = claim(&c, 60).await;
    assert_eq!(claimed.len(), 60);
    let tasklane = common::service::tasklane(db.pool.clone(), [common::fixtures::task_type()]);
    let completer = Completer::start(tasklane, 16, 2);
    let mut attempts = tokio::task::JoinSet::new();
    for task in &claimed {
        let (completer, id, token, input) = (
            completer.clone(),
            task.id,
            task.lease_token,
            task.input.clone(),
        );
        attempts.spawn(async move {
            completer
                .complete(
                    id,
                    token,
                    Success {
                        result: input,
                        ..Default::default()
                    },
                )
                .await
        });
    }
    while let Some(answer) = attempts.join_next().await {
        answer.unwrap().unwrap();
    }
    // A second completion of the same attempt is a lost lease, as for the single path.
    let again = completer
        .complete(claimed[0].id, claimed[0].lease_token, Success::default())
        .await;
    assert!(matches!(again, Err(ServiceError::LeaseLost)));
    for task in &claimed {
        assert_eq!(
            event_types(&c, task.id).await,
            vec!["task.queued", "task.running", "task.succeeded"]
        );
        assert_eq!(get(&c, task.id).await.result, Some(task.input.clone()));
    }
}

/// V32 writes the batch's attempt rows with a plain insert: an attempt row already there
/// (never by this schema's own statements: each attempt's row is written by the one
/// statement that ends its lease) fails the batch, and the completer settles its tasks
/// one by one, the neighbour included, the existing row kept.
#[tokio::test]
async fn completer_settles_a_batch_that_meets_an_attempt_row_one_by_one() {
    let db = common::test_db().await;
    let c = db.client().await;
    let first = submit(&c, "first", serde_json::json!({})).await;
    let second = submit(&c, "second", serde_json::json!({})).await;
    let claimed = claim(&c, 2).await;
    assert_eq!(claimed.len(), 2);
    c.execute(
        "INSERT INTO tasklane.task_attempts (task_id, attempt, started_at, finished_at, outcome)
         VALUES ($1, 1, now(), now(), 'lost')",
        &[&first.id],
    )
    .await
    .unwrap();
    let mut batch: Vec<Completion> = claimed
        .iter()
        .map(|t| done(t.id, t.lease_token, serde_json::json!("done")))
        .collect();
    batch.sort_by_key(|c| c.id);
    let object = db.pool.get().await.unwrap();
    let failed = complete_many(&object, &batch, None).await;
    assert!(failed.is_err(), "the batch statement meets the row");
    assert_eq!(
        get(&c, first.id).await.state,
        TaskState::Running,
        "and changes nothing"
    );

    let tasklane = common::service::tasklane(db.pool.clone(), [common::fixtures::task_type()]);
    let completer = Completer::start(tasklane, 16, 2);
    let (a, b) = tokio::join!(
        completer.complete(claimed[0].id, claimed[0].lease_token, Success::default()),
        completer.complete(claimed[1].id, claimed[1].lease_token, Success::default()),
    );
    a.unwrap();
    b.unwrap();
    for id in [first.id, second.id] {
        assert_eq!(get(&c, id).await.state, TaskState::Succeeded);
    }
    let outcomes: Vec<(uuid::Uuid, String)> = c
        .query(
            "SELECT task_id, outcome FROM tasklane.task_attempts
             WHERE task_id = ANY($1) ORDER BY task_id",
            &[&vec![first.id, second.id]],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let mut expected = vec![
        (first.id, "lost".to_owned()),
        (second.id, "succeeded".to_owned()),
    ];
    expected.sort();
    assert_eq!(outcomes, expected);
}

/// A replica's own workers may claim up to 256 tasks at once (`--claim-batch`), a
/// remote worker (it claims as its token's owner) at most 100: the batch of 200 is
/// claimed whole and settled in one group commit; the remote claim of 101 is refused
/// and takes nothing.
#[tokio::test]
async fn an_in_process_claim_takes_up_to_256_a_remote_one_100() {
    let db = common::test_db().await;
    let c = db.client().await;
    for n in 0..201 {
        submit(&c, &format!("k{n}"), serde_json::json!({"n": n})).await;
    }
    let tasklane = common::service::tasklane(db.pool.clone(), [common::fixtures::task_type()]);
    let types = [common::fixtures::TYPE.to_owned()];
    let remote = tasklane
        .claim(
            &claimant(tasklane::task::Locality::Local),
            Some(&tasklane::task::owner::Owner::app(APP)),
            &types,
            101,
        )
        .await;
    assert!(
        matches!(remote, Err(ServiceError::Invalid(_))),
        "{remote:?}"
    );
    let over = tasklane
        .claim(
            &claimant(tasklane::task::Locality::Local),
            None,
            &types,
            257,
        )
        .await;
    assert!(matches!(over, Err(ServiceError::Invalid(_))), "{over:?}");
    let claimed = tasklane
        .claim(
            &claimant(tasklane::task::Locality::Local),
            None,
            &types,
            200,
        )
        .await
        .unwrap();
    assert_eq!(claimed.len(), 200);
    let mut batch: Vec<Completion> = claimed
        .iter()
        .map(|t| done(t.id, t.lease_token, serde_json::json!("done")))
        .collect();
    batch.sort_by_key(|c| c.id);
    let object = db.pool.get().await.unwrap();
    let answers = complete_many(&object, &batch, None).await.unwrap().answers;
    assert_eq!(answers.iter().filter(|a| a.is_ok()).count(), 200);
    let left: i64 = c
        .query_one(
            "SELECT count(*) FROM tasklane.tasks WHERE state = 'queued'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(left, 1);
}
