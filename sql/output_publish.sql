-- Publishes live output deltas on the tasklane_output channel: every running attempt
-- of a replica in one statement (one commit), each payload a JSON delta under 8000
-- bytes. $1 payloads text[]. Locks: the notification queue's, at commit.
SELECT count(pg_notify('tasklane_output', payload)) FROM unnest($1::text[]) AS payload
