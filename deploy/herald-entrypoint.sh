#!/bin/sh
# The image's entrypoint: `herald <command>` through the launcher, which gives each process its
# Node flags (src/cli/node-flags.mjs: the worker's heap limit, HERALD_WORKER_HEAP_MB, default 512;
# the young generation cap; `gc` for the all-in-one process) and then becomes that process (execve:
# PID 1 stays Herald's, and receives the container's signals). With NODE_ENV=production the
# launcher installs nothing: it only checks that node_modules is there.
set -eu
exec node src/cli/herald.mjs "$@"
