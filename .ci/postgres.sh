#!/usr/bin/env bash
# A throw-away PostgreSQL server on 127.0.0.1 for the tests that need a shared Optuna storage.
#
#   .ci/postgres.sh start   install Debian's postgresql if missing, create (once) and start a cluster,
#                           a user and a database; print the URL on stdout (the last line)
#   .ci/postgres.sh stop    stop the server (the data stay, so `start` brings back the same database)
#   .ci/postgres.sh url     print the URL
#   .ci/postgres.sh purge   stop and delete the cluster
#
# In a shell: eval "$(.ci/postgres.sh start | tail -n 1 | sed 's/^/export AUTOMIL_TEST_POSTGRES_URL=/')"
# Settings (environment): AUTOMIL_PG_DIR (cluster directory, default /tmp/automil-postgres),
# AUTOMIL_PG_PORT (default 54329). The server runs as the `postgres` system user (PostgreSQL refuses root)
# and listens on 127.0.0.1 only; the password is a fixed test password, fine for a loopback test server.
set -euo pipefail

PG_DIR="${AUTOMIL_PG_DIR:-/tmp/automil-postgres}"
PG_PORT="${AUTOMIL_PG_PORT:-54329}"
PG_USER=automil
PG_PASSWORD=automil
PG_DB=automil_test
URL="postgresql+psycopg2://${PG_USER}:${PG_PASSWORD}@127.0.0.1:${PG_PORT}/${PG_DB}"

log() { echo "postgres.sh: $*" >&2; }

bindir() {
    local dir
    dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
    [[ -n "$dir" && -x "$dir/initdb" ]] && echo "$dir"
}

install() {
    if [[ -z "$(bindir)" ]]; then
        log "installing Debian's postgresql"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends postgresql > /dev/null
    fi
    # The Debian package creates the `postgres` user; make sure it exists even on an odd install.
    id postgres > /dev/null 2>&1 || useradd --system --home-dir /var/lib/postgresql --shell /bin/sh postgres
}

as_postgres() {
    if [[ $(id -u) -eq 0 ]]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

ctl() { as_postgres "$(bindir)/pg_ctl" -D "$PG_DIR/data" "$@"; }

running() { [[ -d "$PG_DIR/data" ]] && ctl status > /dev/null 2>&1; }

ready() { "$(bindir)/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT"; }

# A server killed with its machine session leaves postmaster.pid behind; when its pid now belongs to
# another program, pg_ctl would take the server for running. Remove such a file before starting.
clear_stale_pid() {
    local pidfile="$PG_DIR/data/postmaster.pid" pid
    [[ -f "$pidfile" ]] || return 0
    pid=$(head -n 1 "$pidfile")
    if [[ "$(cat "/proc/$pid/comm" 2>/dev/null)" != "postgres" ]]; then
        rm -f "$pidfile"
    fi
}

start() {
    install
    local bin; bin=$(bindir)
    if [[ ! -f "$PG_DIR/data/PG_VERSION" ]]; then
        log "creating a cluster in $PG_DIR"
        mkdir -p "$PG_DIR"
        [[ $(id -u) -eq 0 ]] && chown postgres: "$PG_DIR"
        as_postgres "$bin/initdb" -D "$PG_DIR/data" -U postgres --auth-local=trust --auth-host=scram-sha-256 \
            -E UTF8 --locale=C.UTF-8 > "$PG_DIR/initdb.log"
        # Enough connections for several workers plus Optuna's pools; fsync off: a test server only.
        cat >> "$PG_DIR/data/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $PG_PORT
unix_socket_directories = '$PG_DIR'
max_connections = 200
fsync = off
synchronous_commit = off
EOF
        local fresh=1
    fi
    if ! ready; then
        clear_stale_pid
        running || ctl -l "$PG_DIR/server.log" -w -t 60 start > /dev/null
    fi
    if [[ -n "${fresh:-}" ]]; then
        as_postgres "$bin/psql" -q -h "$PG_DIR" -p "$PG_PORT" -U postgres -d postgres -v ON_ERROR_STOP=1 <<EOF
CREATE ROLE $PG_USER LOGIN PASSWORD '$PG_PASSWORD' CREATEDB;
CREATE DATABASE $PG_DB OWNER $PG_USER;
EOF
    fi
    log "running on 127.0.0.1:$PG_PORT (data in $PG_DIR)"
    echo "$URL"
}

stop() {
    if running; then
        ctl -w -t 60 -m fast stop > /dev/null
        log "stopped"
    fi
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    url) echo "$URL" ;;
    purge) stop; rm -rf "$PG_DIR" ;;
    *) echo "usage: $0 start|stop|url|purge" >&2; exit 2 ;;
esac
