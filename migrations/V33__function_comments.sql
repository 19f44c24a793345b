-- Every function in the tasklane schema carries its own explanation as its COMMENT: what
-- it does, what its parameters mean where the name does not say, the locks it takes and
-- who calls it (a statement in sql/, a trigger, another function, or the SQL API that
-- applications call). The generated reference files sql/functions/<name>.sql print the
-- comment as their header, so a reader of the current definition needs no migration.
-- Written from the function bodies, the comments of the migrations that wrote them and
-- their callers in src/store/. No function changes.

-- Submit ------------------------------------------------------------------------------

COMMENT ON FUNCTION tasklane.submit_task(uuid, text, text, text, text, text, text, bytea, jsonb, smallint, integer, text, text, integer, integer, bigint, text, text) IS
$$Submits one task, or answers with the task that already has its identity (app, scope,
effect key, usage subject). Called by sql/submit.sql (POST /v1/tasks, one round trip),
by tasklane.submit_tasks for the batch items it does not insert itself, and by
tasklane.run_task (the SQL API).
Steps, in this order: an index probe for the identity (most submits are new, so no view
row is read first); the owner lock of (app, scope), shared, then a try-lock of the
identity's advisory lock (on contention it waits for the other submit of the identity
and answers with that task if it committed); the scope fence; admission
(tasklane.admit) only when an emergency stop or a limit applies to (app, subject), its
check written inline so its plan is cached with this function; the insert with its
task.queued event.
p_digest is the request digest: the canonical one (tasklane.request_digest) followed by
the legacy one the binary computes, compared by tasklane.identity_task.
p_deadline_seconds: the task's deadline from now (NULL: none). p_resource: the resource
whose slot a claim takes. p_traceparent: the W3C trace context to carry (NULL: none).
Returns one row: outcome created, found (task is the existing one), conflict (the same
identity with another request), scope_deleted (fenced) or refused (refused,
refused_limit, free_at and decided_at say why and until when); no row when the
identity's task vanished while being read. A refusal looks for the identity's task
again first: another submit of it may have committed after the probe.
Locks: the owner lock (shared), the identity's advisory lock, what admission takes
(capacity slots, rate tokens), the new row; all until the transaction ends.$$;

COMMENT ON FUNCTION tasklane.submit_task(uuid, text, text, text, text, text, text, bytea, jsonb, smallint, integer, text, text, integer, integer, bigint, text) IS
$$Compatibility shim: the submit without a traceparent, forwarding to the 18-argument
tasklane.submit_task with a NULL traceparent. Kept only for binaries that send the
17-argument call; no statement in sql/ calls it.$$;

COMMENT ON FUNCTION tasklane.submit_tasks(bigint[], uuid[], text[], text[], text[], text[], text[], text[], bytea[], jsonb[], smallint[], integer[], text[], text[], integer[], integer[], bigint[], text[], text[]) IS
$$Submits many tasks in one statement (sql/submit_batch.sql, POST /v1/tasks:batch): takes
the owner lock (shared) of every (app, scope) in key order, inserts in one multi-row
insert the new tasks to which no fence, emergency stop or limit applies, then sends
every other item through tasklane.submit_task in item order, so each item is answered
as a single submit of it would be and items are independent; an identity twice in one
batch joins its first item's task.
Every array has one element per item, sorted by the caller in identity order (app,
scope, effect key, subject; equal identities in item order), so the function sorts
nothing and of equal identities the first in the request wins the insert. p_n gives
each item's position in the request (a permutation of 1..N, refused otherwise); the
other arrays are tasklane.submit_task's parameters, one element per item.
Returns one row per item: its position n, the outcome columns of tasklane.submit_task
and the task's view columns, in no particular order; a NULL outcome when the item's
identity's task vanished while being read.
Locks: the owner locks (shared), the new rows, and those of tasklane.submit_task for
the items it runs; all until the transaction ends.$$;

