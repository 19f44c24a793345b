#!/usr/bin/env bash
# PostgreSQL instructions per task of a claim of 100 and its batch settle, counted by
# callgrind in one single-user backend (exact, unlike a wall-clock bench on a shared box).
#
#   benches/callgrind/claim_settle.sh BIN CLAIM_SQL [ENDPOINT [DELIVER]]
#
# BIN: a tasklane binary; it migrates the database, so its commit's schema and SQL
# functions are the ones counted. CLAIM_SQL: that commit's rendered local claim
# (target/release/build/tasklane-*/out/claim_local_plain.sql after a build). ENDPOINT=1
# subscribes one webhook endpoint, so each settle also writes its notifications.
# DELIVER=1 (with ENDPOINT=1) also runs, after each settle, the deliverer's round for
# those 100 notifications: its claim, the tasks' views, their attempt summaries and the
# settle of 100 deliveries, each statement from sql/ with its parameters as PL/pgSQL
# variables (cached plans, as the replica's prepared statements): the difference to
# ENDPOINT=1 alone is the database's cost of a delivery. SQL_DIR: the sql/ directory of
# BIN's commit, for the deliverer's statements (default: this checkout's). BACKLOG=n
# (DELIVER=1; at most 13, the queued tasks' bound) leaves n rounds of notifications
# pending first (below). HANDOFF=1 (with DELIVER=1) counts the hand-off instead (V31):
# the settle (tasklane.complete_tasks_claiming) claims its notifications, and the
# deliverer's round is the targets, the views, the summaries and the settle of the
# deliveries, with no claim. The settle's answer goes through a temporary table the
# round reads (the replica keeps it in memory): its writes are counted too, so the
# hand-off's figure is, if anything, high.
# Queues 3,000 noop tasks and runs 10 rounds (below) as a history, then VACUUM ANALYZE;
# then counts rounds of "claim 100 (the claim pool's generic plan), settle them with
# the group commit's function" (tasklane.complete_tasks_claiming claiming nothing: BIN's
# schema must have it), 2 rounds and 7 rounds, each over a
# fresh copy of the cluster, and prints (instructions(7) - instructions(2)) / 500.
# EXPERIMENT_SQL, if set, runs after the migrations (a what-if: drop an index, disable a
# trigger), never for published figures of a build. Needs valgrind and PostgreSQL 15's
# binaries; run as root (the cluster runs as postgres) or as an unprivileged user.
# CALLGRIND_OUT=FILE keeps the 7 rounds' callgrind output there and the 2 rounds' in
# FILE.2, for callgrind_annotate (where the instructions go, by function: subtract).
set -euo pipefail
bin=$(realpath "$1") claim=$(realpath "$2") endpoint=${3:-0} deliver=${4:-0}
backlog=${BACKLOG:-0} handoff=${HANDOFF:-0}
if [[ $handoff == 1 && $deliver != 1 ]]; then
    echo "HANDOFF=1 needs DELIVER=1" >&2
    exit 2
fi
here=$(dirname "$(realpath "$0")")/../../sql
sql=${SQL_DIR:-$here}
# 3,000 queued tasks: 10 rounds of history, the backlog's, then 2 and 7 counted rounds
# over copies of one database.
if (( 10 + backlog + 7 > 30 )); then
    echo "BACKLOG=$backlog: at most 13 rounds (3,000 queued tasks)" >&2
    exit 2
fi
pg=/usr/lib/postgresql/15/bin
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
as_pg=()
if [[ $(id -u) == 0 ]]; then
    chown postgres "$work"
    as_pg=(runuser -u postgres --)
fi
"${as_pg[@]}" "$pg/initdb" -D "$work/data" -A trust -U postgres >/dev/null
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"${as_pg[@]}" "$pg/pg_ctl" -D "$work/data" -l "$work/log" -w \
    -o "-p $port -k $work -c listen_addresses=127.0.0.1 -c fsync=off" start >/dev/null
url="postgres://postgres@127.0.0.1:$port/postgres"
"$bin" migrate --database-url "$url" >/dev/null 2>&1
enqueue=$(sed 's/--.*//' "$here/load/enqueue.sql")
psql -q -X -v ON_ERROR_STOP=1 "$url" \
    -c "PREPARE e(text,bigint,text,text,jsonb,int,int,int) AS $enqueue;
        EXECUTE e('noop', 3000, 'pgbench', 'k', '{}', 3, 30, 60)"
