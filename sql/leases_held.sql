-- Which of the leases a replica streams remote workers' live output for are still
-- held: a stream whose lease was lost (its worker died, the task was re-claimed,
-- settled elsewhere or deleted) is dropped.
-- $1 ids uuid[], $2 lease_tokens uuid[]: parallel arrays. Returns the ids still held.
-- Locks: none.
SELECT t.id
FROM tasklane.tasks t
JOIN unnest($1::uuid[], $2::uuid[]) AS b (id, lease_token)
  ON t.id = b.id AND t.lease_token = b.lease_token
WHERE t.id = ANY($1::uuid[])
