//! The hot statements' plans on a backlog, and what they rely on (the claim pool's
//! generic plans, V17's lease-token CHECK). The claim statements' plans: every variant
//! reads the claimable index in claim order and stops at its limit, and updates the
//! tasks it picked by their ids, joining nothing. A filter the
//! planner cannot push into that scan (a per-task NOT EXISTS did, once) turns every
//! claim into a scan and sort of the whole backlog: 60 ms per claim at 50,000 queued
//! tasks, a third of the drain's throughput.
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
    c.batch_execute(&backlog("external_allowed", 20_000))
        .await
        .unwrap();
    c.batch_execute(
        "INSERT INTO tasklane.paused_task_types (task_type) VALUES ('other'); \
         INSERT INTO tasklane.emergency_stops (app) VALUES ('other'); \
         ANALYZE tasklane.tasks; ANALYZE tasklane.task_queue;",
    )
    .await
    .unwrap();
    c.batch_execute(tasklane::store::connect::CLAIM_SESSION)
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
        // The update of the picked tasks finds them by the id array alone: joined to
        // them it was hashed over all of `tasks` (a generic plan's estimate of the
        // picked rows) or, beside the array, a nested loop testing every pair.
        let update = plan
            .split("CTE claimed")
            .nth(1)
            .and_then(|rest| rest.split("CTE mirrored").next())
            .unwrap_or_else(|| panic!("{name} has no claimed CTE:\n{plan}"));
        assert!(
            !update.contains("Join") && !update.contains("Nested Loop"),
            "{name} joins its picked tasks:\n{plan}"
        );
        // The claim writes its tasks' mirror rows itself (V27), through
        // tasklane.mirror_claimed (its plan: the test below), never joined to the mirror.
        let mirrored = plan
            .split("CTE mirrored")
            .nth(1)
            .and_then(|rest| rest.split("CTE events").next())
            .unwrap_or_else(|| panic!("{name} writes no mirror rows:\n{plan}"));
        assert!(
            mirrored.contains("Function Scan on mirror_claimed")
                && !mirrored.contains("task_queue")
                && !mirrored.contains("Hash"),
            "{name} writes its mirror rows through tasklane.mirror_claimed:\n{plan}"
        );
    }
}

/// The claim's update of its tasks' mirror rows (tasklane.mirror_claimed) under a held
/// snapshot, its statistics taken under the hold: a mirror of 20,000 dead rows and 3
/// live ones. Planned as the claim's session plans (generic, sequential scans allowed),
/// the update reads the whole heap rather than the primary key, which the statistics
/// call as large for 3 rows; under the function's own settings it probes the primary
/// key. The soak found the scan at every claim of a hold (4,500 pages a claim).
#[tokio::test]
async fn the_claims_mirror_update_probes_the_primary_key_whatever_the_statistics() {
    let db = common::test_db().await;
    let c = db.client().await;
    c.batch_execute(&backlog("local_only", 20_000))
        .await
        .unwrap();
    let mut holder = db.client().await;
    let held = common::hold_snapshot(&mut holder).await;
    held.query_one("SELECT count(*) FROM tasklane.task_queue", &[])
        .await
        .unwrap();
    c.batch_execute(
        "UPDATE tasklane.tasks SET state = 'cancelled', finished_at = now(), \
                event_seq = event_seq + 1 \
         WHERE effect_key NOT IN ('k1', 'k2', 'k3'); \
         ANALYZE tasklane.task_queue;",
    )
    .await
    .unwrap();
    let update = function_statement(&c, "mirror_claimed").await;
    let plan = |session: String| {
        let (c, update) = (&c, &update);
        async move {
            c.batch_execute(&format!(
                "{session} SET plan_cache_mode = force_generic_plan; \
                 PREPARE mirror AS {update};"
            ))
            .await
            .unwrap();
            let plan = explain(c, "EXECUTE mirror('{}', '{}')").await;
            c.batch_execute("DEALLOCATE mirror; RESET ALL;")
                .await
                .unwrap();
            plan
        }
    };
    let claim_session = plan(format!("{};", tasklane::store::connect::CLAIM_SESSION)).await;
    let own = plan(function_settings(&c, "mirror_claimed").await).await;
    held.rollback().await.unwrap();
    assert!(
        claim_session.contains("Seq Scan on task_queue"),
        "under the claim's session settings the statistics invite a sequential scan \
         (else this test shows nothing):\n{claim_session}"
    );
    assert!(
        own.contains("Index Scan using task_queue_pkey") && !own.contains("Seq Scan"),
        "tasklane.mirror_claimed probes the primary key:\n{own}"
    );
}

