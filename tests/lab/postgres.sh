#!/usr/bin/env bash
# The lab's PostgreSQL: a team's state backend on the management network (docs/team-backend.md).
#   postgres.sh up       start it when it does not answer (initdb the first time); idempotent: a
#                        server that answers is left running, only its role's password is set again
#   postgres.sh down     stop it and remove its data (tests/lab/lab down)
#   postgres.sh status   one line: where it answers, or that it does not
# Debian's `postgresql` server (scripts/host-packages.txt; its binaries are not on PATH:
# /usr/lib/postgresql/<major>/bin), run as the `postgres` user like the package's own cluster, as a
# plain host process on the bridge's gateway address like the lab registry: every node and every
# container on the management network reaches LAB_MGMT_GATEWAY:LAB_POSTGRES_PORT, nothing else does.
# The package's main cluster never runs (scripts/setup-host.sh masks it).
#
# Data, Unix socket and log: $LAB_CACHE/postgres, removed by `down`. The role LAB_POSTGRES_USER
# logs in over TCP with a password (scram) and may create databases (each test makes its own and
# drops it); the password is in libpq's password file $LAB_POSTGRES_PASSFILE (root-only, made once,
# kept in the lab's state like its keys), which the tests and the operator containers use as
# PGPASSFILE. The superuser `postgres` logs in only over the Unix socket, as its own Unix user.
. "$(dirname "$0")/lib.sh"

PG_DIR="$LAB_CACHE/postgres"
DATA="$PG_DIR/data"
SOCK="$PG_DIR/run"
PASSFILE="$REPO_ROOT/$LAB_POSTGRES_PASSFILE"

