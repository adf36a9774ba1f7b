#!/usr/bin/env bash
# Idempotent, pinned: redis-server from Debian's packages for the queue tests (docs/reliability.md#batch-and-queue). The
# tests start their own instance on a free loopback port without persistence; the packaged
# service is never started here (RUNLEVEL=1 keeps invoke-rc.d from starting it).
set -euo pipefail
readonly REDIS_UPSTREAM="7.0.15"
readonly REDIS_DEB="5:${REDIS_UPSTREAM}-1~deb12u*"

log() { echo "install-redis: $*" >&2; }

if command -v redis-server >/dev/null 2>&1 \
    && redis-server --version | grep -q "v=${REDIS_UPSTREAM} "; then
    exit 0
fi
log "installing redis-server ${REDIS_UPSTREAM}"
sudo=()
if [ "$(id -u)" -ne 0 ]; then
    sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive RUNLEVEL=1
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "redis-server=${REDIS_DEB}" "redis-tools=${REDIS_DEB}"
redis-server --version | grep -q "v=${REDIS_UPSTREAM} " || {
    log "redis-server is not ${REDIS_UPSTREAM}: $(redis-server --version)"
    exit 1
}
