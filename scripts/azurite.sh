#!/usr/bin/env bash
# Installs the Azurite blob emulator (npm package azurite@3.37.0) outside the repository, if it
# is not there yet, and prints the path of its blob server's main.js for AZURITE_MAIN.
set -euo pipefail
version=3.37.0
dir="${ZBRECOVER_CACHE:-$HOME/.cache/zbrecover}/azurite-$version"
main="$dir/node_modules/azurite/dist/src/blob/main.js"
if [ ! -f "$main" ]; then
  command -v npm >/dev/null || { echo "azurite.sh: npm is needed to install Azurite (apt-get install nodejs npm)" >&2; exit 1; }
  mkdir -p "$dir"
  (cd "$dir" && { [ -f package.json ] || npm init -y >/dev/null; } &&
    npm install --no-audit --no-fund --loglevel=error "azurite@$version" >&2)
fi
[ -f "$main" ] || { echo "azurite.sh: $main missing after install" >&2; exit 1; }
echo "$main"
