//! The small tables that churn faster than autovacuum visits them are vacuumed by
//! tasklane (`store::vacuum`, run by the maintenance role every second): once their
//! dead rows reach the threshold and outnumber the live ones, no more often than the
//! gap, never waiting on another vacuum, and only tables tasklane owns.

use std::time::Duration;

use crate::common;

use tasklane::store::vacuum;

const LEAST: i64 = 1_000;
const NO_GAP: Duration = Duration::ZERO;

/// Due at `LEAST` dead rows, after `gap`, whatever the table's size.
fn due(gap: Duration) -> vacuum::Due {
    vacuum::Due {
        least_dead: LEAST,
        gap,
        most_bytes: i64::MAX,
    }
}

/// A test database whose mirror autovacuum leaves alone, so that only the vacuums the
/// test makes change its dead rows.
async fn quiet_db() -> common::TestDb {
    let db = common::test_db().await;
    let client = db.pool.get().await.unwrap();
    client
        .batch_execute("ALTER TABLE tasklane.task_queue SET (autovacuum_enabled = false)")
        .await
        .unwrap();
    db
}

/// Queues `count` tasks of `app` (each with its mirror row in `tasklane.task_queue`).
async fn enqueue(client: &tokio_postgres::Client, app: &str, count: i64) {
    tasklane::load::drain::enqueue(client, app, "noop", count, &serde_json::json!({}))
        .await
        .unwrap();
    flush(client).await;
}

/// Deletes `count` of `app`'s tasks: their mirror rows go with them (by trigger), dead.
async fn delete(client: &tokio_postgres::Client, app: &str, count: i64) {
    client
        .execute(
            "DELETE FROM tasklane.tasks WHERE id IN
                 (SELECT id FROM tasklane.tasks WHERE app = $1 LIMIT $2)",
            &[&app, &count],
        )
        .await
        .unwrap();
    flush(client).await;
}

/// Makes the writing backend flush its pending statistics before it answers the next
/// statement, so the next read of pg_stat sees the changes.
async fn flush(client: &tokio_postgres::Client) {
    client
        .execute("SELECT pg_stat_force_next_flush()", &[])
        .await
        .unwrap();
    client.execute("SELECT 1", &[]).await.unwrap();
}

/// The mirror's dead rows as the statistics count them, and whether anyone has
/// vacuumed it by hand.
async fn mirror(client: &tokio_postgres::Client) -> (i64, bool) {
    let row = client
        .query_one(
            "SELECT n_dead_tup, last_vacuum IS NOT NULL FROM pg_stat_user_tables
             WHERE relid = 'tasklane.task_queue'::regclass",
            &[],
        )
        .await
        .unwrap();
    (row.get(0), row.get(1))
}

fn has_mirror(vacuumed: &[String]) -> bool {
    vacuumed.iter().any(|t| t == "tasklane.task_queue")
}

#[tokio::test]
async fn vacuums_the_mirror_once_its_dead_rows_reach_the_threshold() {
    let db = quiet_db().await;
    let client = db.pool.get().await.unwrap();
    enqueue(&client, "vac", LEAST).await;
    delete(&client, "vac", LEAST - 1).await;
    assert_eq!(mirror(&client).await, (LEAST - 1, false));
    let vacuumed = vacuum::vacuum_due(&client, due(NO_GAP)).await.unwrap();
    assert!(!has_mirror(&vacuumed), "{vacuumed:?}");

    delete(&client, "vac", 1).await;
    let vacuumed = vacuum::vacuum_due(&client, due(NO_GAP)).await.unwrap();
    assert!(has_mirror(&vacuumed), "{vacuumed:?}");
    assert_eq!(mirror(&client).await, (0, true));
}

#[tokio::test]
async fn leaves_a_table_whose_live_rows_outnumber_its_dead_ones() {
    let db = quiet_db().await;
    let client = db.pool.get().await.unwrap();
    enqueue(&client, "kept", 3 * LEAST).await;
    enqueue(&client, "gone", 2 * LEAST).await;
    // Autovacuum's own rule (20% dead) serves such a table.
    delete(&client, "gone", 2 * LEAST).await;
    let vacuumed = vacuum::vacuum_due(&client, due(NO_GAP)).await.unwrap();
    assert!(!has_mirror(&vacuumed), "{vacuumed:?}");
    assert_eq!(mirror(&client).await, (2 * LEAST, false));

    // At the edge: as many dead rows as live ones.
    delete(&client, "kept", LEAST / 2).await;
    let vacuumed = vacuum::vacuum_due(&client, due(NO_GAP)).await.unwrap();
    assert!(has_mirror(&vacuumed), "{vacuumed:?}");
}

