#!/usr/bin/env bash
# Runs a command as root through sudo, keeping the environment and the
# search path (sudo's secure_path would drop the user's toolchain) with
# root's system directories added (dpkg, for one, needs ldconfig there):
# scripts/test.sh's runner for the test programs when it is run by a user
# with sudo rather than by root.
set -euo pipefail
if [ "$(id -u)" -eq 0 ]; then
  exec "$@"
fi
exec sudo --preserve-env -- env "PATH=$PATH:/usr/local/sbin:/usr/sbin:/sbin" "$@"
