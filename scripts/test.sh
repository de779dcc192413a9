#!/usr/bin/env bash
# The whole test suite: installs and builds if needed, runs every package's
# tests and the end-to-end tests, then prints one "N passed, N failed" line.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || { echo "0 passed, 1 failed"; exit 1; }
if [ -x .tools/node_modules/.bin/pnpm ]; then export PATH="$PWD/.tools/node_modules/.bin:$PATH"; fi

find . -name .vitest-report.json -not -path '*/node_modules/*' -delete
pnpm lint
lint=$?
pnpm typecheck
typecheck=$?
pnpm test
tests=$?
if [ $lint -ne 0 ] || [ $typecheck -ne 0 ] || [ $tests -ne 0 ]; then
  echo "test.sh: lint=$lint typecheck=$typecheck tests=$tests" >&2
fi
# Last, so "N passed, N failed" is the final line of the run.
node scripts/summarize-tests.mjs lint=$lint typecheck=$typecheck
summary=$?
if [ $tests -ne 0 ] || [ $summary -ne 0 ]; then exit 1; fi