/// A short queue, as when tasks are claimed about as fast as they are submitted, with
/// the entries of many claimed tasks still in the claimable index (no vacuum yet): a
/// claim on the claim pool's session reads the index in claim order, never by a bitmap
/// scan, which would visit every dead entry's heap page at every claim (the HTTP
/// submit bench: 285 heap pages per served type for 25 queued tasks). Run under
/// EXPLAIN ANALYZE, twice: the plan the first call made is the one the next reuses.
#[tokio::test]
async fn a_claim_on_a_short_queue_reads_the_index_in_order() {
    let db = common::test_db().await;
    let mut c = db.client().await;
    c.batch_execute(&format!(
        "{} ANALYZE tasklane.tasks; ANALYZE tasklane.task_queue; \
         UPDATE tasklane.tasks SET state = 'running', attempt = 1, event_seq = 2, \
           lease_token = gen_random_uuid(), lease_expires_at = now() + interval '1 minute', \
           attempt_started_at = now() \
         WHERE id IN (SELECT id FROM tasklane.tasks ORDER BY id LIMIT 4960);",
        backlog("local_only", 5_000)
    ))
    .await
    .unwrap();
    c.batch_execute(tasklane::store::connect::CLAIM_SESSION)
        .await
        .unwrap();
    let (_, sql) = VARIANTS
        .iter()
        .find(|(name, _)| *name == "claim_local_plain.sql")
        .unwrap();
    c.batch_execute(&format!("PREPARE claim AS {sql}"))
        .await
        .unwrap();
    for _ in 0..2 {
        let tx = c.transaction().await.unwrap();
        let plan = explain(&tx, "EXECUTE claim('{noop}', 'w', 10, NULL, NULL, NULL)").await;
        tx.rollback().await.unwrap();
        assert!(
            plan.contains("Index Scan using task_queue_claimable on task_queue")
                && !plan.contains("Bitmap")
                && plan.contains("CTE Scan on claimed (actual rows=10 loops=1)"),
            "the claim reads the claimable index in order:\n{plan}"
        );
    }
}

