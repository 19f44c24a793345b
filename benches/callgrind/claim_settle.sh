#!/usr/bin/env bash
# PostgreSQL instructions per task of a claim of 100 and its batch settle, counted by
# callgrind in one single-user backend (exact, unlike a wall-clock bench on a shared box).
#
#   benches/callgrind/claim_settle.sh BIN CLAIM_SQL [ENDPOINT]
#
# BIN: a tasklane binary; it migrates the database, so its commit's schema and SQL
# functions are the ones counted. CLAIM_SQL: that commit's rendered local claim
# (target/release/build/tasklane-*/out/claim_local_plain.sql after a build). ENDPOINT=1
# subscribes one webhook endpoint, so each settle also writes its notifications.
# Queues 3,000 noop tasks, then runs rounds of "claim 100 (the claim pool's generic
# plan), settle them with tasklane.complete_tasks", 2 rounds and 7 rounds, each over a
# fresh copy of the cluster, and prints (instructions(7) - instructions(2)) / 500.
# EXPERIMENT_SQL, if set, runs after the migrations (a what-if: drop an index, disable a
# trigger), never for published figures of a build. Needs valgrind and PostgreSQL 15's
# binaries; run as root (the cluster runs as postgres) or as an unprivileged user.
set -euo pipefail
bin=$(realpath "$1") claim=$(realpath "$2") endpoint=${3:-0}
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
enqueue=$(sed 's/--.*//' "$(dirname "$0")/../../sql/load_enqueue.sql")
psql -q -X -v ON_ERROR_STOP=1 "$url" \
    -c "PREPARE e(text,bigint,text,text,jsonb,int,int,int) AS $enqueue;
        EXECUTE e('noop', 3000, 'pgbench', 'k', '{}', 3, 30, 60)"
if [[ $endpoint == 1 ]]; then
    psql -q -X -v ON_ERROR_STOP=1 "$url" -c "INSERT INTO tasklane.webhook_endpoints
        (id, app, name, url, events)
        VALUES (gen_random_uuid(), 'pgbench', 'bench', 'http://127.0.0.1:9/', '{task.succeeded}')"
fi
if [[ -n ${EXPERIMENT_SQL:-} ]]; then
    psql -q -X -v ON_ERROR_STOP=1 "$url" -c "$EXPERIMENT_SQL"
fi
psql -q -X -v ON_ERROR_STOP=1 "$url" -c "VACUUM ANALYZE"
"${as_pg[@]}" "$pg/pg_ctl" -D "$work/data" -w stop >/dev/null

settle="SELECT count(*) FROM tasklane.complete_tasks(
    (SELECT array_agg(id ORDER BY id) FROM c), (SELECT array_agg(lease_token ORDER BY id) FROM c),
    array_fill('{}'::jsonb, ARRAY[100]), array_fill(NULL::int8, ARRAY[100]),
    array_fill(NULL::text, ARRAY[100]), array_fill(NULL::text, ARRAY[100]),
    array_fill('local'::text, ARRAY[100]), array_fill(NULL::text, ARRAY[100]),
    array_fill(NULL::int8, ARRAY[100]), array_fill(NULL::int8, ARRAY[100]),
    array_fill(NULL::int8, ARRAY[100]))"
count() {
    local rounds=$1
    {
        printf 'SET plan_cache_mode = force_generic_plan;\n\n'
        printf 'PREPARE claim AS %s;\n\n' "$(cat "$claim")"
        for _ in $(seq "$rounds"); do
            printf "CREATE TEMP TABLE c AS EXECUTE claim('{noop}', 'w', 100, NULL, NULL, NULL);\n\n"
            printf '%s;\n\nDROP TABLE c;\n\n' "$settle"
        done
    } > "$work/rounds.sql"
    rm -rf "$work/copy"
    cp -a "$work/data" "$work/copy"
    "${as_pg[@]}" valgrind --tool=callgrind --callgrind-out-file="$work/out" \
        "$pg/postgres" --single -j -D "$work/copy" -c fsync=off postgres \
        < "$work/rounds.sql" > "$work/single.log" 2>&1
    if [[ $(grep -c 'count = "100"' "$work/single.log") != "$rounds" ]]; then
        echo "a round did not settle 100 tasks; see the backend's output:" >&2
        tail -20 "$work/single.log" >&2
        exit 1
    fi
    sed -n 's/^summary: //p' "$work/out"
}
two=$(count 2)
seven=$(count 7)
echo "instructions per task (claim + settle): $(( (seven - two) / 500 ))"