server_bin() {  # the newest installed major's bin directory
  local found
  found=$(printf '%s\n' /usr/lib/postgresql/*/bin/postgres | sort -V | tail -n 1)
  [[ -x $found ]] || die "no PostgreSQL server on this machine; fix: bash scripts/setup-host.sh (installs postgresql, scripts/host-packages.txt)"
  dirname "$found"
}

as_postgres() { runuser -u postgres -- "$@"; }

answers() {  # answers <bin>: the server takes connections on the lab's address
  "$1/pg_isready" -q -h "$LAB_MGMT_GATEWAY" -p "$LAB_POSTGRES_PORT" -t 2
}

# The postgres user must reach its data: a cache root made by mktemp -d (CI's) is 0700. Search
# permission only (o+x: no listing) on the directories above it that lack it.
let_postgres_through() {
  local dir=$PG_DIR
  while [[ $dir != / ]]; do
    dir=$(dirname "$dir")
    if ! as_postgres test -x "$dir"; then
      log "postgres: letting the postgres user through $dir (o+x: search, no listing)"
      chmod o+x "$dir"
    fi
  done
}

password() {  # the role's password, from the password file (made here the first time)
  if [[ ! -s $PASSFILE ]]; then
    log "postgres: generating $LAB_POSTGRES_PASSFILE"
    mkdir -p "$(dirname "$PASSFILE")"
    (umask 077 && printf '%s:%s:*:%s:%s\n' "$LAB_MGMT_GATEWAY" "$LAB_POSTGRES_PORT" "$LAB_POSTGRES_USER" \
      "$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')" >"$PASSFILE")
  fi
  chmod 0600 "$PASSFILE"
  cut -d: -f5 "$PASSFILE"
}

init_cluster() {  # init_cluster <bin>
  local bin=$1
  log "postgres: initdb $DATA"
  rm -rf "$PG_DIR"
  mkdir -p "$DATA" "$SOCK"
  chown postgres: "$DATA" "$SOCK"
  chmod 0700 "$DATA" "$SOCK"
  let_postgres_through
  as_postgres "$bin/initdb" -D "$DATA" -U postgres -E UTF8 --auth-local=peer --auth-host=reject \
    >"$PG_DIR/initdb.log" 2>&1 || die "initdb failed; see $PG_DIR/initdb.log"
  printf '%s\n' "listen_addresses = '$LAB_MGMT_GATEWAY'" "port = $LAB_POSTGRES_PORT" \
    "unix_socket_directories = '$SOCK'" "password_encryption = 'scram-sha-256'" >>"$DATA/postgresql.conf"
}

# Who may log in: only the lab's role, only with its password, only from the management network or
# from this machine (whose own connections to the bridge's address come from its primary address).
# Written on every `up` (the server reads it again below), so a changed rule reaches a running lab.
write_hba() {
  printf '%s\n' "local all postgres peer" \
    "host all $LAB_POSTGRES_USER $LAB_MGMT_SUBNET scram-sha-256" \
    "host all $LAB_POSTGRES_USER samehost scram-sha-256" >"$DATA/pg_hba.conf"
}

start_server() {  # start_server <bin>
  local bin=$1 pid
  if [[ -s $DATA/postmaster.pid ]]; then
    pid=$(head -n 1 "$DATA/postmaster.pid")
    if kill -0 "$pid" 2>/dev/null; then
      log "postgres: pid $pid runs but does not answer on $LAB_MGMT_GATEWAY:$LAB_POSTGRES_PORT: stopping it"
      as_postgres "$bin/pg_ctl" -D "$DATA" -m fast -w -t 60 stop >/dev/null || kill -KILL "$pid"
    fi
  fi
  log "postgres: starting on $LAB_MGMT_GATEWAY:$LAB_POSTGRES_PORT (data $DATA, log $SOCK/log)"
  # Its own session, no descriptor of ours (a caller's flock must not live on in it).
  detached runuser -u postgres -- "$bin/postgres" -D "$DATA" >>"$SOCK/log" 2>&1 </dev/null
  for _ in $(seq 60); do
    answers "$bin" && return 0
    sleep 1
  done
  tail -n 20 "$SOCK/log" >&2
  die "PostgreSQL did not answer on $LAB_MGMT_GATEWAY:$LAB_POSTGRES_PORT within 60 s (log above)"
}

up() {
  local bin pw
  bin=$(server_bin)
  id postgres >/dev/null 2>&1 || die "no postgres user; fix: bash scripts/setup-host.sh (installs postgresql)"
  pw=$(password)
  if answers "$bin"; then
    log "postgres: answers on $LAB_MGMT_GATEWAY:$LAB_POSTGRES_PORT"
  else
    [[ -s $DATA/PG_VERSION ]] || init_cluster "$bin"
    write_hba
    start_server "$bin"
  fi
  write_hba
  # The role and its database, made once; the password set each time (the password file is the
  # lab state's, the data the cache root's: either may be new). Read from stdin, never an argument.
  as_postgres "$bin/psql" -q -X -h "$SOCK" -p "$LAB_POSTGRES_PORT" -d postgres -v ON_ERROR_STOP=1 -f - \
    >/dev/null <<SQL || die "could not set up the role $LAB_POSTGRES_USER (log: $SOCK/log)"
SELECT 'CREATE ROLE $LAB_POSTGRES_USER LOGIN CREATEDB'
  WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$LAB_POSTGRES_USER') \gexec
ALTER ROLE $LAB_POSTGRES_USER PASSWORD '$pw';
SELECT pg_reload_conf();
SELECT 'CREATE DATABASE $LAB_POSTGRES_DB OWNER $LAB_POSTGRES_USER'
  WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = '$LAB_POSTGRES_DB') \gexec
SQL
}

down() {
  local bin
  if [[ -s $DATA/postmaster.pid ]] && bin=$(server_bin 2>/dev/null); then
    log "postgres: stopping the lab's PostgreSQL"
    as_postgres "$bin/pg_ctl" -D "$DATA" -m fast -w -t 60 stop >/dev/null ||
      kill -KILL "$(head -n 1 "$DATA/postmaster.pid")" 2>/dev/null || true
  fi
  if [[ -e $PG_DIR ]]; then
    log "postgres: removing its data ($PG_DIR)"
    rm -rf "$PG_DIR"
  fi
}

case ${1:-} in
  up) up ;;
  down) down ;;
  status)
    if answers "$(server_bin)"; then
      echo "postgres  answers on $LAB_MGMT_GATEWAY:$LAB_POSTGRES_PORT (data $DATA)"
    else
      echo "postgres  does not answer on $LAB_MGMT_GATEWAY:$LAB_POSTGRES_PORT"
    fi ;;
  *) die "usage: postgres.sh up|down|status" ;;
esac