/// The batch settle and the batch heartbeat on a backlog whose statistics say few tasks
/// run (the drain's case: analyzed while all were queued) must probe the primary key
/// once per element of the batch (a plain or a bitmap index scan; never the whole
/// table, never the batch once per task). With a state test beside the token they
/// planned as a nested loop that re-ran the unnest for every task found: 65,280
/// rejected pairs and 60 ms for a batch of 256. Run under EXPLAIN ANALYZE (in a transaction rolled back),
/// with custom and generic plans alike.
#[tokio::test]
async fn batch_settle_and_heartbeat_probe_each_task_once() {
    let db = common::test_db().await;
    let mut c = db.client().await;
    c.batch_execute(&backlog("local_only", 20_000))
        .await
        .unwrap();
    c.batch_execute(&format!(
        "ANALYZE tasklane.tasks; ANALYZE tasklane.task_queue; \
         UPDATE tasklane.tasks SET state = 'running', attempt = 1, event_seq = 2, \
           lease_token = gen_random_uuid(), lease_expires_at = now() + interval '1 minute', \
           attempt_started_at = now() \
         WHERE id IN (SELECT id FROM tasklane.tasks ORDER BY id LIMIT {RUNNING});"
    ))
    .await
    .unwrap();
    // The pairs of the running tasks, sorted by id as the callers send them.
    let pairs = c
        .query_one(
            "SELECT array_agg(id ORDER BY id)::text, array_agg(lease_token ORDER BY id)::text \
             FROM tasklane.tasks WHERE state = 'running'",
            &[],
        )
        .await
        .unwrap();
    let (ids, tokens): (String, String) = (pairs.get(0), pairs.get(1));
    let batch = format!("'{ids}'::uuid[], '{tokens}'::uuid[]");
    let statements: [(&str, &str, String); 2] = [
        (
            "heartbeat_many",
            include_str!("../../../sql/heartbeat_many.sql"),
            batch.clone(),
        ),
        (
            "complete_many",
            // The statement of tasklane.complete_tasks_claiming (V36), which
            // sql/complete_many.sql calls: its body, its parameters as the statement's.
            &function_statement(&c, "complete_tasks_claiming").await,
            // Results, then usage, provider, model, route, route name, the tokens, the
            // response model and system fingerprint; then a claim of the notifications
            // (none here: no endpoint).
            [
                "'{}'::jsonb",
                "NULL::int8",
                "NULL::text",
                "NULL::text",
                "'local'::text",
                "NULL::text",
                "NULL::int8",
                "NULL::int8",
                "NULL::int8",
                "NULL::text",
                "NULL::text",
            ]
            .iter()
            .fold(batch.clone(), |args, value| {
                format!("{args}, array_fill({value}, ARRAY[{RUNNING}])")
            }) + ", gen_random_uuid(), 60::float8, '{}'::uuid[]",
        ),
    ];
    for mode in ["force_custom_plan", "force_generic_plan"] {
        for (name, sql, args) in &statements {
            let tx = c.transaction().await.unwrap();
            tx.batch_execute(&format!(
                "SET LOCAL plan_cache_mode = {mode}; PREPARE s AS {sql}"
            ))
            .await
            .unwrap();
            let plan = explain(&tx, &format!("EXECUTE s({args})")).await;
            tx.rollback().await.unwrap();
            c.batch_execute("DEALLOCATE s").await.unwrap();
            assert!(
                plan.contains(&format!("rows={RUNNING} loops=1")),
                "{name} ({mode}) found its {RUNNING} tasks:\n{plan}"
            );
            assert!(
                plan.contains("tasks_pkey")
                    && !plan.contains("Seq Scan on tasks")
                    && !plan.contains("Seq Scan on task_queue")
                    && !plan.contains("Rows Removed by Join Filter"),
                "{name} ({mode}) probes each task once:\n{plan}"
            );
            assert!(
                plan.lines()
                    .filter(|line| line.contains("Function Scan"))
                    .all(|line| line.contains("loops=1)")),
                "{name} ({mode}) reads its batch once:\n{plan}"
            );
        }
    }
}

/// The statement a PL/pgSQL function `tasklane.{name}` runs by `RETURN QUERY`, its
/// `p_` parameters numbered as the function's arguments (`$1` for the first), for
/// planning on its own. Of overloads, the one with the most arguments: the current one
/// (an older binary's is kept beside it with fewer).
async fn function_statement(c: &tokio_postgres::Client, name: &str) -> String {
    let row = c
        .query_one(
            "SELECT prosrc, proargnames, \
                    (SELECT array_agg(format_type(t, NULL) ORDER BY n) \
                     FROM unnest(proargtypes::oid[]) WITH ORDINALITY AS a(t, n)) \
             FROM pg_proc \
             WHERE proname = $1 AND pronamespace = 'tasklane'::regnamespace \
             ORDER BY pronargs DESC LIMIT 1",
            &[&name],
        )
        .await
        .unwrap();
    let (source, names, types): (String, Vec<String>, Vec<String>) =
        (row.get(0), row.get(1), row.get(2));
    let start = source.find("RETURN QUERY").expect("a RETURN QUERY") + "RETURN QUERY".len();
    let end = source.rfind(';').expect("the statement's end");
    let mut statement = source[start..end].to_owned();
    // Longest names first: `p_route` is a prefix of `p_route_name`.
    let mut arguments: Vec<(usize, &String)> = names.iter().take(types.len()).enumerate().collect();
    arguments.sort_by_key(|(_, name)| std::cmp::Reverse(name.len()));
    for (n, argument) in arguments {
        statement = statement.replace(argument.as_str(), &format!("${}::{}", n + 1, types[n]));
    }
    statement
}

