#!/bin/sh
# One-shot `temporal-schema` service (temporalio/admin-tools image): creates Temporal's
# persistence and visibility databases on the stack's PostgreSQL and migrates both to the
# schema version embedded in this image's temporal-sql-tool. Runs before the server starts;
# idempotent (existing databases are kept, applied versions are skipped), so it also performs
# the schema upgrade when the Temporal images are bumped.
#
# Environment: SQL_HOST, SQL_PORT, SQL_USER, SQL_PASSWORD (read by temporal-sql-tool),
# TEMPORAL_DB, TEMPORAL_VISIBILITY_DB.
set -eu

: "${SQL_HOST:?SQL_HOST is required}"
: "${SQL_USER:?SQL_USER is required}"
: "${SQL_PASSWORD:?SQL_PASSWORD is required}"
export SQL_PLUGIN=postgres12
export SQL_PORT="${SQL_PORT:-5432}"

migrate() {
  database=$1
  schema=$2
  echo "temporal-schema: $database <- $schema"
  temporal-sql-tool --database "$database" create-database --defaultdb postgres
  # Creates the schema_version bookkeeping tables; a no-op once a version is recorded.
  temporal-sql-tool --database "$database" setup-schema --version 0.0
  temporal-sql-tool --database "$database" update-schema --schema-name "$schema"
}

migrate "${TEMPORAL_DB:-temporal}" postgresql/v12/temporal
migrate "${TEMPORAL_VISIBILITY_DB:-temporal_visibility}" postgresql/v12/visibility
echo "temporal-schema: done"
