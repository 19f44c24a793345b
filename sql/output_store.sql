-- Stores the text so far of running attempts, all of one replica's in one statement. A
-- row of an older attempt of the same task (its replica died) is replaced; a newer
-- one is left alone. $1 task ids uuid[], $2 attempts int[], $3 texts text[]. Locks:
-- the rows it writes.
INSERT INTO tasklane.task_output AS o (task_id, attempt, text, updated_at)
SELECT task_id, attempt, text, now()
FROM unnest($1::uuid[], $2::int[], $3::text[]) AS t (task_id, attempt, text)
ON CONFLICT (task_id) DO UPDATE
    SET attempt = excluded.attempt, text = excluded.text, updated_at = excluded.updated_at
    WHERE o.attempt <= excluded.attempt
