# syntax=docker/dockerfile:1
# toolgate built from this repository and run as `toolgate <command>`. docker-compose.yml runs this
# image as the workers (the default command, `toolgate worker`), the approvals console, the MCP server
# over HTTP, the codec server and the orders example service.
ARG NODE_IMAGE=node:22.20.0-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
# better-sqlite3 is native: npm ci fetches a prebuilt binary, else compiles it with these.
RUN apt-get update \
  && apt-get install --yes --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build

FROM ${NODE_IMAGE}
WORKDIR /app
# The whole tree, node_modules included: the example's config and tools are TypeScript (loaded by tsx,
# a development dependency) and Temporal's packages are peer dependencies. An image of your own
# project installs the toolgate package with its peers instead (see the README).
COPY --from=build /app /app
# /app/.toolgate: state a container keeps (MCP tokens, the SQLite audit store when no
# TOOLGATE_AUDIT_URL is set); a service's own keys folder (deploy/keys/SERVICE) is mounted read-only
# inside it. No secret is in the image: env files and keys come at run time. /var/lib/orders: the
# orders example's database. Both belong to the unprivileged user, so the named volumes mounted
# there are created writable for it.
RUN ln -s /app/bin/toolgate.cjs /usr/local/bin/toolgate \
  && mkdir -p /app/.toolgate/keys /var/lib/orders \
  && chown node:node /app/.toolgate /var/lib/orders
ENV NODE_ENV=production \
  TOOLGATE_CONFIG=/app/toolgate.config.ts
# The node user (uid 1000) of the official Node image: nothing here runs as root.
USER node
ENTRYPOINT ["toolgate"]
CMD ["worker"]
