-- Reserves budget units for the attempt holding a lease before it calls a model
-- provider (tasklane.reserve_budget; see sql/functions/reserve_budget.sql).
-- $1 task id, $2 lease_token, $3 units (>= 0).
-- Returns outcome ('reserved', 'unlimited', 'budget_exhausted', 'lease_lost',
-- 'task_gone'), limit_id (nullable), at. Locks: the budget's limit row, if any.
SELECT outcome, limit_id, at FROM tasklane.reserve_budget($1, $2, $3)
