-- V14: the queue's indexes move off the wide tasks row (issue 16, "a schema for speed
-- with the same guarantees"). Forward-only: never edit once landed.
--
-- Every transition used to be a non-HOT update of the wide `tasks` row: `state`,
-- `lease_expires_at` and `finished_at` appear in the keys or predicates of six partial
-- indexes, so each claim and each settle wrote a new entry into all eleven index entries
-- the row has (the listings, the identity, the primary key...), not only the queue's.
-- Now no index of `tasks` names a column that a claim, heartbeat or settle changes, so
-- those updates can be HOT (a new row version on the same page, no index entry at all),
-- and the queue's indexes live on `tasklane.task_queue`: one narrow row per live
-- (non-terminal) task with the fields claims and sweeps select and order by.
--
-- `tasks` stays the single truth. `task_queue` is a mirror kept by statement triggers
-- (below) in the same statement that changes `tasks`, so no statement that moves a
-- task needs to know about it, and no reader can see the two disagree after a commit.
-- Readers find candidates through the mirror's indexes, lock the `tasks` rows and
-- recheck on them (FOR UPDATE OF t: a row changed since the snapshot is rechecked on
-- its newest version), exactly as they rechecked on `tasks` before. Locks are taken in
-- one order everywhere: a `tasks` row first, its mirror row after (only the trigger
-- writes the mirror, and only after the `tasks` row is locked by the statement that
-- fires it), so the mirror adds no deadlock.
CREATE TABLE tasklane.task_queue (
    id               uuid PRIMARY KEY,
    state            text NOT NULL,
    priority         smallint NOT NULL,
    run_at           timestamptz NOT NULL,
    deadline_at      timestamptz,
    lease_expires_at timestamptz,
    task_type        text NOT NULL,
    app              text NOT NULL,
    scope_id         text NOT NULL,
    privacy          text NOT NULL,
    resource         text
) WITH (fillfactor = 80);

-- The mirror's rows are few (live tasks only) and rewritten at every transition: a
-- little free space per page lets a heartbeat's new version stay on its page.
CREATE INDEX task_queue_claimable ON tasklane.task_queue (priority DESC, run_at, id)
    WHERE state IN ('queued', 'waiting_for_retry');
CREATE INDEX task_queue_fallback ON tasklane.task_queue (priority DESC, run_at, id)
    WHERE state = 'waiting_for_external_fallback';
CREATE INDEX task_queue_leased ON tasklane.task_queue (lease_expires_at)
    WHERE state IN ('running', 'cancelling');
CREATE INDEX task_queue_deadline ON tasklane.task_queue (deadline_at)
    WHERE deadline_at IS NOT NULL
      AND state IN ('queued', 'waiting_for_retry', 'waiting_for_external_fallback');
CREATE INDEX task_queue_resource ON tasklane.task_queue (resource)
    WHERE resource IS NOT NULL
      AND state IN ('queued', 'waiting_for_retry', 'waiting_for_external_fallback');

INSERT INTO tasklane.task_queue
    (id, state, priority, run_at, deadline_at, lease_expires_at, task_type, app, scope_id,
     privacy, resource)
SELECT id, state, priority, run_at, deadline_at, lease_expires_at, task_type, app, scope_id,
       privacy, resource
FROM tasklane.tasks
WHERE state NOT IN ('succeeded', 'failed', 'cancelled');

