//! Young tables get planner statistics once they outgrow them (`store::statistics`,
//! run by the maintenance role every second), not a minute later at autovacuum's first
//! ANALYZE: at the edge of the threshold, again each time the table doubles, and by
//! one replica at a time, on a small sample.

use crate::common;

use tasklane::store::statistics::{self, ANALYZE_LOCK, SAMPLE_TARGET};

const LEAST: i64 = 1_000;

/// Queues `count` tasks (each with its event), then makes the writing backend flush
/// its pending statistics before it answers the next statement (it would otherwise
/// wait up to a second), so the next read of pg_stat sees the changes.
async fn enqueue(client: &tokio_postgres::Client, count: i64) {
    tasklane::load::drain::enqueue(client, "stats", "noop", count, &serde_json::json!({}))
        .await
        .unwrap();
    client
        .execute("SELECT pg_stat_force_next_flush()", &[])
        .await
        .unwrap();
}

/// What the planner believes `tasklane.tasks` holds: -1 until the first ANALYZE.
async fn planner_rows(client: &tokio_postgres::Client) -> f32 {
    client
        .query_one(
            "SELECT reltuples FROM pg_class WHERE oid = 'tasklane.tasks'::regclass",
            &[],
        )
        .await
        .unwrap()
        .get(0)
}

#[tokio::test]
async fn analyzes_a_table_once_it_has_outgrown_its_statistics() {
    let db = common::test_db().await;
    let writer = db.pool.get().await.unwrap();
    let mut object = db.pool.get().await.unwrap();
    let analyzer: &mut tokio_postgres::Client = &mut object;

    enqueue(&writer, LEAST - 1).await;
    assert_eq!(
        statistics::analyze_stale(analyzer, LEAST).await.unwrap(),
        Vec::<String>::new()
    );
    assert_eq!(planner_rows(analyzer).await, -1.0);

    enqueue(&writer, 1).await;
    let analyzed = statistics::analyze_stale(analyzer, LEAST).await.unwrap();
    assert!(
        analyzed.contains(&"tasklane.tasks".to_owned()),
        "{analyzed:?}"
    );
    assert_eq!(planner_rows(analyzer).await, LEAST as f32);
    // Fresh statistics: nothing more to do.
    assert_eq!(
        statistics::analyze_stale(analyzer, LEAST).await.unwrap(),
        Vec::<String>::new()
    );

    // Next when the table has doubled since, not before.
    enqueue(&writer, LEAST - 1).await;
    let analyzed = statistics::analyze_stale(analyzer, LEAST).await.unwrap();
    assert!(
        !analyzed.contains(&"tasklane.tasks".to_owned()),
        "{analyzed:?}"
    );
    enqueue(&writer, 1).await;
    let analyzed = statistics::analyze_stale(analyzer, LEAST).await.unwrap();
    assert!(
        analyzed.contains(&"tasklane.tasks".to_owned()),
        "{analyzed:?}"
    );
    assert_eq!(planner_rows(analyzer).await, 2.0 * LEAST as f32);
    // On the small sample: a histogram of SAMPLE_TARGET buckets over 2,000 distinct
    // ids (the default target would make it 100).
    let bounds: i32 = analyzer
        .query_one(
            "SELECT array_length(histogram_bounds::text::text[], 1) FROM pg_stats
             WHERE schemaname = 'tasklane' AND tablename = 'tasks' AND attname = 'id'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(bounds, SAMPLE_TARGET as i32 + 1);
}

#[tokio::test]
async fn one_replica_analyzes_at_a_time() {
    let db = common::test_db().await;
    let writer = db.pool.get().await.unwrap();
    enqueue(&writer, LEAST).await;

    // Another replica holds the analyze lock: this one skips the pass.
    let mut other = db.pool.get().await.unwrap();
    let other: &mut tokio_postgres::Client = &mut other;
    let held = other.transaction().await.unwrap();
    held.execute("SELECT pg_advisory_xact_lock($1)", &[&ANALYZE_LOCK])
        .await
        .unwrap();
    let mut object = db.pool.get().await.unwrap();
    let analyzer: &mut tokio_postgres::Client = &mut object;
    assert_eq!(
        statistics::analyze_stale(analyzer, LEAST).await.unwrap(),
        Vec::<String>::new()
    );
    assert_eq!(planner_rows(analyzer).await, -1.0);

    held.rollback().await.unwrap();
    let analyzed = statistics::analyze_stale(analyzer, LEAST).await.unwrap();
    assert!(
        analyzed.contains(&"tasklane.tasks".to_owned()),
        "{analyzed:?}"
    );
    assert_eq!(planner_rows(analyzer).await, LEAST as f32);
}

#[tokio::test]
async fn leaves_tables_it_does_not_own_to_autovacuum() {
    let db = common::test_db().await;
    let writer = db.pool.get().await.unwrap();
    enqueue(&writer, LEAST).await;

    // A role that may read the schema but owns none of it (ANALYZE would only warn).
    // Roles are cluster-wide: named after this test's database.
    let role = format!("{}_stranger", db.name());
    let mut object = db.pool.get().await.unwrap();
    let analyzer: &mut tokio_postgres::Client = &mut object;
    analyzer
        .batch_execute(&format!(
            "CREATE ROLE {role} NOLOGIN; GRANT USAGE ON SCHEMA tasklane TO {role}; SET ROLE {role}"
        ))
        .await
        .unwrap();
    let analyzed = statistics::analyze_stale(analyzer, LEAST).await;
    analyzer
        .batch_execute(&format!(
            "RESET ROLE; DROP OWNED BY {role}; DROP ROLE {role}"
        ))
        .await
        .unwrap();
    assert_eq!(analyzed.unwrap(), Vec::<String>::new());
    assert_eq!(planner_rows(analyzer).await, -1.0);
    // Its owner analyzes it.
    let analyzed = statistics::analyze_stale(analyzer, LEAST).await.unwrap();
    assert!(
        analyzed.contains(&"tasklane.tasks".to_owned()),
        "{analyzed:?}"
    );
}

#[tokio::test]
async fn skips_a_table_a_vacuum_holds_instead_of_waiting() {
    let db = common::test_db().await;
    let writer = db.pool.get().await.unwrap();
    enqueue(&writer, LEAST).await;

    // The lock a vacuum (autovacuum's, which a waiting ANALYZE would cancel) holds.
    let mut other = db.pool.get().await.unwrap();
    let other: &mut tokio_postgres::Client = &mut other;
    let held = other.transaction().await.unwrap();
    held.batch_execute("LOCK TABLE tasklane.tasks IN SHARE UPDATE EXCLUSIVE MODE")
        .await
        .unwrap();
    let mut object = db.pool.get().await.unwrap();
    let analyzer: &mut tokio_postgres::Client = &mut object;
    // Were the ANALYZE to wait for the lock, this would fail the test, not hang it.
    analyzer
        .batch_execute("SET statement_timeout = '60s'")
        .await
        .unwrap();
    statistics::analyze_stale(analyzer, LEAST).await.unwrap();
    assert_eq!(planner_rows(analyzer).await, -1.0);

    held.rollback().await.unwrap();
    let analyzed = statistics::analyze_stale(analyzer, LEAST).await.unwrap();
    assert!(
        analyzed.contains(&"tasklane.tasks".to_owned()),
        "{analyzed:?}"
    );
    assert_eq!(planner_rows(analyzer).await, LEAST as f32);
}
