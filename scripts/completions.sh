#!/bin/sh
# Writes the shell completion scripts of zbrecover into completions/, for the release archives
# (.goreleaser.yaml runs it before the builds).
set -eu
rm -rf completions
mkdir completions
CGO_ENABLED=0 go build -o completions/.zbrecover .
for shell in bash zsh fish powershell; do
	./completions/.zbrecover completion "$shell" >"completions/zbrecover.$shell"
done
rm completions/.zbrecover