-- Updated rows, as the statement left them: live ones are written into
-- the mirror where a field it holds changed (an update of progress alone writes
-- nothing), finished ones leave it. A retry of a finished task comes back in.
-- Statement level with a transition table: one call per statement, so a claim or a
-- settle of a hundred tasks pays for it once, in two set-based statements.
CREATE FUNCTION tasklane.sync_task_queue() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM tasklane.task_queue q USING fresh n
    WHERE q.id = n.id AND n.state IN ('succeeded', 'failed', 'cancelled');
    INSERT INTO tasklane.task_queue AS q
        (id, state, priority, run_at, deadline_at, lease_expires_at, task_type, app,
         scope_id, privacy, resource)
    SELECT n.id, n.state, n.priority, n.run_at, n.deadline_at, n.lease_expires_at,
           n.task_type, n.app, n.scope_id, n.privacy, n.resource
    FROM fresh n
    LEFT JOIN tasklane.task_queue o ON o.id = n.id
    WHERE n.state NOT IN ('succeeded', 'failed', 'cancelled')
      AND (o.id IS NULL
           OR (o.state, o.priority, o.run_at, o.deadline_at, o.lease_expires_at)
              IS DISTINCT FROM (n.state, n.priority, n.run_at, n.deadline_at, n.lease_expires_at))
    ON CONFLICT (id) DO UPDATE
    SET state = excluded.state, priority = excluded.priority, run_at = excluded.run_at,
        deadline_at = excluded.deadline_at, lease_expires_at = excluded.lease_expires_at;
    RETURN NULL;
END
$$;

-- A submit inserts live tasks only (a finished one comes from a bulk load at most): the
-- insert's trigger is one INSERT, nothing to compare or delete.
CREATE FUNCTION tasklane.insert_task_queue() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO tasklane.task_queue
        (id, state, priority, run_at, deadline_at, lease_expires_at, task_type, app,
         scope_id, privacy, resource)
    SELECT n.id, n.state, n.priority, n.run_at, n.deadline_at, n.lease_expires_at,
           n.task_type, n.app, n.scope_id, n.privacy, n.resource
    FROM fresh n
    WHERE n.state NOT IN ('succeeded', 'failed', 'cancelled');
    RETURN NULL;
END
$$;

CREATE TRIGGER tasks_queue_insert AFTER INSERT ON tasklane.tasks
REFERENCING NEW TABLE AS fresh FOR EACH STATEMENT
EXECUTE FUNCTION tasklane.insert_task_queue();

CREATE TRIGGER tasks_queue_update AFTER UPDATE ON tasklane.tasks
REFERENCING NEW TABLE AS fresh FOR EACH STATEMENT
EXECUTE FUNCTION tasklane.sync_task_queue();

-- Deleted tasks (owner deletion, pruning) leave the mirror too.
CREATE FUNCTION tasklane.delete_task_queue() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM tasklane.task_queue q USING gone g WHERE q.id = g.id;
    RETURN NULL;
END
$$;

CREATE TRIGGER tasks_queue_delete AFTER DELETE ON tasklane.tasks
REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
EXECUTE FUNCTION tasklane.delete_task_queue();

-- The indexes whose keys or predicates name a column the hot path changes go; the
-- pruner's is replaced by one on released_at alone (set once, by a release: never by a
-- claim or a settle). A released task is pruned once finished_at is past the retention
-- too; the pruner filters that on the rows the index hands it.
DROP INDEX tasklane.tasks_claimable;
DROP INDEX tasklane.tasks_claimable_resource;
DROP INDEX tasklane.tasks_deadline;
DROP INDEX tasklane.tasks_fallback;
DROP INDEX tasklane.tasks_leased;
DROP INDEX tasklane.tasks_prunable;
CREATE INDEX tasks_released ON tasklane.tasks (released_at) WHERE released_at IS NOT NULL;

-- Room on each page for the row's next versions: a task is updated at claim, at each
-- heartbeat and at settle, and a HOT update needs the new version on the old one's
-- page. Claims take tasks in id order (ids are time-ordered), so a batch claim
-- rewrites every row of a page at once, each version ~70 bytes longer than the
-- submitted one (lease, worker, clocks): measured on submitted tasks, 50 left a fifth
-- of the claims non-HOT and 40 none (tests/it/task_queue.rs). The settle's versions
-- fit in the room the claim's dead versions leave once pruned. The price is space: a
-- page of finished tasks ends about half full. Applies to pages written from now on.
ALTER TABLE tasklane.tasks SET (fillfactor = 40);
