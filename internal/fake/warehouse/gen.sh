#!/bin/sh
# Regenerates tcli/ from idl/tcli_min.thrift. Run from this directory (go generate does).
set -eu
command -v thrift >/dev/null || { echo "gen.sh: the thrift compiler is needed (apt-get install thrift-compiler)" >&2; exit 1; }
rm -rf tcli
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
thrift -r --gen go:package_prefix=github.com/zbrecover/zbrecover/internal/fake/warehouse/,skip_remote -out "$tmp" idl/tcli_min.thrift
mkdir tcli
cp "$tmp"/tcli/*.go tcli/
gofmt -w tcli
