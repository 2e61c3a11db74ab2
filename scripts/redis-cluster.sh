#!/usr/bin/env bash
# A local Redis Cluster for REDIS_MODE=cluster: `up` starts 3 masters + 3 replicas
# on free loopback ports and prints the REDIS_URL; `down` stops them by PID.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .firelimit
exec npx tsx scripts/redis-cluster.ts "$@"
