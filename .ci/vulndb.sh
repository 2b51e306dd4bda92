#!/usr/bin/env bash
# Builds the Go vulnerability database offline: the golang.org/x/vulndb
# module (served by the Go module proxy) carries every report as OSV JSON;
# its indexdb command lays them out as vuln.go.dev serves them. Prints the
# database directory.
set -euo pipefail
out=${VULNDB_DIR:-/tmp/tcpsig-vulndb}
v=$(cd /tmp && go list -m -json golang.org/x/vulndb@latest 2>/dev/null | sed -n 's/.*"Version": "\(.*\)".*/\1/p')
[ -n "$v" ] || exit 1
dir=$(cd /tmp && go mod download -json "golang.org/x/vulndb@$v" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
rm -rf "$out"
(cd /tmp && go run "golang.org/x/vulndb/cmd/indexdb@$v" -vulns "$dir/data/osv" -out "$out") >&2
echo "$out"
