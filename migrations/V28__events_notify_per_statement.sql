-- V28: the events NOTIFY is sent once per statement, for all the tasks it ended, not once
-- per event row (issue 16, the drain). Forward-only: never edit once landed.
--
-- V5 made it a row trigger with a WHEN, so queued, running and progress events fire
-- nothing. But every terminal event still ran a PL/pgSQL call and queued its own
-- notification (a distinct payload, never folded), which the committing backend then
-- copied into the notification queue under its lock, each listening replica's backend
-- read and sent on, and each replica parsed: per task, on the hot path. Counted with
-- callgrind (benches/callgrind/claim_settle.sh, no listener), a claim of 100 and its
-- settle went from 402,000 to 385,000-388,000 PostgreSQL instructions a task (-4%),
-- before the listeners' share, which a single backend does not show.
--
-- * A statement trigger over the inserted rows sends the ids of the tasks whose
--   terminal event or worker output the statement wrote, up to 200 to a notification
--   (comma-separated: 7,400 bytes of NOTIFY's 8,000), so a group commit of 100 tasks
--   queues one notification. The replicas' watch reads every id of a payload.
-- * It fires for every insert into task_events, also those that write no terminal event
--   (a submit's task.queued, a claim's task.running): a call and one scan of the
--   statement's own rows, nothing sent.
-- * An older binary beside this one (a rolling upgrade) cannot parse a payload of more
--   than one id and ignores it: its `?wait=` and event streams learn of those tasks from
--   their shared poll (every 500 ms) until it is replaced.
DROP TRIGGER task_events_notify ON tasklane.task_events;
DROP FUNCTION tasklane.notify_task_event();

CREATE FUNCTION tasklane.notify_task_events() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    ids text[];
BEGIN
    SELECT array_agg(task_id::text) INTO ids
    FROM added
    WHERE type IN ('task.succeeded', 'task.failed', 'task.cancelled', 'task.output');
    FOR part IN 0 .. coalesce(cardinality(ids), 0) - 1 BY 200 LOOP
        PERFORM pg_notify('tasklane_events', array_to_string(ids[part + 1:part + 200], ','));
    END LOOP;
    RETURN NULL;
END
$$;

CREATE TRIGGER task_events_notify
    AFTER INSERT ON tasklane.task_events
    REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION tasklane.notify_task_events();
