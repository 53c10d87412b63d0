#!/bin/sh
# One-shot jobs of docker-compose.yml, run in the temporalio/admin-tools image. Both are idempotent:
# they run on every `docker compose up` and change only what is missing.
#
#   setup.sh schema     before the server: the databases and their schemas (temporal-sql-tool), and
#                       toolgate's audit store: its database, owned by the role of TOOLGATE_AUDIT_OWNER_URL
#                       (deploy/audit-owner.env), and the role of TOOLGATE_AUDIT_URL (deploy/audit.env)
#                       that the toolgate processes connect as
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
  statements() { # statements DATABASE < SQL: run quietly, stopping at the first error
    psql --host "$POSTGRES_SEEDS" --port "$port" --username "$POSTGRES_USER" --dbname "$1" \
      --no-psqlrc --quiet --set ON_ERROR_STOP=1 --file - >/dev/null
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
  # The admin-tools image's copy of the server's schema files (test/cluster/ points it at the module's own).
  versioned="${TEMPORAL_SCHEMA_DIR:-/etc/temporal/schema/postgresql/v12}"
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
    # Only the superuser the server connects as: no other role (the audit store's) may even connect.
    query postgres "REVOKE ALL ON DATABASE \"$database\" FROM PUBLIC" >/dev/null
  done
  audit_store
  echo 'schema: done'
}

# toolgate's audit store: a database owned by a role that only the one-shot `audit-schema` job logs in as
# (it creates the tables and their append-only guards: `toolgate audit init`), and the role every other
# toolgate process connects as, which may insert and read once that job has run, and nothing else: it
# can neither delete a record nor drop or disable a guard. No toolgate process holds the superuser's
# password, and only the audit-schema job holds the owner's.
audit_store() {
  : "${TOOLGATE_AUDIT_OWNER_URL:?set TOOLGATE_AUDIT_OWNER_URL in deploy/audit-owner.env}"
  : "${TOOLGATE_AUDIT_URL:?set TOOLGATE_AUDIT_URL in deploy/audit.env}"
  audit_url TOOLGATE_AUDIT_OWNER_URL "$TOOLGATE_AUDIT_OWNER_URL"
  owner="$role"
  owner_password="$password"
  owner_database="$database"
  audit_url TOOLGATE_AUDIT_URL "$TOOLGATE_AUDIT_URL"
  writer="$role"
  writer_password="$password"
  if [ "$database" != "$owner_database" ]; then
    audit_refused TOOLGATE_AUDIT_URL "database $database is not $owner_database of TOOLGATE_AUDIT_OWNER_URL"
  fi
  if [ "$writer" = "$owner" ]; then
    audit_refused TOOLGATE_AUDIT_URL "role $writer is the owner's: the toolgate processes need a role that cannot drop the guards"
  fi
  ensure_role "$owner" "$owner_password"
  ensure_role "$writer" "$writer_password"
  ensure_database "$database"
  query postgres "ALTER DATABASE \"$database\" OWNER TO \"$owner\"" >/dev/null
  query postgres "REVOKE ALL ON DATABASE \"$database\" FROM PUBLIC" >/dev/null
  query postgres "GRANT CONNECT ON DATABASE \"$database\" TO \"$writer\"" >/dev/null
  # An earlier deployment let the processes' role own the tables (or the superuser made them): the owner
  # takes them over (identity sequences, triggers and the guard function with them), and audit-schema's
  # `toolgate audit init` then leaves the writer INSERT and SELECT only.
  statements "$database" <<SQL
REASSIGN OWNED BY "$writer" TO "$owner";
ALTER ROLE "$writer" RESET ALL;
ALTER ROLE "$writer" IN DATABASE "$database" RESET ALL;
DO \$\$
DECLARE item record;
BEGIN
  -- No schema where the processes' role (or anyone) could create a table of its own for its sessions
  -- to write to instead of the guarded ones.
  FOR item IN SELECT nspname FROM pg_namespace
    WHERE nspname NOT LIKE 'pg\\_%' AND nspname <> 'information_schema' LOOP
    EXECUTE format('REVOKE CREATE ON SCHEMA %I FROM PUBLIC, %I', item.nspname, '$writer');
  END LOOP;
  FOR item IN SELECT c.oid::regclass AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND pg_get_userbyid(c.relowner) <> '$owner' LOOP
    EXECUTE format('ALTER TABLE %s OWNER TO %I', item.name, '$owner');
  END LOOP;
  FOR item IN SELECT p.oid::regprocedure AS name FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
    WHERE n.nspname = 'public' AND pg_get_userbyid(p.proowner) <> '$owner' LOOP
    EXECUTE format('ALTER FUNCTION %s OWNER TO %I', item.name, '$owner');
  END LOOP;
END
\$\$;
SQL
  echo "schema: database $database owned by $owner; $writer may connect"
}

# audit_url NAME URL: sets role, password and database from postgres://ROLE:PASSWORD@HOST:PORT/DATABASE,
# refusing what would need quoting (the names and password go into SQL and a URL unquoted).
audit_url() {
  case "$2" in
    postgres://*:*@*/*) rest="${2#postgres://}" ;;
    postgresql://*:*@*/*) rest="${2#postgresql://}" ;;
    *) audit_refused "$1" 'not postgres://ROLE:PASSWORD@HOST:PORT/DATABASE' ;;
  esac
  credentials="${rest%%@*}"
  role="${credentials%%:*}"
  password="${credentials#*:}"
  database="${rest#*@}"
  database="${database#*/}"
  database="${database%%\?*}"
  case "$role" in
    '' | [0-9]* | pg_* | *[!a-z0-9_]*) audit_refused "$1" "role \"$role\": lower-case letters, digits and _" ;;
  esac
  case "$database" in
    '' | [0-9]* | *[!a-z0-9_]*) audit_refused "$1" "database \"$database\": lower-case letters, digits and _" ;;
  esac
  case "$password" in
    '' | *[!A-Za-z0-9._~-]*) audit_refused "$1" 'password: letters, digits and . _ ~ - only (e.g. `openssl rand -hex 24`)' ;;
  esac
  if [ "$role" = "$POSTGRES_USER" ]; then
    audit_refused "$1" "role $role is the superuser of deploy/postgres.env: give the audit store roles of their own"
  fi
}

# ensure_role ROLE PASSWORD: a login role with no other power, its password set to PASSWORD.
ensure_role() {
  if [ "$(query postgres "SELECT 1 FROM pg_roles WHERE rolname = '$1'")" = 1 ]; then
    echo "schema: role $1 exists; setting its password"
    verb=ALTER
  else
    echo "schema: creating role $1"
    verb=CREATE
  fi
  # On standard input, not the command line: the password never shows in a process list.
  statements postgres <<SQL
$verb ROLE "$1" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD '$2';
SQL
}

audit_refused() { # audit_refused NAME MESSAGE
  echo "schema: $1 ($([ "$1" = TOOLGATE_AUDIT_URL ] && echo deploy/audit.env || echo deploy/audit-owner.env)): $2" >&2
  exit 1
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
