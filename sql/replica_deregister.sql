-- A replica leaving cleanly. $1 id. Locks: its row.
DELETE FROM tasklane.replicas WHERE id = $1