COMMENT ON FUNCTION tasklane.submit_tasks(uuid[], text[], text[], text[], text[], text[], text[], bytea[], jsonb[], smallint[], integer[], text[], text[], integer[], integer[], bigint[], text[], text[]) IS
$$Compatibility shim: the batch submit that takes its items in request order, without
item positions. Kept only for binaries that send that call; sql/submit_batch.sql calls
the overload whose first argument numbers the items.$$;

COMMENT ON FUNCTION tasklane.identity_task(text, text, text, text, bytea) IS
$$The task with the identity (p_app, p_scope, p_effect_key, p_subject; a NULL subject
matches only NULL), as tasklane.submit_task answers with it: outcome found with its
view row when p_digest matches its request digest, conflict without it otherwise; no
row when no task has the identity. Digests match on their canonical part when both
have one, else on their legacy part (tasklane.digest_canonical, digest_legacy), so
tasks stored by any binary keep matching. Called by tasklane.submit_task; takes no
lock.$$;

COMMENT ON FUNCTION tasklane.identity_key(text, text, text, text) IS
$$The two-int4 advisory-lock key of a task identity (app, scope, effect key, subject):
the first 8 bytes of a SHA-256 of the parts joined by control characters, so distinct
identities collide only by chance. tasklane.submit_task try-locks it so two submits of
one identity never both insert. Takes no lock itself.$$;

COMMENT ON FUNCTION tasklane.owner_key(text, text) IS
$$The bigint advisory-lock key of a scope (app, scope): the first 8 bytes of a SHA-256
of app and scope. Submits (tasklane.submit_task, submit_tasks) take it shared; a scope
deletion (tasklane.delete_tasks) takes it exclusive, so a deletion and its fence never
interleave with a submit into the scope. sql/owner_lock_scope.sql takes it shared for a
retry's transaction. Takes no lock itself.$$;

COMMENT ON FUNCTION tasklane.request_digest(text, text, jsonb, integer, bigint, integer, text, text) IS
$$The canonical request digest of a submit: byte 2 (the format) followed by the SHA-256
of the request's fields as a JSON object with its keys in a fixed order, the input
canonicalised (tasklane.canonical_json) only when it holds a number with a trailing
zero in its fraction, the one case where jsonb's text is not already canonical. Two
submits of one identity are the same request exactly when their digests are equal.
Computed in SQL so every door agrees: sql/submit.sql, sql/submit_batch.sql and
tasklane.run_task. Parameters: the task type, source id, input, priority, deadline
seconds, max attempts, on_restart and privacy of the request, as resolved.$$;

COMMENT ON FUNCTION tasklane.canonical_json(jsonb) IS
$$The canonical form of a JSON value: numbers without trailing zeros in their fraction
(1.50 becomes 1.5), arrays and objects canonicalised element by element. Used by
tasklane.request_digest for inputs whose text is not canonical as it is. Immutable,
strict; takes no lock.$$;

COMMENT ON FUNCTION tasklane.digest_canonical(bytea) IS
$$The canonical part (33 bytes: format byte 2 and a SHA-256) of a stored or submitted
request digest, or NULL when the digest has none (a 32-byte legacy digest). Used by
tasklane.identity_task.$$;

COMMENT ON FUNCTION tasklane.digest_legacy(bytea) IS
$$The legacy part (a 32-byte SHA-256 computed by the binary) of a request digest: the
whole digest when it is only that, the bytes after the canonical part when it holds
both, NULL otherwise. Used by tasklane.identity_task to match tasks whose digests have
no canonical part.$$;

COMMENT ON FUNCTION tasklane.uuid_v7() IS
$$A UUID of version 7: 48 bits of Unix milliseconds, then random bits (version and
variant set), so ids sort by creation like the ids the binary makes. The default of
tasklane.webhook_deliveries.id.$$;

-- Admission ---------------------------------------------------------------------------

