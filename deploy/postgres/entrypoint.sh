#!/bin/sh
# First start: initdb, password auth for everyone but the local superuser, the user and database asked for.
set -eu
BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  mkdir -p "$PGDATA"
  "$BIN/initdb" -D "$PGDATA" -U postgres --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
  "$BIN/pg_ctl" -D "$PGDATA" -o "-c listen_addresses='' -p $PGPORT -k /tmp" -w start >/dev/null
  psql -h /tmp -p "$PGPORT" -U postgres -v ON_ERROR_STOP=1 -q \
    -c "CREATE USER \"$POSTGRES_USER\" WITH PASSWORD '$POSTGRES_PASSWORD'" \
    -c "CREATE DATABASE \"$POSTGRES_DB\" OWNER \"$POSTGRES_USER\""
  "$BIN/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null
fi
exec "$BIN/postgres" -D "$PGDATA" -c listen_addresses='*' -p "$PGPORT" -k /tmp
