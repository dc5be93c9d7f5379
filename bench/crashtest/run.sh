#!/usr/bin/env bash
# Crash-matrix benchmark (issue 7): the full matrix of a ~200-event
# scenario on 2 workers, in both modes: SIGKILLed child processes (the
# reference) and in-process crashes (a panic at the same failpoints).
# Usage: bench/crashtest/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=$(mktemp -d)/agentctl
go build -tags netgo,osusergo -o "$bin" ./cmd/agentctl
work=$(mktemp -d)
cd "$work"
for mode in process in-process; do
  flag=""; [ "$mode" = in-process ] && flag="--in-process"
  "$bin" crashtest "$OLDPWD/bench/crashtest/scenario.yaml" --parallel 2 $flag --json > "$mode.json"
  jq -r --arg m "$mode" '"\($m): \(.outcomes|length) points, \(.violations) violations, \(.ms/1000) s total, \((.ms/(.outcomes|length))|floor) ms a point (baseline \(.baseline.events) events)"' "$mode.json"
done
rm -rf "$work" "$(dirname "$bin")"
