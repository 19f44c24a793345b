//! Batch submits racing on the same identities (`store::submit_batch`): many real
//! connections send batches of the same identities, in different orders and with
//! repeats inside a batch, round after round. Each identity must end with exactly one
//! task and one `task.queued` event, and every item must get a single submit's answer:
//! created once, joined by every other item of the same request, conflict for an item
//! with another request.

use std::collections::HashMap;

use crate::common;
use common::fixtures::{capacity_limit, request, task_type, APP};
use tasklane::store::submit::{Submission, SubmitError};
use tasklane::store::submit_batch::{is_retryable, submit_many};
use tasklane::task::record::SubmitOutcome;
use tasklane::task::NewTask;

const CONNECTIONS: usize = 8;
const ROUNDS: usize = 6;
const IDENTITIES: usize = 40;

/// Connection `c`'s batch of round `round`: every identity once, rotated by `c` (so the
/// batches list them in different orders), the first one again at the end. Identities
/// `k % 10 == 3` carry a different input on each connection: only the creator's matches.
fn batch_of(round: usize, c: usize) -> Vec<(String, NewTask)> {
    let mut keys: Vec<usize> = (0..IDENTITIES).collect();
    keys.rotate_left(c * 5 % IDENTITIES);
    if c % 2 == 1 {
        keys.reverse();
    }
    keys.push(keys[0]);
    keys.into_iter()
        .map(|k| {
            let input = if k % 10 == 3 {
                serde_json::json!({"from": c})
            } else {
                serde_json::json!({"k": k})
            };
            let key = format!("r{round}-k{k}");
            let task = request(&key, input)
                .resolve(APP, &task_type(), 1 << 20)
                .expect("valid request");
            (key, task)
        })
        .collect()
}

