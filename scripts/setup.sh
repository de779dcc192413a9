#!/usr/bin/env bash
# Installs everything pu needs from nothing but Node, npm and git, then builds.
# Idempotent: a second run only rebuilds what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

# node-gyp cannot download Node headers on this kind of machine; the distro ships them.
if [ -z "${npm_config_nodedir:-}" ] && [ -f /usr/include/node/node.h ]; then
  export npm_config_nodedir=/usr
fi

if ! command -v pnpm >/dev/null 2>&1; then
  echo "setup: installing pnpm@10 with npm" >&2
  if ! npm install -g pnpm@10 >/dev/null 2>&1; then
    # No write access to the global prefix: keep pnpm inside the repo instead.
    npm install --prefix .tools pnpm@10 >/dev/null
    export PATH="$PWD/.tools/node_modules/.bin:$PATH"
  fi
fi
if [ -x .tools/node_modules/.bin/pnpm ]; then export PATH="$PWD/.tools/node_modules/.bin:$PATH"; fi

pnpm install --frozen-lockfile --reporter=append-only
pnpm build
