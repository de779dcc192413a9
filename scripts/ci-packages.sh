#!/usr/bin/env bash
# What the end-to-end tests need from the machine beyond Node, npm and git: a real Chromium for
# `pu web`'s browser tests, OpenSSH's server as a second host, and podman (with runc, which
# copes with this machine's hybrid cgroups where crun does not) for a container as a host. Installed
# once, only in CI as root; elsewhere a test that needs a missing program says so and skips.
set -uo pipefail
if [ "${CI:-}" != "true" ] || [ "$(id -u)" != "0" ] || ! command -v apt-get >/dev/null 2>&1; then exit 0; fi
missing=()
command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium-browser ] || missing+=(chromium)
[ -x /usr/sbin/sshd ] || missing+=(openssh-server)
command -v podman >/dev/null 2>&1 || missing+=(podman)
command -v runc >/dev/null 2>&1 || [ -x /usr/sbin/runc ] || missing+=(runc)
[ ${#missing[@]} -eq 0 ] && exit 0
echo "ci-packages: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get install -y "${missing[@]}" >/dev/null 2>&1 ||
  { apt-get update >/dev/null 2>&1 && apt-get install -y "${missing[@]}" >/dev/null 2>&1; } ||
  echo "ci-packages: could not install ${missing[*]}; the tests that need them will fail" >&2
exit 0
