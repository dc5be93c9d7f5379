#!/usr/bin/env bash
# Import throughput (issue 18): `agentctl import`'s conversion of the
# largest corpus transcript (a 515 KB Codex rollout) against
# `jq -c . FILE > /dev/null` over the same file, in one run.
# Usage: bench/import/run.sh [benchtime]   (default 3s)
set -euo pipefail
cd "$(dirname "$0")/../.."
bt="${1:-3s}"
file=testdata/corpus/transcripts/codex/codemie-ai__codemie-code/rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl
bytes=$(wc -c < "$file")
out=$(go test -run '^$' -bench BenchmarkImportLargest -benchtime "$bt" ./internal/transcript/)
echo "$out" | grep Benchmark
ns=$(echo "$out" | awk '/BenchmarkImportLargest/ { for (i=1;i<=NF;i++) if ($(i+1)=="ns/op") print $i }')
n=50
start=$(date +%s%N)
for _ in $(seq $n); do jq -c . "$file" > /dev/null; done
jqns=$(( ($(date +%s%N) - start) / n ))
awk -v b="$bytes" -v ns="$ns" -v jq="$jqns" 'BEGIN {
  printf "import (parse + map, no disk): %8.1f MB/s  %8.2f ms/file\n", b/ns*1e3, ns/1e6
  printf "jq -c . > /dev/null:           %8.1f MB/s  %8.2f ms/file (process start included)\n", b/jq*1e3, jq/1e6
  printf "ratio: import is %.1fx jq\n", jq/ns
}'
