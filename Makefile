# zbrecover: the two set-up commands are `make demo` and `make test`.
GO        ?= go
BIN       ?= bin/zbrecover
# Every test binary runs in under 5 minutes on 2 cores (docs/performance.md); the timeout stops
# one that hangs well before CI's.
TESTFLAGS ?= -race -count=1 -timeout 10m
# The local SQL warehouse (DuckDB) needs cgo at run time and no tag; the demo tag adds the demo
# command and its tests, the duckdb tag the DuckDB side-by-side benchmark of inspect.
TAGS      ?= duckdb demo
# Flags for `make demo`, for example DEMOFLAGS='--keep --files 500'.
DEMOFLAGS ?=
# The demo binary (the demo tag: the local warehouse, DuckDB through cgo).
DEMOBIN   ?= bin/zbrecover-demo
# goreleaser, through the Go module proxy: no separate install.
GORELEASER ?= $(GO) run github.com/goreleaser/goreleaser/v2@v2.17.0

.PHONY: all build demo test lint deps docs docs-check release-snapshot release-check clean

all: build

build:
	CGO_ENABLED=0 $(GO) build -buildvcs=auto -o $(BIN) .

# The whole recovery on a generated local example, with no cloud account. The build comes
# first and says so: the first one compiles DuckDB (C++) through cgo for minutes, and go build -v
# names each package as it compiles it; later builds are cached and take seconds.
demo:
	@echo "make demo: building $(DEMOBIN) (go build -tags demo); the first build compiles the local SQL warehouse, DuckDB, through cgo and takes several minutes; packages are listed as they compile" >&2
	@$(GO) build -v -tags demo -o $(DEMOBIN) .
	@echo "make demo: built $(DEMOBIN); running $(DEMOBIN) demo $(DEMOFLAGS)" >&2
	@$(DEMOBIN) demo $(DEMOFLAGS)

# Install what the tests need (Azurite through npm, outside the repository), then run them.
deps:
	@AZURITE_MAIN="$$(bash scripts/azurite.sh)" && echo "azurite: $$AZURITE_MAIN"

test: deps
	AZURITE_MAIN="$$(bash scripts/azurite.sh)" $(GO) test -tags '$(TAGS)' $(TESTFLAGS) ./...

lint:
	@out="$$(gofmt -l $$(git ls-files '*.go'))"; if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet -tags '$(TAGS)' ./...
	CGO_ENABLED=0 $(GO) build -o /dev/null .

# The generated documentation: the command reference (docs/cli.md) and the man pages (docs/man).
docs:
	$(GO) run ./tools/gendocs -out docs

# Fails when the generated documentation is not the committed one.
docs-check: docs
	@git diff --exit-code --stat -- docs/ || { echo "make docs changed docs/: commit the result"; exit 1; }
	@test -z "$$(git ls-files --others --exclude-standard -- docs/)" || { echo "make docs added files under docs/: commit them"; git ls-files --others --exclude-standard -- docs/; exit 1; }

# Release archives for linux, darwin and windows on amd64 and arm64, with checksums, the man
# pages and the completion scripts, built locally into dist/ and not published.
release-snapshot:
	$(GORELEASER) release --snapshot --clean

# Checks .goreleaser.yaml with goreleaser itself.
release-check:
	$(GORELEASER) check

clean:
	rm -rf bin dist completions