if [[ $endpoint == 1 ]]; then
    psql -q -X -v ON_ERROR_STOP=1 "$url" -c "INSERT INTO tasklane.webhook_endpoints
        (id, app, name, url, events)
        VALUES (gen_random_uuid(), 'pgbench', 'bench', 'http://127.0.0.1:9/', '{task.succeeded}')"
fi
if [[ $deliver == 1 ]]; then
    # The deliverer's statements, comments stripped, $n renamed to the function's
    # variables.
    strip() { sed 's/--.*//' "$sql/$1" | sed "$2"; }
    claim_webhooks=$(strip webhook_claim.sql 's/\$1/v_limit/; s/\$2/v_limit/; s/\$3/v_claim_seconds/; s/\$4/v_endpoints/; s/\$5/v_allowances/; s/\$6/NULL::timestamptz/')
    views=$(strip webhook_tasks.sql 's/\$1::uuid\[\]/v_tasks/')
    summaries=$(strip attempt_summaries.sql 's/\$1::uuid\[\]/v_tasks/')
    targets="SELECT 1"
    if [[ $handoff == 1 ]]; then
        targets=$(strip webhook_targets.sql 's/\$1::uuid\[\]/v_endpoints/')
    fi
    settle_many=$(strip webhook_settle_many.sql 's/\$1::uuid\[\]/v_ids/; s/\$2::uuid\[\]/v_tokens/; s/\$3::text\[\]/v_states/; s/\$4::float8\[\]/v_delays/; s/\$5::int4\[\]/v_statuses/; s/\$6::text\[\]/v_errors/')
    psql -q -X -v ON_ERROR_STOP=1 "$url" <<SQL
CREATE FUNCTION public.deliver_round() RETURNS bigint LANGUAGE plpgsql AS \$f\$
DECLARE
    v_ids uuid[]; v_tokens uuid[]; v_tasks uuid[]; v_states text[]; v_delays float8[];
    v_statuses int4[]; v_errors text[]; v_settled bigint;
    v_limit int8 := 100; v_claim_seconds float8 := 60;
    v_endpoints uuid[] := '{}'; v_allowances int8[] := '{}';
BEGIN
    IF $handoff = 1 THEN
        SELECT array_agg(h.delivery_id ORDER BY h.delivery_id),
               array_agg(h.claim_token ORDER BY h.delivery_id), array_agg(h.id),
               array_agg('delivered'::text), array_agg(0::float8), array_agg(204),
               array_agg(NULL::text), array_agg(DISTINCT h.endpoint_id)
        INTO v_ids, v_tokens, v_tasks, v_states, v_delays, v_statuses, v_errors, v_endpoints
        FROM pg_temp.h WHERE h.delivery_id IS NOT NULL;
        PERFORM count(*) FROM ($targets) t;
    ELSE
        SELECT array_agg(c.id ORDER BY c.id), array_agg(c.claim_token ORDER BY c.id),
               array_agg(c.task_id), array_agg('delivered'::text), array_agg(0::float8),
               array_agg(204), array_agg(NULL::text)
        INTO v_ids, v_tokens, v_tasks, v_states, v_delays, v_statuses, v_errors
        FROM ($claim_webhooks) c WHERE c.id IS NOT NULL;
    END IF;
    PERFORM count(*) FROM ($views) v;
    PERFORM count(*) FROM ($summaries) s;
    WITH s AS ($settle_many) SELECT count(*) INTO v_settled FROM s;
    RETURN v_settled;
END
\$f\$;
SQL
fi
if [[ -n ${EXPERIMENT_SQL:-} ]]; then
    psql -q -X -v ON_ERROR_STOP=1 "$url" -c "$EXPERIMENT_SQL"
fi
arrays="(SELECT array_agg(id ORDER BY id) FROM c), (SELECT array_agg(lease_token ORDER BY id) FROM c),
    array_fill('{}'::jsonb, ARRAY[100]), array_fill(NULL::int8, ARRAY[100]),
    array_fill(NULL::text, ARRAY[100]), array_fill(NULL::text, ARRAY[100]),
    array_fill('local'::text, ARRAY[100]), array_fill(NULL::text, ARRAY[100]),
    array_fill(NULL::int8, ARRAY[100]), array_fill(NULL::int8, ARRAY[100]),
    array_fill(NULL::int8, ARRAY[100])"