COMMENT ON FUNCTION tasklane.admit(uuid, text, text, timestamp with time zone) IS
$$Admission of task p_task for (p_app, p_subject; NULL subject: the app's background
work): walks the emergency stops (global, then the app's) and the limits whose key
matches (global, app, app and subject) in the order stop, capacity, rate, budget, and
stops at the first that refuses. A capacity limit takes a free slot (searched from a
random slot, so submits spread over the slots); a rate limit takes a token free since a
window ago; a budget compares today's spent units (UTC day) with its max. On a refusal
it gives back what it took (tasklane.give_back) and returns refused (emergency_stop,
capacity_exhausted, rate_limited, budget_exhausted), limit_id and, for a rate limit,
free_at: when a token frees. Admitted under a rate limit, it records the decision in
tasklane.admission_history. at is the time it decided; p_now overrides now() (tests
only).
Called by tasklane.submit_task and by sql/admit.sql (a retry admits its task again).
Locks: the capacity slot and rate tokens it takes (FOR UPDATE SKIP LOCKED: never waits
on another submit), until the transaction ends.$$;

COMMENT ON FUNCTION tasklane.give_back(uuid, boolean, tid[]) IS
$$Undoes what one tasklane.admit call took before it refused: frees the capacity slots of
task p_task when p_slots, and puts the rate tokens at p_tokens (their new row versions)
back to their previous use time. Called only by tasklane.admit, on rows it has locked.$$;

COMMENT ON FUNCTION tasklane.unadmit(uuid, text, text) IS
$$Undoes an admission that admitted task p_task for (p_app, p_subject) in this
transaction but whose insert found the identity taken: frees its capacity slots, puts
back the rate tokens it used at this transaction's now(), and deletes its
admission_history row. Called by tasklane.submit_task on rows this transaction already
holds.$$;

COMMENT ON FUNCTION tasklane.set_limit(text, text, text, integer, bigint) IS
$$Creates or changes an admission limit (sql/limit_set.sql, the admin API) and returns its
id. p_kind: capacity, rate or budget; p_app and p_subject: its key ('' or NULL: any);
p_window: a rate limit's window in seconds (0 otherwise); p_max: tasks in flight,
submits per window or units a day. A new capacity limit gives a slot to every task
already in flight under its key (retired past the max, so they count and give it back
when they end); a capacity limit is resized by tasklane.resize_slots. A rate limit gets
one token per allowed submit, a new one seeded from admission_history so the window's
recent submits count.
Locks: the limit's row; for a new capacity limit the in-flight tasks of its key; the
limit's slots or tokens.$$;

COMMENT ON FUNCTION tasklane.set_resource(text, integer) IS
$$Creates or resizes a resource (sql/resource_set.sql, the admin API): at most p_slots
tasks whose type names resource p_name run at once, cluster-wide, each holding one of
its slots (taken by the claim). Resized by tasklane.resize_slots. Locks: the resource's
row and slots.$$;

COMMENT ON FUNCTION tasklane.resize_slots(regclass, text, text, text, integer) IS
$$Makes the slot table p_table (capacity_slots or resource_slots) hold p_n live slots for
the key p_key_column = p_key (of SQL type p_key_type): un-retires and then adds slots
to grow; to shrink, deletes free slots and retires held ones, which are deleted when
their tasks give them back (the release triggers), so a lowered limit never takes a
slot from a running task. Called by tasklane.set_limit and set_resource.
Locks: every slot row of the key (FOR UPDATE) until the transaction ends.$$;

COMMENT ON FUNCTION tasklane.reserve_budget(uuid, uuid, bigint) IS
$$Reserves p_units of today's budget for the running attempt of task p_task, fenced on its
lease token p_token, before a call that spends them (sql/call_start.sql,
sql/budget_reserve.sql). outcome: reserved; unlimited (no budget limit for the task's
app and subject); budget_exhausted (spent and reserved units reach the max); lease_lost
or task_gone. limit_id: the budget limit; at: when it decided.
Forgets, under the limit's lock, the reservations of attempts that ended, then sums
reservations before spent units, so an attempt settling in between counts twice,
never not at all.
Locks: the budget limit's row (FOR NO KEY UPDATE), serialising the reservations of one
budget; the reservation row.$$;

-- Hot path ----------------------------------------------------------------------------

COMMENT ON FUNCTION tasklane.complete_tasks_claiming(uuid[], uuid[], jsonb[], bigint[], text[], text[], text[], text[], bigint[], bigint[], bigint[], uuid, double precision, uuid[]) IS
$$The transition Succeed by lease for a batch (group commit of attempts that finished at
about the same time), called by sql/complete_many.sql for in-process workers. Each task
is fenced on its own lease token and gets its task.succeeded event, its attempt row and
the budget charge of the usage it reported; its mirror row in tasklane.task_queue is
deleted here (the statement sets tasklane.queue_written, so the mirror trigger skips
it). The attempt's deadline is not fenced: the worker's own timer ends an attempt at its
deadline.
Parameters: parallel arrays with one element per task, p_id, p_lease_token, p_result
and the usage (units, provider, model, route, route name, input, output and total
tokens; NULL elements allowed); p_claim_token and p_claim_seconds: the webhook
notifications written are claimed for this replica's deliverer with this token for
this long (NULL token: claim none), except those of the endpoints in p_busy.
Returns (id, lease_token) of each settled task with delivery_id NULL (a pair missing
from the answer lost its lease or is gone), and (task id, delivery_id, endpoint_id,
created_at) of each claimed notification with lease_token NULL. Unclaimed
notifications wake the deliverers (NOTIFY tasklane_webhooks).
The statement lives in a function so it is planned once per connection
(plan_cache_mode = force_generic_plan).
Locks: the settled task rows in array order (callers sort by id, so two batches never
wait on each other in opposite orders); the budget_usage stripes charged.$$;

COMMENT ON FUNCTION tasklane.complete_tasks(uuid[], uuid[], jsonb[], bigint[], text[], text[], text[], text[], bigint[], bigint[], bigint[]) IS
$$Compatibility shim: the batch Succeed by lease without the webhook claim, as binaries
that do not hand notifications to their deliverer call it. Same parameters, effect and
locks as the first eleven of tasklane.complete_tasks_claiming; returns (id, lease_token)
of each settled task. No statement in sql/ calls it.$$;

COMMENT ON FUNCTION tasklane.claim_webhooks(bigint, bigint, double precision, uuid[], bigint[]) IS
$$Claims up to p_limit due webhook deliveries for this replica's deliverer
(sql/webhook_claim.sql): pending, due and not claimed by another, oldest first, at most
p_rows[i] per endpoint p_endpoints[i] and p_default_rows for any other endpoint, so one
slow endpoint cannot take the whole claim. Each claimed delivery gets a fresh claim
token, an attempt counted and a claim lasting p_claim_seconds; deliveries whose endpoint
is gone are deleted. Returns each claimed delivery with its endpoint's url, disabled
flag and live secrets (newest first).
The due rows are looked up by primary key with a condition that implies no partial
index, and the function plans generically (plan_cache_mode = force_generic_plan,
enable_seqscan off), so the plan stays the same whatever the outbox holds.
Locks: the claimed delivery rows (FOR UPDATE SKIP LOCKED: concurrent deliverers never
wait on each other).$$;

-- Triggers on tasklane.tasks and tasklane.task_events -----------------------------------

COMMENT ON FUNCTION tasklane.insert_task_queue() IS
$$Trigger function of tasks_queue_insert (AFTER INSERT ON tasklane.tasks, per statement):
writes the mirror rows in tasklane.task_queue of the inserted tasks that are not
finished. The mirror is the narrow table the claim scans, so the queue's indexes stay
small whatever tasks holds.$$;

COMMENT ON FUNCTION tasklane.sync_task_queue() IS
$$Trigger function of tasks_queue_update (AFTER UPDATE ON tasklane.tasks, per statement):
keeps the mirror tasklane.task_queue in step with the updated tasks. Finished tasks
leave it, and when any webhook endpoint is enabled their notifications are written to
webhook_deliveries with one NOTIFY tasklane_webhooks for the statement; other tasks are
upserted only when a mirrored column changed. A statement that wrote its own tasks'
mirror rows and notifications (the claim, the group commit) sets tasklane.queue_written
to on; the trigger then only clears it, so the next statement of the transaction is
synced again.
Locks: the mirror rows it writes.$$;

COMMENT ON FUNCTION tasklane.delete_task_queue() IS
$$Trigger function of tasks_queue_delete (AFTER DELETE ON tasklane.tasks, per statement):
deletes the deleted tasks' mirror rows from tasklane.task_queue.$$;

COMMENT ON FUNCTION tasklane.delete_task_events() IS
$$Trigger function of tasks_delete_events (AFTER DELETE ON tasklane.tasks, per statement):
deletes the deleted tasks' events, which have no foreign key (a foreign key would be
checked on every event insert of the hot path).$$;

