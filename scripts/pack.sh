#!/usr/bin/env bash
# Packs pu's five packages into installable tarballs (pnpm pack rewrites their `workspace:*`
# dependencies on each other to the exact version).
#
#   bash scripts/pack.sh [DEST] [--no-build]
#
# DEST defaults to ./packed. Prints one tarball path per line, in install order
# (core, ipc, web, engine, cli). Then, for a working `pu` on PATH:
#
#   npm install -g DEST/*.tgz        (see docs/install.md)
set -euo pipefail
cd "$(dirname "$0")/.."

dest=""
build=1
for arg in "$@"; do
  case $arg in
    --no-build) build=0 ;;
    -*) echo "pack.sh: unknown option $arg (usage: bash scripts/pack.sh [DEST] [--no-build])" >&2; exit 2 ;;
    *) dest=$arg ;;
  esac
done
dest=${dest:-packed}
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)

packages="pu-core pu-ipc pu-web pu-engine pu-cli"
if [ "$build" = 1 ]; then
  # From clean: tsc never deletes the output of a source that was renamed or removed, and
  # turbo's cache would restore such leftovers.
  for pkg in $packages; do rm -rf "packages/$pkg/dist"; done
  pnpm build --force >&2
fi

for pkg in $packages; do
  # A dist file whose source is gone (a renamed or deleted module) ships as dead weight, or as
  # a stale module something still resolves. Only --no-build can meet one (see above).
  stale=""
  while IFS= read -r js; do
    rel=${js#packages/$pkg/dist/}
    case $rel in pu.cjs|page/*) continue ;; esac
    [ -f "packages/$pkg/src/${rel%.js}.ts" ] || stale="$stale $js"
  done < <(find "packages/$pkg/dist" -name '*.js' 2>/dev/null)
  if [ ! -d "packages/$pkg/dist" ]; then
    echo "pack.sh: packages/$pkg/dist is missing; run pnpm build (or drop --no-build)" >&2
    exit 1
  fi
  if [ -n "$stale" ]; then
    echo "pack.sh: warning: packages/$pkg/dist has files without a source (packed anyway; run without --no-build to pack a clean build):$stale" >&2
  fi
  (cd "packages/$pkg" && pnpm pack --pack-destination "$dest" >/dev/null)
  name=$(node -p 'const p = require(process.argv[1]); `${p.name.replace("@", "").replace("/", "-")}-${p.version}.tgz`' "$PWD/packages/$pkg/package.json")
  echo "$dest/$name"
done
