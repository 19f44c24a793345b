-- transition: Fail
--   except running, cancelling
--   (a queue deadline bounds the wait for a start; a started attempt has its timeout)
-- Fails closed the waiting tasks whose queue deadline has passed, with their events.
-- $1 limit, $2 the least deadline to consider (nullable: from the start). Locks: the
-- rows FOR UPDATE SKIP LOCKED (a claimer holding one wins it; the claim itself never
-- takes a task past its deadline).
-- Found through the mirror's task_queue_deadline; the state is rechecked on the locked
-- task row. The scan starts at $2, where the last sweep found nothing more: the index
-- keeps an entry for every task claimed or ended while an older snapshot is open (a
-- long pg_dump, a forgotten transaction), and a sweep from the start would step over
-- all of them. The due rows' ids are read from that index first and the tasks found
-- again by id alone: written as a join, the sweep read 25,000-74,000 pages a sweep
-- under a hold while it found nothing, more than the deadline index holds, so its plan
-- read something else whole; an array of ids leaves the planner only primary-key
-- probes.
WITH due AS (
    SELECT t.id
    FROM tasklane.tasks t
    WHERE t.id = ANY (ARRAY(
            SELECT q.id
            FROM tasklane.task_queue q
            WHERE q.deadline_at <= now() AND q.deadline_at IS NOT NULL
              AND q.deadline_at >= coalesce($2::timestamptz, '-infinity')
              AND q.state IN ('queued', 'waiting_for_retry', 'waiting_for_external_fallback')
            ORDER BY q.deadline_at
            LIMIT $1))
      AND t.state IN ('queued', 'waiting_for_retry', 'waiting_for_external_fallback')
    FOR UPDATE OF t SKIP LOCKED
), moved AS (
    UPDATE tasklane.tasks t
    SET state = 'failed', error_code = 'queue_deadline_exceeded',
        error_message = 'the task did not start before its queue deadline',
        finished_at = now(), snapshot = NULL, event_seq = t.event_seq + 1
    WHERE t.id = ANY (ARRAY(SELECT due.id FROM due))
    RETURNING t.id, t.event_seq, t.attempt
), events AS (
    INSERT INTO tasklane.task_events (task_id, seq, type, data)
    SELECT id, event_seq, 'task.failed',
           jsonb_build_object('attempt', attempt, 'code', 'queue_deadline_exceeded')
    FROM moved
)
SELECT count(*) FROM moved
