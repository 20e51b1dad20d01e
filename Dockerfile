# syntax=docker/dockerfile:1
# One image for every app (api, worker, worker-long, relay, projector, console) and the operator
# CLI: the command picks the app, as docker-compose.yml and the chart do (scripts/app-process.mjs
# is the one place that says how each is started). Built by `bash scripts/image/build.sh` with
# podman (docs/deploy.md, "Building the image"), or by any engine that reads Dockerfiles:
#
#   docker build --build-arg BUILD_ID="$(node -p 'require("./package.json").version')+$(git rev-parse --short=12 HEAD)" -t mas .
#
# Build arguments:
# - BASE_IMAGE: Debian bookworm with Node.js 24 at /usr/local/bin/node, npm, and a user 1000; the
#   official node:24-bookworm-slim by default. scripts/image/build.sh makes one from Debian's
#   packages where no registry can be reached.
# - BUILD_ID: the build id the worker polls under (Worker Versioning, docs/operations.md): the
#   package version + the commit. The build has no .git; unset, it is the version + the workflow
#   bundle's hash (scripts/bundle-workflows.mjs).
# Build secret: npm_ca (optional), a CA bundle npm trusts (--secret id=npm_ca,src=FILE).
# It runs as user 1000 on a read-only root filesystem: nothing is written but /tmp (a tmpfs or an
# emptyDir where the root is read-only).
ARG BASE_IMAGE=node:24-bookworm-slim

# The dependencies, in a layer of their own: rebuilt only when package-lock.json changes, with the
# npm cache kept between builds. The optional secret npm_ca is a CA bundle for npm (a registry
# behind a TLS-inspecting proxy, as on the project's machines): used by npm ci, never in a layer.
FROM ${BASE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm,sharing=locked \
    --mount=type=secret,id=npm_ca \
    if [ -s /run/secrets/npm_ca ]; then export NPM_CONFIG_CAFILE=/run/secrets/npm_ca; fi \
    && npm ci --no-audit --no-fund --no-update-notifier

FROM deps AS build
COPY tsconfig.json tsconfig.build.json ./
COPY scripts/bundle-workflows.mjs scripts/
COPY apps apps
COPY libs libs
COPY workflows workflows
ARG BUILD_ID=
RUN MAS_BUILD_ID="${BUILD_ID}" npm run build

# The production dependencies alone, also cached on package-lock.json: a change to the code
# rebuilds only dist.
FROM deps AS runtime-deps
RUN npm prune --omit=dev --no-audit --no-fund --no-update-notifier

FROM ${BASE_IMAGE}
ENV NODE_ENV=production
WORKDIR /app
# Owned by root and read-only to the app's user: the code cannot be changed by the process running it.
COPY --from=build /app/package.json ./
COPY --from=runtime-deps /app/node_modules node_modules
COPY --from=build /app/dist dist
USER 1000:1000
CMD ["node", "--max-semi-space-size=16", "--import", "./dist/libs/observability/src/source-maps.js", "dist/apps/api/src/main.js"]
# Last, so that a new build id does not rebuild the layers above.
ARG BUILD_ID=
LABEL org.opencontainers.image.title="managed-agent-service" \
      org.opencontainers.image.version="${BUILD_ID}"
