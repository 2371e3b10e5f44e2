#!/bin/sh
# One-shot `temporal-setup` service (temporalio/admin-tools image): waits for the Temporal
# frontend, registers Herald's namespace and its custom search attributes, and waits until
# the server accepts queries on them, so that api and worker never start a workflow the
# server would reject. Idempotent: safe on every `docker compose up`.
#
# Environment: TEMPORAL_ADDRESS (read by the temporal CLI), TEMPORAL_NAMESPACE,
# TEMPORAL_NAMESPACE_RETENTION, HERALD_SEARCH_ATTRIBUTES ("Name=Type ...").
set -eu

: "${TEMPORAL_ADDRESS:?TEMPORAL_ADDRESS is required}"
namespace=${TEMPORAL_NAMESPACE:-default}
retention=${TEMPORAL_NAMESPACE_RETENTION:-7d}
attributes=${HERALD_SEARCH_ATTRIBUTES:-HeraldOrgId=Keyword HeraldKind=Keyword HeraldRecipientDomain=Keyword HeraldDeliveryStatus=Keyword}
attempts=${SETUP_ATTEMPTS:-60}
pause=${SETUP_PAUSE_SECONDS:-2}

log() { printf 'temporal-setup: %s\n' "$*"; }

# retry "what" command...: runs the command until it succeeds, at most $attempts times.
retry() {
  what=$1
  shift
  n=1
  until "$@" >/tmp/setup-step.log 2>&1; do
    if [ "$n" -ge "$attempts" ]; then
      log "gave up: $what"
      cat /tmp/setup-step.log >&2
      exit 1
    fi
    n=$((n + 1))
    sleep "$pause"
  done
}

log "waiting for the Temporal frontend at $TEMPORAL_ADDRESS"
retry "cluster health" temporal operator cluster health

if temporal operator namespace describe --namespace "$namespace" >/dev/null 2>&1; then
  log "namespace $namespace exists"
else
  log "creating namespace $namespace (retention $retention)"
  retry "namespace create" sh -c '
    temporal operator namespace describe --namespace "$1" ||
      temporal operator namespace create --namespace "$1" --retention "$2"
  ' sh "$namespace" "$retention"
fi

# A new namespace takes a moment to reach every frontend's namespace cache.
retry "namespace visible" temporal operator search-attribute list --namespace "$namespace"

for attribute in $attributes; do
  name=${attribute%%=*}
  type=${attribute#*=}
  if temporal operator search-attribute list --namespace "$namespace" | grep -Eq "^[[:space:]]*$name[[:space:]]"; then
    log "search attribute $name exists"
  else
    log "creating search attribute $name ($type)"
    retry "search attribute $name" temporal operator search-attribute create \
      --namespace "$namespace" --name "$name" --type "$type"
  fi
done

# The frontend validates queries and workflow starts against a cached copy of the search
# attributes; wait until that copy has them all.
for attribute in $attributes; do
  name=${attribute%%=*}
  retry "query on $name" temporal workflow list --namespace "$namespace" --limit 1 \
    --query "$name = 'herald-setup-probe'"
done

log "namespace $namespace is ready: $attributes"
