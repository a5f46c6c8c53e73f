#!/usr/bin/env bash
# Browser tests: builds the binary (static, so agents run it as the built-in
# agent) and runs web/e2e/*.test.mjs against it in Debian's Chromium.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(mktemp -d)/slipway
( cd .. && CGO_ENABLED=0 go build -o "$bin" ./cmd/slipway )
mailtest=$(dirname "$bin")/mailtest
( cd .. && go build -o "$mailtest" ./internal/mailbox/mailtest/cmd/mailtest )
MAILTEST_BIN="$mailtest" SLIPWAY_BIN="$bin" SCREENSHOTS="${SCREENSHOTS:-}" node --test --test-concurrency=1 e2e/