COMMENT ON FUNCTION tasklane.delete_task_attempts() IS
$$Trigger function of tasks_delete_attempts (AFTER DELETE ON tasklane.tasks, per
statement): deletes the deleted tasks' attempt rows (tasklane.task_attempts, no foreign
key).$$;

COMMENT ON FUNCTION tasklane.delete_task_deliveries() IS
$$Trigger function of tasks_delete_deliveries (AFTER DELETE ON tasklane.tasks, per
statement): deletes the deleted tasks' webhook deliveries that are not delivered yet;
delivered ones stay as the outbox's record until pruned.$$;

COMMENT ON FUNCTION tasklane.record_usage() IS
$$Trigger function of tasks_record_usage (AFTER UPDATE OF state ON tasklane.tasks, per
row, when a task with usage units reaches a final state): adds the units to today's (UTC
day of finished_at) budget_usage of its app and subject, on one of eight random stripes
so concurrent settlements rarely wait on one row. The group commit charges its own tasks
in its statement instead. Locks: the stripe's row.$$;

COMMENT ON FUNCTION tasklane.release_capacity() IS
$$Trigger function of tasks_release_capacity (AFTER UPDATE OF state, per row, when a task
holding capacity reaches a final state) and tasks_release_capacity_on_delete (AFTER
DELETE, per row, when it is deleted unfinished): gives back the task's capacity slots. A
retired slot (its limit was lowered) is deleted; a live one is freed, or, when its limit
still has retired slots, handed to a task holding a retired one, whose retired slot is
deleted instead, so a lowered limit converges as tasks end.
Locks: the task's slots and one retired slot of the limit (SKIP LOCKED: a locked one is
being released by its own task).$$;