#[tokio::test]
async fn leaves_a_table_larger_than_the_bound_to_autovacuum() {
    let db = quiet_db().await;
    let client = db.pool.get().await.unwrap();
    enqueue(&client, "vac", LEAST).await;
    delete(&client, "vac", LEAST).await;
    let bytes: i64 = client
        .query_one(
            "SELECT pg_total_relation_size('tasklane.task_queue'::regclass)",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    let bound = |most_bytes| vacuum::Due {
        most_bytes,
        ..due(NO_GAP)
    };
    let vacuumed = vacuum::vacuum_due(&client, bound(bytes - 1)).await.unwrap();
    assert!(!has_mirror(&vacuumed), "{vacuumed:?}");
    assert_eq!(mirror(&client).await, (LEAST, false));
    let vacuumed = vacuum::vacuum_due(&client, bound(bytes)).await.unwrap();
    assert!(has_mirror(&vacuumed), "{vacuumed:?}");
}

#[tokio::test]
async fn waits_out_the_gap_after_any_vacuum() {
    let db = quiet_db().await;
    let client = db.pool.get().await.unwrap();
    enqueue(&client, "vac", 2 * LEAST).await;
    delete(&client, "vac", LEAST).await;
    // A vacuum by anyone (here by hand) starts the gap.
    client
        .batch_execute("VACUUM tasklane.task_queue")
        .await
        .unwrap();
    delete(&client, "vac", LEAST).await;
    let hour = Duration::from_secs(3600);
    let vacuumed = vacuum::vacuum_due(&client, due(hour)).await.unwrap();
    assert!(!has_mirror(&vacuumed), "{vacuumed:?}");
    assert_eq!(mirror(&client).await.0, LEAST);
    let vacuumed = vacuum::vacuum_due(&client, due(NO_GAP)).await.unwrap();
    assert!(has_mirror(&vacuumed), "{vacuumed:?}");
    assert_eq!(mirror(&client).await.0, 0);
}

#[tokio::test]
async fn skips_a_table_another_vacuum_holds_instead_of_waiting() {
    let db = quiet_db().await;
    let client = db.pool.get().await.unwrap();
    enqueue(&client, "vac", LEAST).await;
    delete(&client, "vac", LEAST).await;

    // The lock a vacuum (another replica's, or autovacuum's) holds on the table.
    let mut other = db.pool.get().await.unwrap();
    let other: &mut tokio_postgres::Client = &mut other;
    let held = other.transaction().await.unwrap();
    held.batch_execute("LOCK TABLE tasklane.task_queue IN SHARE UPDATE EXCLUSIVE MODE")
        .await
        .unwrap();
    // Were the vacuum to wait for the lock, this would fail the test, not hang it.
    client
        .batch_execute("SET statement_timeout = '60s'")
        .await
        .unwrap();
    vacuum::vacuum_due(&client, due(NO_GAP)).await.unwrap();
    assert_eq!(mirror(&client).await, (LEAST, false));

    held.rollback().await.unwrap();
    let vacuumed = vacuum::vacuum_due(&client, due(NO_GAP)).await.unwrap();
    assert!(has_mirror(&vacuumed), "{vacuumed:?}");
    assert_eq!(mirror(&client).await, (0, true));
}

#[tokio::test]
async fn leaves_tables_it_does_not_own_to_autovacuum() {
    let db = quiet_db().await;
    let client = db.pool.get().await.unwrap();
    enqueue(&client, "vac", LEAST).await;
    delete(&client, "vac", LEAST).await;

    // A role that may read the schema but owns none of it (VACUUM would only warn).
    // Roles are cluster-wide: named after this test's database.
    let role = format!("{}_vacuum_stranger", db.name());
    let mut object = db.pool.get().await.unwrap();
    let stranger: &mut tokio_postgres::Client = &mut object;
    stranger
        .batch_execute(&format!(
            "CREATE ROLE {role} NOLOGIN; GRANT USAGE ON SCHEMA tasklane TO {role}; SET ROLE {role}"
        ))
        .await
        .unwrap();
    let vacuumed = vacuum::vacuum_due(stranger, due(NO_GAP)).await;
    stranger
        .batch_execute(&format!(
            "RESET ROLE; DROP OWNED BY {role}; DROP ROLE {role}"
        ))
        .await
        .unwrap();
    assert_eq!(vacuumed.unwrap(), Vec::<String>::new());
    assert_eq!(mirror(&client).await, (LEAST, false));
}
