#!/usr/bin/env bash
# Core benchmarks (issues 2 and 3), measured in one run, with the ratios the
# issues ask for. Usage: bench/core.sh [benchtime]   (default 2s)
set -euo pipefail
cd "$(dirname "$0")/.."
bt="${1:-2s}"
out=$(mktemp)
go test -run '^$' -bench 'Append|BareFsync' -benchtime "$bt" ./internal/recorder/ | tee -a "$out"
go test -run '^$' -bench 'BenchmarkProject' -benchtime 5x ./internal/session/ | tee -a "$out"
go test -run '^$' -bench 'Run1000Turns' -benchtime 1x ./internal/runner/ | tee -a "$out"
echo
awk '
/BenchmarkAppendSingle/     { for (i=1;i<=NF;i++) if ($(i+1)=="events/s") single=$i }
/BenchmarkAppendConcurrent/ { for (i=1;i<=NF;i++) if ($(i+1)=="events/s") conc=$i }
/BenchmarkBareFsyncWrite/   { for (i=1;i<=NF;i++) if ($(i+1)=="events/s") bare=$i }
/events=10000-/  { for (i=1;i<=NF;i++) if ($(i+1)=="ns/event") p10=$i }
/events=100000-/ { for (i=1;i<=NF;i++) if ($(i+1)=="ns/event") p100=$i }
/Run1000Turns/   { for (i=1;i<=NF;i++) if ($(i+1)=="µs/turn") turn=$i }
END {
  printf "durable append, one writer:        %8.0f events/s (%.2fx a bare write+fsync per event)\n", single, single/bare
  printf "durable append, 64 writers:        %8.0f events/s (%.1fx a bare write+fsync per event; aim >= 10x)\n", conc, conc/bare
  printf "projection: %.0f ns/event at 10k, %.0f ns/event at 100k (ratio %.2f; 1.0 = linear)\n", p10, p100, p100/p10
  printf "1,000-turn scripted run, recording on: %.0f µs/turn\n", turn
}' "$out"
rm -f "$out"
