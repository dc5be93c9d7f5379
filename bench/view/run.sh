#!/usr/bin/env bash
# The page of a 10,000-event session (issue 21): how long headless chromium
# takes to open it, and how long `agentctl view` takes to write it.
# Usage: bench/view/run.sh [RUNS]   (default 5). Needs chromium
# (apt-get install -y chromium, or AGENTCTL_CHROMIUM=/path/to/chrome).
set -euo pipefail
cd "$(dirname "$0")/../.."
runs="${1:-5}"
out=$(mktemp)
go test -run '^$' -bench 'BenchmarkView10k' -benchtime "${runs}x" ./internal/view/ | tee "$out"
echo
awk '
/BenchmarkView10k\/write/ { for (i=1;i<=NF;i++) { if ($(i+1)=="ns/op") w=$i/1e6; if ($(i+1)=="MiB") mib=$i } }
/BenchmarkView10k\/open/  { for (i=1;i<=NF;i++) { if ($(i+1)=="ms-drawn") d=$i; if ($(i+1)=="ms-painted") p=$i; if ($(i+1)=="ms-wall") wall=$i } }
END {
  if (p == "") { print "no result: is chromium installed?"; exit 1 }
  printf "10,000-event session, %.1f MiB page\n", mib
  printf "open in chromium: drawn %.0f ms, painted %.0f ms after navigation; %.0f ms from the navigate command (goal < 2000 ms: %s)\n", d, p, wall, (wall < 2000 ? "met" : "MISSED")
  printf "agentctl view (fold, diagnose, HTML): %.0f ms\n", w
}' "$out"
rm -f "$out"
