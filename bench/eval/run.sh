#!/bin/sh
# Eval suite throughput: a 200-scenario scripted suite (fixtures/agents/fix-typo.yaml,
# scripted model) run by `agentctl eval --parallel 2`, against the bare runs: the same
# 200 `agentctl run`s, two at a time (xargs -P2), recording and sealing as eval does.
#
#   sh bench/eval/run.sh [N]        (from the repository root; N defaults to 200)
set -eu
N=${1:-200}
root=$(pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -tags netgo,osusergo -o "$work/agentctl" ./cmd/agentctl
A="$work/agentctl"
agent="$root/fixtures/agents/fix-typo.yaml"

suite() { # suite NAME ASSERTIONS...
  name=$1; shift
  f="$work/$name.yaml"
  printf 'name: %s\nscenarios:\n' "$name" > "$f"
  i=1
  while [ $i -le "$N" ]; do
    printf '  - name: s%03d\n    agent: %s\n    assert:\n' $i "$agent" >> "$f"
    for a in "$@"; do printf '      - %s\n' "$a" >> "$f"; done
    i=$((i + 1))
  done
}
suite minimal '{status: done}'
suite full '{status: done}' '{called: edit_file}' '{not_called: bash}' '{no_loop: 3}' \
  '{budget: {max_tokens: 5000}}' '{file: {path: README.md, matches: receive}}' \
  '{command: "grep -q receive README.md"}' "{sql: \"SELECT count(*) = 2 FROM tool_calls WHERE status = 'ok'\"}"

now() { date +%s.%N; }
secs() { echo "$2 - $1" | bc -l; }

t0=$(now)
seq "$N" | xargs -P2 -I{} "$A" --home "$work/bare" run -q "$agent" > /dev/null
t1=$(now)
"$A" --home "$work/min" eval "$work/minimal.yaml" --parallel 2 -q --json-out "$work/min.json" > /dev/null
t2=$(now)
"$A" --home "$work/full" eval "$work/full.yaml" --parallel 2 -q --json-out "$work/full.json" --junit "$work/full.xml" > /dev/null
t3=$(now)

bare=$(secs "$t0" "$t1"); min=$(secs "$t1" "$t2"); full=$(secs "$t2" "$t3")
printf 'bare runs (xargs -P2 agentctl run): %4d runs in %6.2fs  %6.1f runs/s\n' "$N" "$bare" "$(echo "$N / $bare" | bc -l)"
printf 'eval, status only, --parallel 2:    %4d runs in %6.2fs  %6.1f scenarios/s  (%.2fx the bare runs)\n' "$N" "$min" "$(echo "$N / $min" | bc -l)" "$(echo "$min / $bare" | bc -l)"
printf 'eval, 8 assertions incl. sql, -P2:  %4d runs in %6.2fs  %6.1f scenarios/s  (%.2fx the bare runs)\n' "$N" "$full" "$(echo "$N / $full" | bc -l)" "$(echo "$full / $bare" | bc -l)"
grep -q '"ok": true' "$work/full.json" || { echo "the full suite did not pass" >&2; exit 1; }
