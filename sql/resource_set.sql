-- Sets a resource's slot count (tasklane.set_resource); lowering it below what runs
-- hands out no slot until the running tasks are down to the new count.
-- $1 name, $2 slots. Locks: the resource row, its slot rows FOR UPDATE.
SELECT tasklane.set_resource($1, $2)
