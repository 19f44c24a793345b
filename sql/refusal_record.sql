-- Counts refusals for the overview, outside the refused transaction. Striped over 8
-- rows per (day, code, app) so a refusal storm does not queue on one row.
-- $1 code, $2 app, $3 how many (a batch counts its refusals of one code at once).
-- Locks: one stripe row.
INSERT INTO tasklane.refusals AS r (day, code, app, stripe, count)
VALUES ((now() AT TIME ZONE 'UTC')::date, $1, $2, floor(random() * 8)::smallint, $3)
ON CONFLICT (day, code, app, stripe) DO UPDATE SET count = r.count + $3
