# One image for the four apps (api, worker, relay, projector) and the operator CLI; docker-compose.yml
# picks the app with the command. Built and run only where a Docker engine exists.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY apps apps
COPY libs libs
COPY workflows workflows
RUN npm run build && npm prune --omit=dev

FROM node:24-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules node_modules
COPY --from=build /app/dist dist
USER node
CMD ["node", "--enable-source-maps", "dist/apps/api/src/main.js"]
