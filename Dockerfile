# syntax=docker/dockerfile:1
# Build: compile TypeScript with the dev toolchain.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

# Runtime: production dependencies and compiled output only, as a non-root user.
FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund --ignore-scripts && npm cache clean --force
COPY --from=build /app/dist ./dist
# The file token store's default directory, writable by the runtime user (a
# single-instance trial; production uses TOKEN_STORE=firestore).
RUN mkdir -p .firelimit && chown node:node .firelimit
USER node
# Cloud Run sets PORT; the service listens on [::]:$PORT (IPv6 and IPv4 on one socket).
EXPOSE 8080
CMD ["node", "dist/src/server.js"]
