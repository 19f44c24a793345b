-- Sets one admission limit with its reservation rows (tasklane.set_limit).
-- $1 kind, $2 app (nullable: global), $3 usage_subject (nullable), $4 window_seconds
-- (nullable; rate only), $5 max. Returns the limit id.
-- Locks: the limit row, then its slot or token rows FOR UPDATE.
SELECT tasklane.set_limit($1, $2, $3, $4, $5)