/// The planner settings of the function `name` (the overload `function_statement`
/// reads), as `SET` statements for a session.
async fn function_settings(c: &tokio_postgres::Client, name: &str) -> String {
    let settings: Vec<String> = c
        .query_one(
            "SELECT proconfig FROM pg_proc \
             WHERE proname = $1 AND pronamespace = 'tasklane'::regnamespace \
             ORDER BY pronargs DESC LIMIT 1",
            &[&name],
        )
        .await
        .unwrap()
        .get(0);
    settings
        .iter()
        .map(|setting| {
            let (name, value) = setting.split_once('=').unwrap();
            format!("SET {name} = '{value}'; ")
        })
        .collect()
}

/// Claims run on connections of their own that plan generically: the claim's
/// `LIMIT $3` made PostgreSQL's own choice re-plan it at every call (14% of the
/// drain's database CPU). Its generic plan is the one the first test checks.
#[tokio::test]
async fn the_claim_pool_plans_generically_and_the_main_pool_does_not() {
    let db = common::test_db().await;
    let database = tasklane::store::connect::Database::from_url(&db.url).unwrap();
    let mode = |pool: tasklane::store::Pool| async move {
        let client = pool.get().await.unwrap();
        let row = client.query_one("SHOW plan_cache_mode", &[]).await.unwrap();
        row.get::<_, String>(0)
    };
    assert_eq!(
        mode(database.claim_pool(1).unwrap()).await,
        "force_generic_plan"
    );
    let bitmap = database.claim_pool(1).unwrap();
    let client = bitmap.get().await.unwrap();
    let row = client
        .query_one("SHOW enable_bitmapscan", &[])
        .await
        .unwrap();
    assert_eq!(row.get::<_, String>(0), "off");
    assert_eq!(mode(database.pool(1).unwrap()).await, "auto");
}

/// Tasks the batch statements' test runs at once.
const RUNNING: usize = 300;

/// SQL queuing a backlog of `count` `noop` tasks of app `a` over 100 scopes.
pub(super) fn backlog(privacy: &str, count: usize) -> String {
    format!(
        "INSERT INTO tasklane.tasks (id, app, scope_id, effect_key, task_type, request_digest, \
           input, priority, max_attempts, on_restart, privacy, lease_seconds, \
           attempt_timeout_seconds, event_seq) \
         SELECT gen_random_uuid(), 'a', 's' || (g % 100), 'k' || g, 'noop', '\\x00', '{{}}', 0, \
           3, 'retry', '{privacy}', 30, 300, 1 FROM generate_series(1, {count}) g;"
    )
}

