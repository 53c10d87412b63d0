#!/bin/sh
# One-shot jobs of docker-compose.yml, run in the temporalio/admin-tools image. Both are idempotent:
# they run on every `docker compose up` and change only what is missing.
#
#   setup.sh schema     before the server: the databases and their schemas (temporal-sql-tool), and the
#                       database of toolgate's audit store
#   setup.sh namespace  once the server answers: the namespace with its retention, and the search
#                       attributes toolgate's workflows set (src/shared/temporal.ts, `searchAttributes`)
set -eu

schema() {
  : "${POSTGRES_SEEDS:?set POSTGRES_SEEDS, the PostgreSQL host}"
  : "${POSTGRES_USER:?set POSTGRES_USER in deploy/postgres.env}"
  : "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD in deploy/postgres.env}"
  port="${DB_PORT:-5432}"
  # temporal-sql-tool and psql read the password from the environment: it never shows in a process list.
  SQL_PASSWORD="$POSTGRES_PASSWORD"
  PGPASSWORD="$POSTGRES_PASSWORD"
  export SQL_PASSWORD PGPASSWORD
  query() { # query DATABASE SQL: one value, unaligned
    psql --host "$POSTGRES_SEEDS" --port "$port" --username "$POSTGRES_USER" --dbname "$1" \
      --no-psqlrc --tuples-only --no-align --set ON_ERROR_STOP=1 --command "$2"
  }
  sql() {
    temporal-sql-tool --plugin postgres12 --ep "$POSTGRES_SEEDS" -p "$port" -u "$POSTGRES_USER" "$@"
  }
  ensure_database() {
    if [ "$(query postgres "SELECT 1 FROM pg_database WHERE datname = '$1'")" = 1 ]; then
      echo "schema: database $1 exists"
    else
      echo "schema: creating database $1"
      query postgres "CREATE DATABASE \"$1\"" >/dev/null
    fi
  }
  versioned=/etc/temporal/schema/postgresql/v12
  for store in "${DBNAME:-temporal}:temporal" "${VISIBILITY_DBNAME:-temporal_visibility}:visibility"; do
    database="${store%%:*}"
    directory="$versioned/${store#*:}/versioned"
    ensure_database "$database"
    # The version table only once: setup-schema would reset a live database's version to 0.0.
    if [ "$(query "$database" "SELECT to_regclass('schema_version') IS NOT NULL")" != t ]; then
      sql --db "$database" setup-schema -v 0.0
    fi
    # Applies each versioned step the database lacks, so a newer admin-tools image migrates it.
    sql --db "$database" update-schema -d "$directory"
  done
  # toolgate's audit store (TOOLGATE_AUDIT_URL) makes its own tables; it needs its database.
  ensure_database "${TOOLGATE_AUDIT_DBNAME:-toolgate_audit}"
  echo 'schema: done'
}

namespace() {
  : "${TEMPORAL_ADDRESS:?set TEMPORAL_ADDRESS, host:port of the Temporal frontend}"
  : "${TEMPORAL_NAMESPACE:?set TEMPORAL_NAMESPACE}"
  retention="${TEMPORAL_NAMESPACE_RETENTION:-720h}"
  attempts=0
  until temporal operator cluster health --address "$TEMPORAL_ADDRESS" >/dev/null 2>&1; do
    attempts=$((attempts + 1))
    if [ "$attempts" -ge 60 ]; then
      echo "namespace: the server at $TEMPORAL_ADDRESS did not become healthy" >&2
      exit 1
    fi
    sleep 2
  done
  if temporal operator namespace describe --address "$TEMPORAL_ADDRESS" -n "$TEMPORAL_NAMESPACE" >/dev/null 2>&1; then
    echo "namespace: $TEMPORAL_NAMESPACE exists; retention $retention"
    temporal operator namespace update --address "$TEMPORAL_ADDRESS" -n "$TEMPORAL_NAMESPACE" --retention "$retention"
  else
    echo "namespace: creating $TEMPORAL_NAMESPACE, retention $retention"
    temporal operator namespace create --address "$TEMPORAL_ADDRESS" -n "$TEMPORAL_NAMESPACE" --retention "$retention"
  fi
  # The registry can lag behind the namespace's creation for a few seconds: retry, then check.
  existing=''
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    if existing="$(temporal operator search-attribute list --address "$TEMPORAL_ADDRESS" -n "$TEMPORAL_NAMESPACE")"; then
      break
    fi
    sleep 2
  done
  for attribute in ToolName:Keyword Caller:Keyword SessionId:Keyword ToolCode:Keyword ApprovalState:Keyword RiskLevel:Int; do
    name="${attribute%%:*}"
    type="${attribute#*:}"
    if printf '%s\n' "$existing" | grep -qw "$name"; then
      echo "namespace: search attribute $name exists"
    else
      echo "namespace: search attribute $name ($type)"
      temporal operator search-attribute create --address "$TEMPORAL_ADDRESS" -n "$TEMPORAL_NAMESPACE" \
        --name "$name" --type "$type"
    fi
  done
  echo 'namespace: done'
}

case "${1:-}" in
  schema) schema ;;
  namespace) namespace ;;
  *)
    echo "usage: setup.sh schema|namespace" >&2
    exit 2
    ;;
esac