COMMENT ON FUNCTION tasklane.release_resource_slot() IS
$$Trigger function of tasks_release_resource_slot (BEFORE UPDATE OF state, per row, when a
task holding a resource slot leaves running or cancelling) and
tasks_release_resource_slot_on_delete (BEFORE DELETE, per row): gives back the task's
resource slot as tasklane.release_capacity gives back capacity (retired slots deleted, a
freed slot handed to a holder of a retired one), and clears the task's resource_slot.
Locks: the task's slot and one retired slot of the resource (SKIP LOCKED).$$;

COMMENT ON FUNCTION tasklane.notify_task_events() IS
$$Trigger function of task_events_notify (AFTER INSERT ON tasklane.task_events, per
statement): NOTIFY tasklane_events with the ids of the tasks that finished or wrote
output, up to 200 ids a message, so replicas answer waiting requests (wait=, streams)
without polling. One statement's events make one to a few messages whatever the batch's
size.$$;

-- SQL API: functions applications call, granted to tasklane_app ------------------------

COMMENT ON FUNCTION tasklane.run_task(text, text, text, text, jsonb, text, text, integer, bigint, integer, text, text) IS
$$SQL API: submits a task from inside an application's own transaction, so the task
exists exactly when that transaction commits. Validates the request as the HTTP door
does (keys 1 to 200 bytes, a registered task type, input size and numbers, priority,
deadline, attempts, on_restart, privacy), fills unset fields from the task type's
registration (sql/task_types_register.sql), computes the request digest and calls
tasklane.submit_task. Returns (task_id, outcome): created, joined (the identity's task
runs) or replayed (it finished). Raises SQLSTATE TL422 (invalid), TL409 (idempotency
conflict, concurrent change), TL410 (the scope is fenced), TL429 and TL503 (refused by
admission, the wait in the hint). A created task wakes workers at commit (NOTIFY
tasklane_wakeup).
Locks: those of tasklane.submit_task, held until the application's transaction ends.
SECURITY DEFINER, granted to tasklane_app.$$;

