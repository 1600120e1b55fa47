#!/usr/bin/env bash
# azurite.sh installs the Azurite blob emulator used by the storage/azure tests, if it is
# missing, and prints the path of its blob main.js (export it as AZURITE_MAIN).
#
# Install folder: ${ZBRECOVER_CACHE:-$HOME/.cache/zbrecover}/azurite-3.37.0 (outside the repo:
# node_modules is several hundred MB).
set -euo pipefail

version=3.37.0
cache=${ZBRECOVER_CACHE:-$HOME/.cache/zbrecover}
dir=$cache/azurite-$version
main=$dir/node_modules/azurite/dist/src/blob/main.js

if [ ! -f "$main" ]; then
	command -v npm >/dev/null || { echo "azurite.sh: npm not found; install Node.js (>= 20)" >&2; exit 1; }
	mkdir -p "$dir"
	(
		cd "$dir"
		[ -f package.json ] || npm init -y >/dev/null
		# azurite 3.37.0 declares node >= 22 but runs on node 20; the engine warning is harmless.
		npm install --no-audit --no-fund --loglevel=error azurite@$version >&2
	)
	[ -f "$main" ] || { echo "azurite.sh: install finished but $main is missing" >&2; exit 1; }
fi
echo "$main"
