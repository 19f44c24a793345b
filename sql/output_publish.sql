-- Publishes live output deltas on the tasklane_output channel: every running attempt
-- of a replica in one statement (one commit), each payload a JSON delta under 8000
-- bytes. The commit does not wait for its WAL to reach the disk (synchronous_commit
-- off for this transaction alone): live output is not durable, and NOTIFY delivers at
-- commit, so observers hear a delta one disk flush sooner.
-- $1 payloads text[]. Locks: the notification queue's, at commit.
SELECT set_config('synchronous_commit', 'off', true),
       (SELECT count(pg_notify('tasklane_output', payload)) FROM unnest($1::text[]) AS payload)
