#!/bin/sh
# The image's entrypoint: `herald <command>` on the image's Node, with the worker's V8 heap limit
# (HERALD_WORKER_HEAP_MB, default 512; src/dev/paths.ts nodeFlagsFor does the same outside a
# container) for the processes that run the Temporal worker.
set -eu
case "${1:-}" in
  worker | all) exec node "--max-old-space-size=${HERALD_WORKER_HEAP_MB:-512}" src/cli/main.ts "$@" ;;
  *) exec node src/cli/main.ts "$@" ;;
esac
