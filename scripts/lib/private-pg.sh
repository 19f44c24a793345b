# Sourced (not run) by scripts that need a throwaway PostgreSQL: scripts/fuzz-api.sh and
# scripts/check-helm.sh. Starts a private cluster with the initdb/pg_ctl found on the
# machine (PATH, else the newest /usr/lib/postgresql/*/bin), as the tests do, on a free
# loopback port, with trust authentication and fsync off.
#
#   start_private_cluster   sets PRIVATE_PG (its directory), PG_BIN and SERVER_URL
#                           (postgres://postgres@127.0.0.1:PORT/postgres); returns non-zero
#                           when it cannot start one
#   stop_private_cluster    stops it (immediate) and removes its directory; a no-op when
#                           none was started
#   start_private_pooler    after start_private_cluster: a PgBouncer (Debian's package) in
#                           transaction mode in front of it, every database as the
#                           cluster's user, trust authentication on loopback; sets
#                           POOLER_URL (postgres://postgres@127.0.0.1:PORT/postgres);
#                           returns non-zero when it cannot start one (no pgbouncer)
#   stop_private_pooler     stops it; stop_private_cluster does too
#
# pg_ctl -w waits at most its default 60 s for the server to accept connections, so a
# start is bounded.

PRIVATE_PG=""
POOLER_PID_FILE=""

# initdb and postgres refuse root: run them as postgres (or nobody) when we are root.
as_pg_user() {
    if [[ "$(id -u)" == 0 ]]; then
        local user=postgres
        id -u postgres >/dev/null 2>&1 || user=nobody
        runuser -u "$user" -- "$@"
    else
        "$@"
    fi
}

start_private_cluster() {
    local bin port
    bin="$(dirname "$(command -v initdb 2>/dev/null || ls -d /usr/lib/postgresql/*/bin/initdb | sort -V | tail -n 1)")"
    PRIVATE_PG="$(mktemp -d /tmp/tasklane-private-pg.XXXXXX)" || return 1
    if [[ "$(id -u)" == 0 ]]; then
        chown "$(id -u postgres >/dev/null 2>&1 && echo postgres || echo nobody)" "$PRIVATE_PG" || return 1
    fi
    port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')" || return 1
    PG_BIN="$bin"
    as_pg_user "$bin/initdb" -D "$PRIVATE_PG/data" -A trust -U postgres --no-sync -E UTF8 --locale=C >/dev/null || return 1
    as_pg_user "$bin/pg_ctl" -w -t 60 -D "$PRIVATE_PG/data" -l "$PRIVATE_PG/log" \
        -o "-p $port -c listen_addresses=127.0.0.1 -c unix_socket_directories=$PRIVATE_PG -c fsync=off" start >/dev/null || return 1
    SERVER_URL="postgres://postgres@127.0.0.1:$port/postgres"
}

# The oldest settings Debian's PgBouncer 1.18 knows; `extra_float_digits` is a startup
# parameter libpq clients (psql) send, which PgBouncer otherwise refuses.
start_private_pooler() {
    local bin port tries dir="$PRIVATE_PG/pgbouncer" upstream="${SERVER_URL#*@}"
    [[ -n "$PRIVATE_PG" ]] || return 1
    bin="$(command -v pgbouncer 2>/dev/null || ls /usr/sbin/pgbouncer 2>/dev/null)" || return 1
    upstream="${upstream%%/*}"
    port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')" || return 1
    mkdir -p "$dir" || return 1
    printf '%s\n' "[databases]" "* = host=${upstream%:*} port=${upstream##*:}" "[pgbouncer]" \
        "listen_addr = 127.0.0.1" "listen_port = $port" "unix_socket_dir =" "auth_type = trust" \
        "auth_file = $dir/users.txt" "pool_mode = transaction" "max_client_conn = 2000" \
        "default_pool_size = 20" "ignore_startup_parameters = extra_float_digits" \
        "logfile = $dir/pgbouncer.log" "pidfile = $dir/pgbouncer.pid" >"$dir/pgbouncer.ini" || return 1
    echo '"postgres" ""' >"$dir/users.txt" || return 1
    if [[ "$(id -u)" == 0 ]]; then
        chown -R "$(id -u postgres >/dev/null 2>&1 && echo postgres || echo nobody)" "$dir" || return 1
    fi
    POOLER_PID_FILE="$dir/pgbouncer.pid"
    as_pg_user "$bin" -d -q "$dir/pgbouncer.ini" || return 1
    for tries in $(seq 1 150); do
        if python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 1)" 2>/dev/null; then
            POOLER_URL="postgres://postgres@127.0.0.1:$port/postgres"
            return 0
        fi
        sleep 0.2
    done
    return 1
}

stop_private_pooler() {
    if [[ -n "$POOLER_PID_FILE" && -s "$POOLER_PID_FILE" ]]; then
        kill -KILL "$(cat "$POOLER_PID_FILE")" 2>/dev/null || true
    fi
    POOLER_PID_FILE=""
}

stop_private_cluster() {
    stop_private_pooler
    if [[ -n "$PRIVATE_PG" ]]; then
        as_pg_user "$PG_BIN/pg_ctl" -D "$PRIVATE_PG/data" -m immediate stop >/dev/null 2>&1 || true
        rm -rf "$PRIVATE_PG"
        PRIVATE_PG=""
    fi
}
