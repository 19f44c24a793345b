//! The claim statements' plans on a backlog: every variant reads the claimable index in
//! claim order and stops at its limit. A filter the planner cannot push into that scan
//! (a per-task NOT EXISTS did, once) turns every claim into a scan and sort of the whole
//! backlog: 60 ms per claim at 50,000 queued tasks, a third of the drain's throughput.
//! The backlog is of one app and a paused type and a stopped app exist: their filters
//! (init plans) must not change the plan either.
//!
//! The local-route variants, and the fallback-only ones (the external claim of types
//! that go local first, which every local replica with such types runs) on the
//! fallback index. The external ones also take tasks waiting for an
//! external fallback, a state no one index orders together with the queued ones, and
//! have planned as a scan and sort since before the claim template (noticed, left for
//! the performance round: an external claim should read `task_queue_claimable` and
//! `task_queue_fallback` in order and merge them).

use tasklane::store::claim::VARIANTS;

use super::common;

#[tokio::test]
async fn every_claim_variant_scans_the_claimable_index_in_order() {
    let db = common::test_db().await;
    let c = db.client().await;
    c.batch_execute(
        "INSERT INTO tasklane.tasks (id, app, scope_id, effect_key, task_type, request_digest, \
           input, priority, max_attempts, on_restart, privacy, lease_seconds, \
           attempt_timeout_seconds, event_seq) \
         SELECT gen_random_uuid(), 'a', 's' || (g % 100), 'k' || g, 'noop', '\\x00', '{}', 0, \
           3, 'retry', 'external_allowed', 30, 300, 1 FROM generate_series(1, 20000) g; \
         INSERT INTO tasklane.paused_task_types (task_type) VALUES ('other'); \
         INSERT INTO tasklane.emergency_stops (app) VALUES ('other'); \
         ANALYZE tasklane.tasks; ANALYZE tasklane.task_queue; \
         SET plan_cache_mode = force_generic_plan;",
    )
    .await
    .unwrap();
    // A tenth of the backlog fell back, so the fallback index has rows to order.
    c.batch_execute(
        "UPDATE tasklane.tasks SET state = 'waiting_for_external_fallback' \
         WHERE effect_key LIKE '%0'; ANALYZE tasklane.tasks; ANALYZE tasklane.task_queue;",
    )
    .await
    .unwrap();
    let checked = VARIANTS
        .iter()
        .filter(|(name, _)| name.starts_with("claim_local") || name.starts_with("claim_fallback"));
    for (name, sql) in checked {
        let index = if name.starts_with("claim_fallback") {
            "task_queue_fallback"
        } else {
            "task_queue_claimable"
        };
        c.batch_execute(&format!("PREPARE claim AS {sql}"))
            .await
            .unwrap();
        let plan: String = c
            .query(
                "EXPLAIN (COSTS OFF) EXECUTE claim('{noop}', 'w', 100, NULL, NULL, NULL)",
                &[],
            )
            .await
            .unwrap()
            .iter()
            .map(|row| row.get::<_, String>(0))
            .collect::<Vec<_>>()
            .join("\n");
        c.batch_execute("DEALLOCATE claim").await.unwrap();
        assert!(
            plan.contains(&format!("Index Scan using {index} on task_queue")),
            "{name} reads {index}:\n{plan}"
        );
        assert!(
            !plan.contains("Seq Scan on task"),
            "{name} scans the whole table:\n{plan}"
        );
        assert!(
            !plan.contains("Sort Key: q.priority DESC"),
            "{name} sorts the backlog:\n{plan}"
        );
    }
}
