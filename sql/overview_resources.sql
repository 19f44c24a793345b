-- Resources of the admin overview: slots configured and in use.
-- No parameters. Locks: none.
SELECT r.name, r.slots,
       (SELECT count(*) FROM tasklane.resource_slots s
        WHERE s.resource = r.name AND s.task_id IS NOT NULL) AS in_use
FROM tasklane.resources r
ORDER BY r.name
