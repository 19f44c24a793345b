-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.sync_task_queue, add a migration that replaces it (and its COMMENT ON FUNCTION,
-- printed below), then run `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- Trigger function of tasks_queue_update (AFTER UPDATE ON tasklane.tasks, per statement):
-- keeps the mirror tasklane.task_queue in step with the updated tasks. Finished tasks
-- leave it, and when any webhook endpoint is enabled their notifications are written to
-- webhook_deliveries with one NOTIFY tasklane_webhooks for the statement; other tasks are
-- upserted only when a mirrored column changed, and those becoming claimable take a turn
-- (tasklane.take_turns); the floors of claimable ones are held (tasklane.hold_floors), and a
-- kept turn the floor has passed is marked behind. A statement that wrote its own tasks'
-- mirror rows and notifications (the claim, the group commit) sets tasklane.queue_written
-- to on; the trigger then only clears it, so the next statement of the transaction is
-- synced again. Locks: the mirror rows it writes, and the floors' advisory locks.
--
-- Above: its COMMENT ON FUNCTION. Below: its current definition (pg_dump
-- --schema-only, normalised); the line above it names the migrations that wrote it.

-- function sync_task_queue: migrations/V14__task_queue.sql, migrations/V22__mirror_writes_by_id.sql, migrations/V27__hot_path_writes_its_mirror.sql, migrations/V33__function_comments.sql, migrations/V38__fair_turns.sql, migrations/V40__claims_start_at_the_floor.sql, migrations/V47__held_snapshot_plans.sql, migrations/V49__held_snapshot_lookups.sql, migrations/V56__floors_read_from_their_top.sql, migrations/V57__switched_functions_plan_once.sql
CREATE FUNCTION tasklane.sync_task_queue() RETURNS trigger
    LANGUAGE plpgsql
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
DECLARE
    written bigint;
    ids uuid[]; types text[]; priorities smallint[]; apps text[]; subjects text[];
    fresh_ids uuid[]; claimable_ids uuid[];
BEGIN
    -- The statement wrote its own tasks' mirror rows and notifications (below): the
    -- setting is consumed here, so the next statement of the transaction is synced.
    IF current_setting('tasklane.queue_written', true) = 'on' THEN
        PERFORM set_config('tasklane.queue_written', '', true);
        RETURN NULL;
    END IF;
    -- The mirror is read and written by the updated tasks' ids alone (an index probe
    -- each), never joined to the transition table: a join may be planned as a hash of a
    -- scan of the mirror's whole primary key, and a plan kept from a mirror of a few
    -- pages as a sequential scan (hence no sequential scans in this function's plans):
    -- either walks every dead row a snapshot held open keeps from vacuum.
    fresh_ids := ARRAY(SELECT n.id FROM fresh n);
    IF EXISTS (SELECT 1 FROM tasklane.webhook_endpoints WHERE NOT disabled) THEN
        WITH ended AS (
            DELETE FROM tasklane.task_queue q
            WHERE q.id = ANY (ARRAY(SELECT n.id FROM fresh n
                                    WHERE n.state IN ('succeeded', 'failed', 'cancelled')))
            RETURNING q.id
        )
        INSERT INTO tasklane.webhook_deliveries
            (endpoint_id, app, scope_id, task_id, event, created_at)
        SELECT e.id, d.app, d.scope_id, d.id, 'task.' || d.state, coalesce(d.finished_at, now())
        FROM ended x
        JOIN fresh d ON d.id = x.id
        JOIN tasklane.webhook_endpoints e
          ON e.app = d.app AND NOT e.disabled AND ('task.' || d.state) = ANY (e.events);
        GET DIAGNOSTICS written = ROW_COUNT;
        -- The deliverers of every replica LISTEN: one NOTIFY per statement that wrote.
        IF written > 0 THEN
            PERFORM pg_notify('tasklane_webhooks', '');
        END IF;
    ELSE
        DELETE FROM tasklane.task_queue q
        WHERE q.id = ANY (ARRAY(SELECT n.id FROM fresh n
                                WHERE n.state IN ('succeeded', 'failed', 'cancelled')));
    END IF;
    -- The tasks becoming claimable (from running, cancelling or finished) take a turn;
    -- the others keep theirs. Every claimable task written holds its floor first.
    SELECT array_agg(n.task_type), array_agg(n.priority)
    INTO types, priorities
    FROM fresh n
    WHERE n.state IN ('queued', 'waiting_for_retry', 'waiting_for_external_fallback');
    IF types IS NOT NULL THEN
        PERFORM tasklane.hold_floors(types, priorities);
    END IF;
    -- Those already claimable in the mirror keep their turns.
    -- Found by id alone, the state tested after (OFFSET 0): with the state beside the
    -- ids, the plan kept for the session may read a claimable partial index whole.
    claimable_ids := ARRAY(SELECT o.id
                           FROM (SELECT o.id, o.state FROM tasklane.task_queue o
                                 WHERE o.id = ANY (fresh_ids)
                                 OFFSET 0) o
                           WHERE o.state IN ('queued', 'waiting_for_retry', 'waiting_for_external_fallback'));
    SELECT array_agg(n.id), array_agg(n.task_type), array_agg(n.priority), array_agg(n.app),
           array_agg(coalesce(n.usage_subject, ''))
    INTO ids, types, priorities, apps, subjects
    FROM fresh n
    WHERE n.state IN ('queued', 'waiting_for_retry', 'waiting_for_external_fallback')
      AND NOT (n.id = ANY (claimable_ids));
    INSERT INTO tasklane.task_queue AS q
        (id, state, priority, run_at, deadline_at, lease_expires_at, task_type, app,
         scope_id, privacy, resource, subject, turn, behind)
    SELECT n.id, n.state, n.priority, n.run_at, n.deadline_at, n.lease_expires_at,
           n.task_type, n.app, n.scope_id, n.privacy, n.resource,
           coalesce(n.usage_subject, ''),
           -- The row to insert carries the turn it keeps, since its CHECK is tested
           -- before the conflict is found.
           coalesce(t.turn, o.turn),
           -- A new turn is never below the floor (take_turns); a kept one is behind
           -- when the floor has passed it, in its (perhaps new) priority.
           t.turn IS NULL AND coalesce(o.turn < f.floor, false)
    FROM fresh n
    LEFT JOIN (SELECT o.id, o.state, o.priority, o.run_at, o.deadline_at, o.lease_expires_at,
                      o.turn
               FROM tasklane.task_queue o
               WHERE o.id = ANY (fresh_ids)
               OFFSET 0) o ON o.id = n.id
    LEFT JOIN LATERAL (SELECT f.floor FROM tasklane.turn_floors f
                       WHERE f.task_type = n.task_type AND f.priority = n.priority
                       ORDER BY f.floor DESC
                       LIMIT 1) f ON true
    LEFT JOIN tasklane.take_turns(ids, types, priorities, apps, subjects) t ON t.id = n.id
    WHERE n.state NOT IN ('succeeded', 'failed', 'cancelled')
      AND (o.id IS NULL
           OR (o.state, o.priority, o.run_at, o.deadline_at, o.lease_expires_at)
              IS DISTINCT FROM
              (n.state, n.priority, n.run_at, n.deadline_at, n.lease_expires_at))
    ON CONFLICT (id) DO UPDATE
    SET state = excluded.state, priority = excluded.priority, run_at = excluded.run_at,
        deadline_at = excluded.deadline_at, lease_expires_at = excluded.lease_expires_at,
        turn = excluded.turn, behind = excluded.behind;
    RETURN NULL;
END
$$;
