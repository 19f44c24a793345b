//! Races, each repeated many times with real connections and no sleeps: owner deletion
//! against 16 concurrent submitters, deletion against a worker's writes, release
//! against completion.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use tasklane::store::lease::{self, LeaseError};

use tasklane::task::lease::Beat;

use tasklane::store::lifecycle;
use tasklane::store::SubmitError;
use tasklane::task::record::SubmitOutcome;
use tasklane::task::settlement::Success;
use tasklane::task::TaskState;
use tokio::sync::Notify;
use uuid::Uuid;

use super::support::*;
use crate::common::fixtures::{self, APP};

const SUBMITTERS: usize = 16;
const ROUNDS: usize = 12;

/// What one submit saw, for the checks after the round.
struct Seen {
    id: Option<Uuid>,
    /// Its commit returned before the deleter began: it must be deleted.
    committed_before_delete: bool,
    /// It began after the deletion committed.
    began_after_delete: bool,
    refused: bool,
}

struct Round {
    scope: String,
    created: AtomicUsize,
    enough: Notify,
    delete_began: AtomicBool,
    delete_done: AtomicBool,
}

async fn submitter(
    c: tokio_postgres::Client,
    round: Arc<Round>,
    n: usize,
    fence: bool,
) -> Vec<Seen> {
    let mut seen = Vec::new();
    let mut after_done = 0;
    for i in 0.. {
        let began_after_delete = round.delete_done.load(Ordering::SeqCst);
        let key = format!("{n}-{i}");
        let result = try_submit_at(&c, At::scope(&round.scope), &key).await;
        let committed_before_delete = !round.delete_began.load(Ordering::SeqCst);
        let (id, refused) = match result {
            Ok(s) => {
                assert_eq!(s.outcome, SubmitOutcome::Created);
                if round.created.fetch_add(1, Ordering::SeqCst) + 1 == 4 * SUBMITTERS {
                    round.enough.notify_one();
                }
                (Some(s.task.id), false)
            }
            Err(SubmitError::ScopeDeleted) => (None, true),
            Err(error) => panic!("submit: {error}"),
        };
        seen.push(Seen {
            id,
            committed_before_delete,
            began_after_delete,
            refused,
        });
        if began_after_delete {
            after_done += 1;
        }
        // Without a fence keep submitting a little after the deletion; with one, until
        // refused.
        if (fence && refused) || (!fence && after_done >= 3) {
            return seen;
        }
    }
    unreachable!()
}

