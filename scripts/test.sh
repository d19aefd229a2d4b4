#!/usr/bin/env bash
# The project's test command: what README.md gives and .ci/run runs.
# Needs only Go; staticcheck is fetched through the Go module proxy.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi
echo "== go vet"
go vet ./...
echo "== staticcheck"
go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
echo "== go test"
go test -count=1 -timeout 20m ./...   # sim/fidelity: the papers' results guarded
echo "== go test -race (core packages and the threaded engine, short)"
go test -count=1 -race -short ./internal/core/... ./internal/reliability/ ./internal/wire/ ./sdr/transfer/ ./sim/engine/
echo "== go test -race (fabrics split by racks on threads)"
go test -count=1 -race -short -run 'InParts' ./sim/ ./sim/scenario/