if [[ $(psql -X -At "$url" -c "SELECT count(*) > 0 FROM pg_proc
        WHERE proname = 'complete_tasks_claiming' AND pronamespace = 'tasklane'::regnamespace") != t ]]; then
    echo "$0: BIN's schema has no tasklane.complete_tasks_claiming (the group commit's function)" >&2
    exit 1
fi
# Since V36 the current overload also takes the response models and system fingerprints
# (the 14-argument one stays for the previous release): count the one BIN calls.
if [[ $(psql -X -At "$url" -c "SELECT count(*) > 0 FROM pg_proc
        WHERE proname = 'complete_tasks_claiming' AND pronamespace = 'tasklane'::regnamespace
          AND pronargs = 16") == t ]]; then
    arrays="$arrays, array_fill(NULL::text, ARRAY[100]), array_fill(NULL::text, ARRAY[100])"
fi
settle_plain="SELECT count(*) FROM tasklane.complete_tasks_claiming($arrays, NULL, 0, '{}')
    WHERE delivery_id IS NULL"
# One claim token per settle, as the replica draws one; the answer is kept for the round
# (the claim token beside it: the function does not return what it was given).
settle_handoff="INSERT INTO pg_temp.h SELECT s.*, t.token
    FROM (SELECT gen_random_uuid() AS token) t,
         LATERAL tasklane.complete_tasks_claiming($arrays, t.token, 60, '{}') s;

SELECT count(*) FROM pg_temp.h WHERE delivery_id IS NULL"
# Rounds of claim 100 and settle (and deliver), as SQL for psql or a single-user backend.
rounds_sql() {
    printf 'SET plan_cache_mode = force_generic_plan;\n\n'
    local settle=$settle_plain
    if [[ $handoff == 1 ]]; then
        settle=$settle_handoff
        printf 'CREATE TEMP TABLE h (id uuid, lease_token uuid, delivery_id uuid, endpoint_id uuid, created_at timestamptz, claim_token uuid);\n\n'
    fi
    printf 'PREPARE claim AS %s;\n\n' "$(cat "$claim")"
    for _ in $(seq "$1"); do
        printf "CREATE TEMP TABLE c AS EXECUTE claim('{noop}', 'w', 100, NULL, NULL, NULL);\n\n"
        printf '%s;\n\nDROP TABLE c;\n\n' "$settle"
        if [[ $deliver == 1 ]]; then
            printf 'SELECT public.deliver_round() AS delivered;\n\n'
        fi
        if [[ $handoff == 1 ]]; then
            printf 'DELETE FROM pg_temp.h;\n\n'
        fi
    done
}
# A history before the statistics, as a deployment has one: 1,000 tasks succeeded (and
# their notifications delivered), so the plans are those of tables with rows in them,
# not of empty ones.
rounds_sql 10 | psql -q -X -v ON_ERROR_STOP=1 "$url" >/dev/null
psql -q -X -v ON_ERROR_STOP=1 "$url" -c "VACUUM ANALYZE"
# BACKLOG=n (DELIVER=1): n rounds of notifications written and not delivered after the
# statistics, so each counted round delivers from a backlog, as when deliveries fall
# behind a drain.
if [[ $deliver == 1 && $backlog -gt 0 ]]; then
    deliver=0 handoff=0 rounds_sql "$backlog" | psql -q -X -v ON_ERROR_STOP=1 "$url" >/dev/null
fi
"${as_pg[@]}" "$pg/pg_ctl" -D "$work/data" -w stop >/dev/null

count() {
    local rounds=$1
    rounds_sql "$rounds" > "$work/rounds.sql"
    rm -rf "$work/copy"
    cp -a "$work/data" "$work/copy"
    "${as_pg[@]}" valgrind --tool=callgrind --callgrind-out-file="$work/out" \
        "$pg/postgres" --single -j -D "$work/copy" -c fsync=off postgres \
        < "$work/rounds.sql" > "$work/single.log" 2>&1
    if [[ $(grep -c 'count = "100"' "$work/single.log") != "$rounds" ]] ||
        [[ $deliver == 1 && $(grep -c 'delivered = "100"' "$work/single.log") != "$rounds" ]]; then
        echo "a round did not settle 100 tasks (or deliveries); see the backend's output:" >&2
        tail -20 "$work/single.log" >&2
        exit 1
    fi
    sed -n 's/^summary: //p' "$work/out"
}
two=$(count 2)
if [[ -n ${CALLGRIND_OUT:-} ]]; then
    cp "$work/out" "$CALLGRIND_OUT.2"
fi
seven=$(count 7)
if [[ -n ${CALLGRIND_OUT:-} ]]; then
    cp "$work/out" "$CALLGRIND_OUT"
fi
what="claim + settle"
[[ $deliver == 1 ]] && what="claim + settle + delivery"
[[ $handoff == 1 ]] && what="claim + settle + delivery, handed off"
echo "instructions per task ($what): $(( (seven - two) / 500 ))"