COMMENT ON FUNCTION tasklane.check_key(text, text, boolean) IS
$$Validation for tasklane.run_task: refuses (tasklane.refuse_invalid) the key p_value of
field p_field when it is NULL but p_required, or not 1 to 200 bytes long.$$;

COMMENT ON FUNCTION tasklane.refuse_invalid(text, text) IS
$$Raises the validation error of the SQL API: SQLSTATE TL422, message '<field>:
<message>', detail validation_failed, column p_field. Used by tasklane.run_task and
check_key.$$;

COMMENT ON FUNCTION tasklane.delete_tasks(text, text, text, boolean) IS
$$SQL API and sql/lifecycle_delete.sql: deletes the tasks of scope (p_app, p_scope_id),
or only those of source p_source_id, and returns how many. With p_fence it first fences
the scope (tasklane.scope_fences), so no later submit creates tasks in it until
tasklane.lift_fence. Deleting a task deletes its events, attempts, mirror row and
undelivered notifications and gives back its slots (triggers on tasklane.tasks).
Needs READ COMMITTED, so rows committed while it waited for its lock are deleted too.
Locks: the scope's owner lock exclusively (tasklane.owner_key: waits for submits into
the scope, and they wait for it), then the deleted rows.
SECURITY DEFINER, granted to tasklane_app.$$;

COMMENT ON FUNCTION tasklane.lift_fence(text, text) IS
$$SQL API and sql/lifecycle_lift_fence.sql: lifts the fence tasklane.delete_tasks set on
scope (p_app, p_scope_id), so submits into it are accepted again; returns whether there
was one. Locks: the fence row. SECURITY DEFINER, granted to tasklane_app.$$;

COMMENT ON FUNCTION tasklane.release_task(text, text, text, text) IS
$$SQL API: marks the task with identity (p_app, p_scope_id, p_effect_key,
p_usage_subject) released: the application has taken its result, so retention may prune
it once finished. Returns whether the task exists. Idempotent (tasklane.release_task_at
keeps the first release time). Locks: the task's row. SECURITY DEFINER, granted to
tasklane_app.$$;

COMMENT ON FUNCTION tasklane.release_task_at(text, text, text, text) IS
$$SQL API and sql/lifecycle_release.sql: releases the task with identity (p_app,
p_scope_id, p_effect_key, p_usage_subject; a NULL subject matches only NULL) as
tasklane.release_task does and returns when it was first released, NULL when no task
has the identity. Locks: the task's row. SECURITY DEFINER, granted to tasklane_app.$$;

COMMENT ON FUNCTION tasklane.list_unreleased_sources(text, text, text, integer) IS
$$SQL API and sql/lifecycle_unreleased.sql: the (scope_id, source_id) pairs of app p_app
that still have unreleased tasks, in byte order (COLLATE "C"), a page of at most
p_limit (1 to 100, default 100) after the pair (p_after_scope_id, p_after_source_id)
(keyset pagination; NULLs: from the start). A NULL source_id stands for tasks without
one. Takes no lock. SECURITY DEFINER, granted to tasklane_app.$$;