async fn delete_during_submits(db: &crate::common::TestDb, fence: bool) {
    let check = db.client().await;
    let bystander = submit_at(&check, At::scope("bystander"), "b").await;
    for r in 0..ROUNDS {
        let round = Arc::new(Round {
            scope: format!("owner-{fence}-{r}"),
            created: AtomicUsize::new(0),
            enough: Notify::new(),
            delete_began: AtomicBool::new(false),
            delete_done: AtomicBool::new(false),
        });
        let mut submitters = Vec::new();
        for n in 0..SUBMITTERS {
            submitters.push(tokio::spawn(submitter(
                db.client().await,
                round.clone(),
                n,
                fence,
            )));
        }
        let mut deleter = db.client().await;
        round.enough.notified().await;
        round.delete_began.store(true, Ordering::SeqCst);
        let tx = deleter.transaction().await.unwrap();
        let deleted = lifecycle::delete(&tx, APP, &round.scope, None, fence)
            .await
            .unwrap();
        // The deletion's xid is assigned after it holds the owner lock; a submit that
        // inserted while holding the lock shared before it has a smaller xid.
        let xid: i64 = tx
            .query_one(
                "SELECT pg_current_xact_id()::text::bigint % 4294967296",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        tx.commit().await.unwrap();
        round.delete_done.store(true, Ordering::SeqCst);
        let mut seen = Vec::new();
        for s in submitters {
            seen.extend(s.await.unwrap());
        }
        let created = seen.iter().filter(|s| s.id.is_some()).count() as u64;
        let survivors: Vec<(Uuid, i64)> = check
            .query("SELECT id, xmin::text::bigint FROM tasklane.tasks WHERE app = $1 AND scope_id = $2", &[&APP, &round.scope])
            .await
            .unwrap()
            .iter()
            .map(|row| (row.get(0), row.get(1)))
            .collect();
        assert_eq!(
            deleted + survivors.len() as u64,
            created,
            "round {r}: every created task is deleted or survives"
        );
        for (id, xmin) in &survivors {
            assert!(
                *xmin > xid,
                "round {r}: task {id} (xid {xmin}) predates the deletion (xid {xid}) yet survived"
            );
        }
        for s in seen.iter().filter(|s| s.committed_before_delete) {
            let id = s.id.expect("no fence before the deletion");
            assert!(
                !survivors.iter().any(|(sid, _)| *sid == id),
                "round {r}: {id} committed before the deletion"
            );
        }
        if fence {
            assert!(
                survivors.is_empty(),
                "round {r}: a fenced scope got a task after its deletion"
            );
            assert!(
                seen.iter()
                    .filter(|s| s.began_after_delete)
                    .all(|s| s.refused),
                "round {r}"
            );
            assert!(lifecycle::lift_fence(&check, APP, &round.scope)
                .await
                .unwrap());
        } else {
            assert!(seen.iter().all(|s| !s.refused));
        }
    }
    assert!(
        exists(&check, bystander.id).await,
        "another scope is never touched"
    );
    assert_no_advisory_locks(db).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn deletion_while_16_connections_submit_to_the_scope() {
    let db = crate::common::test_db().await;
    delete_during_submits(&db, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fenced_deletion_while_16_connections_submit_to_the_scope() {
    let db = crate::common::test_db().await;
    delete_during_submits(&db, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn deletion_racing_a_worker_leaves_nothing_behind() {
    let db = crate::common::test_db().await;
    let c = db.client().await;
    let mut deleter = db.client().await;
    let worker = Arc::new(db.client().await);
    for r in 0..50 {
        let key = format!("k{r}");
        submit_at(&c, At::scope("racing"), &key).await;
        let claimed = fixtures::claim_one(&c).await;
        let w = worker.clone();
        let (id, token) = (claimed.id, claimed.lease_token);
        let work = tokio::spawn(async move {
            // Events race the deletion too: no event may outlive its task (task_events
            // has no foreign key; the deleting statement's trigger removes them).
            let progress = Beat {
                progress: Some(50),
                events: vec![serde_json::json!({"type": "task.output", "data": {"r": r}})],
                ..Default::default()
            };
            let beat = lease::heartbeat(&*w, id, token, &progress).await;
            let success = Success {
                result: serde_json::json!(r),
                ..Default::default()
            };
            (beat, lease::complete(&*w, id, token, &success).await)
        });
        let tx = deleter.transaction().await.unwrap();
        let deleted = lifecycle::delete(&tx, APP, "racing", None, false)
            .await
            .unwrap();
        tx.commit().await.unwrap();
        let (beat, done) = work.await.unwrap();
        assert_eq!(deleted, 1, "round {r}");
        // Whichever came first, the task and its events are gone and stay gone.
        assert!(
            matches!(beat, Ok(_) | Err(LeaseError::Gone)),
            "round {r}: {beat:?}"
        );
        assert!(
            matches!(done, Ok(()) | Err(LeaseError::Gone)),
            "round {r}: {done:?}"
        );
        assert!(matches!(
            lease::heartbeat(&c, id, token, &Beat::default()).await,
            Err(LeaseError::Gone)
        ));
        assert!(!exists(&c, id).await, "round {r}");
        assert_eq!(events_of(&c, id).await, 0, "round {r}");
    }
    let orphans: i64 = c
        .query_one(
            "SELECT count(*) FROM tasklane.task_events e \
             WHERE NOT EXISTS (SELECT 1 FROM tasklane.tasks t WHERE t.id = e.task_id)",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(orphans, 0);
    assert_no_advisory_locks(&db).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn release_racing_completion_keeps_both() {
    let db = crate::common::test_db().await;
    let c = db.client().await;
    let releaser = Arc::new(db.client().await);
    let worker = Arc::new(db.client().await);
    for r in 0..50 {
        let key = format!("k{r}");
        let task = submit_at(&c, At::scope("racing"), &key).await;
        let claimed = fixtures::claim_one(&c).await;
        let (w, rel) = (worker.clone(), releaser.clone());
        let complete = tokio::spawn(async move {
            let success = Success {
                result: serde_json::json!(r),
                ..Default::default()
            };
            lease::complete(&*w, claimed.id, claimed.lease_token, &success).await
        });
        let release =
            tokio::spawn(async move { lifecycle::release(&*rel, APP, "racing", &key, None).await });
        complete
            .await
            .unwrap()
            .expect("completion is not disturbed by release");
        let released_at = release.await.unwrap().unwrap().expect("the task exists");
        let done = fixtures::get(&c, task.id).await;
        assert_eq!(done.state, TaskState::Succeeded, "round {r}");
        assert_eq!(done.result, Some(serde_json::json!(r)));
        assert_eq!(done.released_at, Some(released_at), "round {r}");
        assert_eq!(
            fixtures::event_types(&c, task.id).await,
            vec!["task.queued", "task.running", "task.succeeded"]
        );
    }
}
