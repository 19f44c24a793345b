-- Removes a resource: its tasks become unlimited. $1 name. Locks: the row and slots.
DELETE FROM tasklane.resources WHERE name = $1
