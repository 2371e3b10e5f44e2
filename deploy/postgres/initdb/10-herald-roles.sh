#!/bin/sh
# Runs once, when the postgres service initialises an empty data volume (the official image
# executes /docker-entrypoint-initdb.d/*). Creates one login role per tenant of this server:
#   herald    owns the `herald` database (Herald's tables; `herald migrate` fills it)
#   temporal  may create databases (temporal-schema creates and owns temporal and
#             temporal_visibility)
# Neither is a superuser. Passwords come from HERALD_DB_PASSWORD and TEMPORAL_DB_PASSWORD;
# changing them later needs ALTER ROLE (this script does not run again).
set -eu

: "${HERALD_DB_PASSWORD:?HERALD_DB_PASSWORD is required}"
: "${TEMPORAL_DB_PASSWORD:?TEMPORAL_DB_PASSWORD is required}"

psql --set ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
  --set herald_password="$HERALD_DB_PASSWORD" \
  --set temporal_password="$TEMPORAL_DB_PASSWORD" <<'SQL'
CREATE ROLE herald LOGIN PASSWORD :'herald_password';
CREATE DATABASE herald OWNER herald;
REVOKE ALL ON DATABASE herald FROM PUBLIC;
CREATE ROLE temporal LOGIN CREATEDB PASSWORD :'temporal_password';
SQL