/// What one item was answered: (effect key, outcome, task id if any).
type Answer = (String, &'static str, Option<uuid::Uuid>);

async fn send(pool: &tasklane::store::Pool, batch: Vec<(String, NewTask)>) -> Vec<Answer> {
    let client = pool.get().await.unwrap();
    let items: Vec<_> = batch
        .iter()
        .map(|(_, task)| (tasklane::task::new_task_id(), task))
        .collect();
    let answers = loop {
        match submit_many(&client, &items).await {
            // A deadlock rolls the whole batch back; the service runs it again.
            Err(error) if is_retryable(&error) => continue,
            other => break other.unwrap(),
        }
    };
    assert_eq!(answers.len(), batch.len());
    batch
        .into_iter()
        .zip(answers)
        .map(|((key, _), answer)| match answer {
            Ok(Submission::Accepted(s)) => {
                let outcome = match s.outcome {
                    SubmitOutcome::Created => "created",
                    SubmitOutcome::Joined => "joined",
                    SubmitOutcome::Existing => "existing",
                };
                (key, outcome, Some(s.task.id))
            }
            Err(SubmitError::IdempotencyConflict) => (key, "conflict", None),
            other => panic!("{key}: unexpected {other:?}"),
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_batches_create_each_identity_once() {
    let db = common::test_db().await;
    for round in 0..ROUNDS {
        let mut racers = tokio::task::JoinSet::new();
        for c in 0..CONNECTIONS {
            let pool = db.pool.clone();
            racers.spawn(async move { send(&pool, batch_of(round, c)).await });
        }
        let mut answers: Vec<Answer> = Vec::new();
        while let Some(batch) = racers.join_next().await {
            answers.extend(batch.unwrap());
        }
        let mut by_key: HashMap<String, Vec<(&'static str, Option<uuid::Uuid>)>> = HashMap::new();
        for (key, outcome, id) in answers {
            by_key.entry(key).or_default().push((outcome, id));
        }
        assert_eq!(by_key.len(), IDENTITIES);
        for (key, items) in &by_key {
            let created: Vec<_> = items.iter().filter(|(o, _)| *o == "created").collect();
            assert_eq!(created.len(), 1, "round {round} {key}: {items:?}");
            let id = created[0].1;
            let k: usize = key.rsplit('k').next().unwrap().parse().unwrap();
            for (outcome, other) in items.iter().filter(|(o, _)| *o != "created") {
                if k % 10 == 3 {
                    // Another connection's input: a conflict, except the repeat of the
                    // creator's own item (the first key of its batch).
                    assert!(
                        *outcome == "conflict" || (*outcome == "joined" && *other == id),
                        "round {round} {key}: {items:?}"
                    );
                } else {
                    assert_eq!(
                        (*outcome, *other),
                        ("joined", id),
                        "round {round} {key}: {items:?}"
                    );
                }
            }
        }
        let c = db.client().await;
        let rows = c
            .query(
                "SELECT t.effect_key, count(DISTINCT t.id), count(e.*)
                 FROM tasklane.tasks t JOIN tasklane.task_events e ON e.task_id = t.id
                 WHERE t.effect_key LIKE $1 GROUP BY 1",
                &[&format!("r{round}-%")],
            )
            .await
            .unwrap();
        assert_eq!(rows.len(), IDENTITIES, "round {round}");
        for row in rows {
            let (key, tasks, events): (String, i64, i64) = (row.get(0), row.get(1), row.get(2));
            assert_eq!((tasks, events), (1, 1), "round {round} {key}");
            let id = by_key[&key]
                .iter()
                .find(|(o, _)| *o == "created")
                .unwrap()
                .1;
            let stored: uuid::Uuid = c
                .query_one(
                    "SELECT id FROM tasklane.tasks WHERE effect_key = $1",
                    &[&key],
                )
                .await
                .unwrap()
                .get(0);
            assert_eq!(Some(stored), id, "round {round} {key}");
        }
    }
}

/// Concurrent single submits through a coalescing service (`Tasklane::submit` with
/// `with_submit_coalescing`, as `tasklane serve` runs it): whatever groups they land in,
/// each is answered as alone. A fenced scope and a subject at its capacity are
/// refused per item; repeats join; another request conflicts.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn coalesced_single_submits_are_answered_as_alone() {
    use tasklane::service::{Owner, ServiceError};
    let db = common::test_db().await;
    let c = db.client().await;
    tasklane::store::lifecycle::delete(&c, APP, "fenced", None, true)
        .await
        .unwrap();
    capacity_limit(&c, "vip", 1).await;
    let service =
        common::service::tasklane(db.pool.clone(), [task_type()]).with_submit_coalescing(8);
    for round in 0..ROUNDS {
        let mut submits = tokio::task::JoinSet::new();
        for n in 0..64usize {
            let service = service.clone();
            submits.spawn(async move {
                let k = n % 16;
                let mut r = request(&format!("c{round}-k{k}"), serde_json::json!({"k": k}));
                match n / 16 {
                    // The fourth submit of identity 0 asks for something else.
                    3 if k == 0 => r.input = serde_json::json!({"other": true}),
                    _ => {}
                }
                if k == 1 {
                    r.scope_id = "fenced".into();
                }
                if k == 2 || k == 3 {
                    r.usage_subject = Some("vip".into());
                }
                let answer = service.submit(&Owner::app(APP), &r).await;
                (n, k, answer)
            });
        }
        let mut ids: HashMap<usize, Vec<(usize, uuid::Uuid, SubmitOutcome)>> = HashMap::new();
        let mut vip_refused = 0;
        let mut conflicts = Vec::new();
        while let Some(joined) = submits.join_next().await {
            let (n, k, answer) = joined.unwrap();
            match (k, answer) {
                (1, Err(ServiceError::ScopeDeleted)) => {}
                (0, Err(ServiceError::IdempotencyConflict)) => conflicts.push(n),
                (2 | 3, Err(ServiceError::Refused(r))) => {
                    assert_eq!(r.code.as_str(), "capacity_exhausted");
                    vip_refused += 1;
                }
                (_, Ok(s)) => ids.entry(k).or_default().push((n, s.task.id, s.outcome)),
                (k, other) => panic!("round {round} item {n} (identity {k}): {other:?}"),
            }
        }
        for (k, answers) in &ids {
            let created = answers
                .iter()
                .filter(|(_, _, o)| *o == SubmitOutcome::Created)
                .count();
            assert_eq!(created, 1, "round {round} identity {k}: {answers:?}");
            assert!(
                answers.iter().all(|(_, id, _)| *id == answers[0].1),
                "round {round} identity {k}: {answers:?}"
            );
        }
        // Identity 0: the other request (n = 48) conflicts, unless it came first: then
        // it created the task and the three others conflict.
        let zero: Vec<usize> = ids[&0].iter().map(|(n, _, _)| *n).collect();
        conflicts.sort();
        if conflicts == [48] {
            assert_eq!(zero.len(), 3, "round {round}");
        } else {
            assert_eq!(
                (zero, conflicts),
                (vec![48], vec![0, 16, 32]),
                "round {round}"
            );
        }
        // The one vip slot: taken in round 0 by identity 2 or 3, never freed.
        let vip_created = [2, 3].iter().filter(|k| ids.contains_key(k)).count();
        assert_eq!(vip_created, usize::from(round == 0), "round {round}");
        assert_eq!(vip_refused, 8 - 4 * vip_created, "round {round}");
        let tasks = common::fixtures::count(
            &c,
            &format!("SELECT count(*) FROM tasklane.tasks WHERE effect_key LIKE 'c{round}-%'"),
        )
        .await;
        assert_eq!(tasks as usize, ids.len(), "round {round}");
    }
}

/// Each submit group being written holds a connection, so `serve` refuses more groups
/// than its pool before anything connects, naming both flags and their variables; the
/// database is left as it was.
#[tokio::test]
async fn more_submit_groups_than_connections_are_refused_at_start() {
    let db = common::empty_db().await;
    let env = [
        ("DATABASE_URL", db.url.as_str()),
        ("TASKLANE_SUBMIT_GROUPS", "5"),
    ];
    let stderr = common::serve::refused_at_start(&["--pool-size", "4"], &env).await;
    for name in [
        "--submit-groups",
        "TASKLANE_SUBMIT_GROUPS",
        "--pool-size",
        "is 5",
    ] {
        assert!(
            stderr.contains(name),
            "the error does not say {name}: {stderr}"
        );
    }
    let client = db.client().await;
    let schemas: i64 = client
        .query_one(
            "SELECT count(*) FROM pg_namespace WHERE nspname = 'tasklane'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(schemas, 0, "the tasklane schema was created");
}

/// A submit whose caller gives up while it waits for its group (a client that
/// disconnected) is not written: it was never answered, so nothing was acknowledged.
/// The one flusher waits for the pool's only connection, which the test holds, so the
/// second submit is still waiting when it is dropped; on this current-thread runtime
/// the yields run each spawned submit until it waits for its answer.
#[tokio::test(flavor = "current_thread")]
async fn a_submit_dropped_while_queued_is_not_written() {
    use tasklane::service::Owner;
    let db = common::test_db().await;
    let pool = common::pool(&db.url, 1);
    let service = common::service::tasklane(pool.clone(), [task_type()]).with_submit_coalescing(1);
    let held = pool.get().await.unwrap();
    let submit = |key: &'static str| {
        let service = service.clone();
        tokio::spawn(async move {
            service
                .submit(&Owner::app(APP), &request(key, serde_json::json!({})))
                .await
        })
    };
    let first = submit("kept");
    let dropped = submit("dropped");
    for _ in 0..3 {
        tokio::task::yield_now().await;
    }
    dropped.abort();
    assert!(dropped.await.unwrap_err().is_cancelled());
    drop(held);
    first.await.unwrap().expect("the first submit is written");
    // The dropped submit's group goes after the first's; one more submit behind it
    // proves that group was taken (the one flusher took them in order).
    let after = submit("after");
    after.await.unwrap().expect("a later submit is written");
    let c = db.client().await;
    let keys = common::fixtures::count(
        &c,
        "SELECT count(*) FROM tasklane.tasks WHERE effect_key = 'dropped'",
    )
    .await;
    assert_eq!(keys, 0, "a submit nobody waits for was written");
}
