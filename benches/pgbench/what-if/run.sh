#!/usr/bin/env bash
# What-if runner (not part of `cargo bench`): loads ROWS queued noop tasks into a migrated
# tasklane database, then runs one claim/settle script with pgbench and prints tasks/s.
#   run.sh DATABASE_URL current_100.sql            # the current schema
#   run.sh DATABASE_URL narrow_queue_100.sql       # after narrow_queue_schema.sql
# Env: ROWS (default 150000), SECONDS_ (default 10), CLIENTS (default 4).
set -euo pipefail
url=$1 script=$2 rows=${ROWS:-150000} seconds=${SECONDS_:-10}
dir=$(dirname "$0")
psql=(psql -q -X -v ON_ERROR_STOP=1 "$url")
"${psql[@]}" -c "TRUNCATE tasklane.tasks, tasklane.task_events"
"${psql[@]}" -c "PREPARE e(text,bigint,text,text,jsonb,int,int,int) AS
    $(sed 's/--.*//' "$dir/../../../sql/load/enqueue.sql");
    EXECUTE e('noop', $rows, 'pgbench', 'k', '{}', 3, 30, 60)"
if "${psql[@]}" -Atc "SELECT to_regclass('tasklane.ready') IS NOT NULL" | grep -q t; then
    "${psql[@]}" -c "TRUNCATE tasklane.ready, tasklane.leases;
        INSERT INTO tasklane.ready (task_id, state, priority, run_at, task_type, app, scope_id, privacy)
        SELECT id, state, priority, run_at, task_type, app, scope_id, privacy FROM tasklane.tasks"
fi
"${psql[@]}" -c "VACUUM ANALYZE"
${PGBENCH:-/usr/lib/postgresql/15/bin/pgbench} -n -c "${CLIENTS:-4}" -j 2 -T "$seconds" -f "$dir/$script" "$url" | grep -E "^tps"
done=$("${psql[@]}" -Atc "SELECT count(*) FROM tasklane.tasks WHERE state = 'succeeded'")
echo "$script: $((done / seconds)) tasks/s"