/// What lets the batch statements fence on the token alone (V17): no statement can
/// leave a lease token on a task that does not run, while a running task keeps one.
#[tokio::test]
async fn a_lease_token_outside_a_running_attempt_is_refused() {
    let db = common::test_db().await;
    let c = db.client().await;
    c.batch_execute(&backlog("local_only", 1)).await.unwrap();
    let id: uuid::Uuid = c
        .query_one(
            "UPDATE tasklane.tasks SET state = 'running', lease_token = gen_random_uuid() \
             WHERE id = (SELECT id FROM tasklane.tasks ORDER BY id LIMIT 1) RETURNING id",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    refused_then_allowed(
        &c,
        id,
        "tasks_lease_only_while_running",
        "UPDATE tasklane.tasks SET state = 'succeeded', finished_at = now() WHERE id = $1",
        "UPDATE tasklane.tasks SET state = 'succeeded', finished_at = now(), \
         lease_token = NULL WHERE id = $1",
    )
    .await;
}

/// What lets the deliverer's settle fence on the claim token alone (V30): no statement
/// can leave a claim token on a notification that is no longer pending.
#[tokio::test]
async fn a_claim_token_outside_a_pending_notification_is_refused() {
    let db = common::test_db().await;
    let c = db.client().await;
    let id: uuid::Uuid = c
        .query_one(
            "INSERT INTO tasklane.webhook_deliveries \
               (endpoint_id, app, scope_id, task_id, event, claim_token) \
             VALUES (gen_random_uuid(), 'mail', 's', gen_random_uuid(), 'task.succeeded', \
                     gen_random_uuid()) \
             RETURNING id",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    refused_then_allowed(
        &c,
        id,
        "webhook_deliveries_claim_only_while_pending",
        "UPDATE tasklane.webhook_deliveries SET status = 'delivered' WHERE id = $1",
        "UPDATE tasklane.webhook_deliveries SET status = 'delivered', claim_token = NULL \
         WHERE id = $1",
    )
    .await;
}

/// Runs `refused` on row `id` and checks that CHECK `constraint` refused it, then runs
/// `allowed` (the same change done within the rule), which must succeed.
async fn refused_then_allowed(
    c: &tokio_postgres::Client,
    id: uuid::Uuid,
    constraint: &str,
    refused: &str,
    allowed: &str,
) {
    let error = c.execute(refused, &[&id]).await.unwrap_err();
    assert_eq!(
        error.as_db_error().and_then(|e| e.constraint()),
        Some(constraint),
        "{error}"
    );
    c.execute(allowed, &[&id]).await.unwrap();
}

/// The deliverer's claim and settle on an outbox of 5,000 pending notifications, with
/// the claim's generic plan made while the outbox held 10 (as in a fresh deployment or
/// the webhooks bench: planned once per connection, kept while the outbox grows), then
/// after an ANALYZE: the claim reads the due index twice, for its candidates and for the
/// earliest pending row (where the next claim starts), and finds its chosen rows again
/// by primary key; the settle fetches its round by primary key
/// (but for one case, below), never by the due index. Before V30, the claim found them
/// again by a bitmap scan of the whole due index (every pending row tested against the
/// id array, 15 of a claim's 16 ms in the bench), or, with the plan made on a small
/// outbox, by sequential scans of the whole outbox; the settle read the whole outbox.
#[tokio::test]
async fn the_deliverers_claim_and_settle_probe_each_row_once() {
    const ROUND: i64 = 100;
    let db = common::test_db().await;
    let mut c = db.client().await;
    let pending = |n: usize| {
        format!(
            "INSERT INTO tasklane.webhook_deliveries (endpoint_id, app, scope_id, task_id, event) \
             SELECT '00000000-0000-0000-0000-000000000001', 'mail', 's', gen_random_uuid(), \
                    'task.succeeded' \
             FROM generate_series(1, {n})"
        )
    };
    c.batch_execute(&format!(
        "INSERT INTO tasklane.webhook_endpoints (id, app, name, url, events) \
         VALUES ('00000000-0000-0000-0000-000000000001', 'mail', 'e', 'http://127.0.0.1:9/', \
                 '{{task.succeeded}}'); {}",
        pending(10)
    ))
    .await
    .unwrap();
    // The claim's statement under the function's own settings (its plan cache mode
    // and planner settings), planned now, on 10 rows.
    let claim = function_statement(&c, "claim_webhooks").await;
    let settings = function_settings(&c, "claim_webhooks").await;
    let execute_claim = format!("EXECUTE claim({ROUND}, {ROUND}, 60, '{{}}', '{{}}', NULL)");
    c.batch_execute(&format!("{settings} PREPARE claim AS {claim}"))
        .await
        .unwrap();
    let tx = c.transaction().await.unwrap();
    explain(&tx, &execute_claim).await;
    tx.rollback().await.unwrap();
    c.batch_execute(&format!("RESET ALL; {}", pending(4_990)))
        .await
        .unwrap();

    c.batch_execute(&format!(
        "PREPARE settle AS {}",
        include_str!("../../../sql/webhook_settle_many.sql")
    ))
    .await
    .unwrap();
    for analysed in [false, true] {
        if analysed {
            c.batch_execute("ANALYZE tasklane.webhook_deliveries")
                .await
                .unwrap();
        }
        for mode in ["force_custom_plan", "force_generic_plan"] {
            let tx = c.transaction().await.unwrap();
            tx.batch_execute(&settings).await.unwrap();
            let plan = explain(&tx, &execute_claim).await;
            let due_scans = plan.matches("webhook_deliveries_due").count();
            assert!(
                plan.contains(&format!(
                    "CTE Scan on claimed c (actual rows={ROUND} loops=1)"
                )) && due_scans == 2
                    && plan.contains("webhook_deliveries_pkey")
                    && !plan.contains("webhook_deliveries_task")
                    && !plan.contains("Seq Scan on webhook_deliveries"),
                "the claim (analysed: {analysed}) reads the due index for its candidates and \
                 its start, and finds its rows by primary key:\n{plan}"
            );
            // The rows the claim just took (this transaction's), settled as delivered.
            let row = tx
                .query_one(
                    "SELECT array_agg(id ORDER BY id)::text, \
                            array_agg(claim_token ORDER BY id)::text \
                     FROM tasklane.webhook_deliveries WHERE claim_token IS NOT NULL",
                    &[],
                )
                .await
                .unwrap();
            let (ids, tokens): (String, String) = (row.get(0), row.get(1));
            tx.batch_execute(&format!("RESET ALL; SET LOCAL plan_cache_mode = {mode}"))
                .await
                .unwrap();
            let plan = explain(
                &tx,
                &format!(
                    "EXECUTE settle('{ids}', '{tokens}', \
                     array_fill('delivered'::text, ARRAY[{ROUND}]), \
                     array_fill(0::float8, ARRAY[{ROUND}]), array_fill(204, ARRAY[{ROUND}]), \
                     array_fill(NULL::text, ARRAY[{ROUND}]))"
                ),
            )
            .await;
            // Never analysed, a custom plan for the round's 100 ids may read the 5,000
            // rows instead (the planner's choice on a table it knows nothing of; after
            // five such plans the deliverer's prepared statement goes generic).
            let by_key = plan.contains("webhook_deliveries_pkey")
                && !plan.contains("Seq Scan on webhook_deliveries");
            assert!(
                plan.contains(&format!(
                    "Update on webhook_deliveries d (actual rows={ROUND} loops=1)"
                )) && !plan.contains("webhook_deliveries_due")
                    && !plan.contains("webhook_deliveries_task")
                    && plan
                        .lines()
                        .filter(|line| line.contains("Function Scan"))
                        .all(|line| line.contains("loops=1)"))
                    && (by_key || (!analysed && mode == "force_custom_plan")),
                "the settle (analysed: {analysed}, {mode}) reads its round once and fetches \
                 it by primary key:\n{plan}"
            );
            tx.rollback().await.unwrap();
        }
    }
}

/// `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF)` of `statement`, its lines cut short (a
/// batch's arrays are printed in full otherwise).
async fn explain(c: &impl tokio_postgres::GenericClient, statement: &str) -> String {
    c.query(
        &format!("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) {statement}"),
        &[],
    )
    .await
    .unwrap()
    .iter()
    .map(|row| {
        row.get::<_, String>(0)
            .chars()
            .take(160)
            .collect::<String>()
    })
    .collect::<Vec<_>>()
    .join("\n")
}
