#!/bin/sh
# Bundle packing against `tar -c | zstd -3` of the same 200 MB workspace.
# Usage: bench/bundle/run.sh [MB] [RUNS]   (from the repository root;
# defaults 200 and 3). Each run times both, one after the other, and
# prints wall time, peak RSS and size; then the ratios of every run and of
# the fastest times. On a shared machine compare ratios within a run.
set -eu
MB=${1:-200}
RUNS=${2:-3}
W=$(mktemp -d /tmp/agentctl-bench-bundle-XXXXXX)
trap 'rm -rf "$W"' EXIT
go build -tags netgo,osusergo -o "$W/agentctl" ./cmd/agentctl
export AGENTCTL_HOME="$W/home"
"$W/agentctl" run fixtures/agents/loop-forever.yaml -q --session-id be0c000000000001 >/dev/null || true
WS="$AGENTCTL_HOME/sessions/be0c000000000001/workspace"
# The workspace: copies of Go's own source tree (text that compresses like a
# real repository, plus its binary testdata) until it holds MB megabytes.
SRC="$(go env GOROOT)/src"
i=0
while :; do
	i=$((i + 1))
	for d in "$SRC"/*; do
		mkdir -p "$WS/copy$i"
		cp -r "$d" "$WS/copy$i/"
		[ "$(du -sm "$WS" | cut -f1)" -ge "$MB" ] && break 2
	done
done
echo "workspace: $(du -sm "$WS" | cut -f1) MB, $(find "$WS" -type f | wc -l) files"
sync
# Warm the page cache for both. (GNU tar writing to /dev/null itself does
# not read the files, hence the pipe.)
tar -cf - -C "$WS" . | cat >/dev/null

ratios=""
ref_min=""
b_min=""
for r in $(seq "$RUNS"); do
	rm -f "$W/ref.tar.zst" "$W/b.tar.zst" # neither replaces a file
	t0=$(date +%s.%N)
	/usr/bin/time -f '%M' -o "$W/tar.rss" sh -c "tar -cf - -C '$WS' . | zstd -3 -q -T1 -f -o '$W/ref.tar.zst'"
	t1=$(date +%s.%N)
	/usr/bin/time -f '%M' -o "$W/bundle.rss" "$W/agentctl" bundle be0c000000000001 -o "$W/b.tar.zst" >/dev/null
	t2=$(date +%s.%N)

	ref_s=$(echo "$t1 - $t0" | bc); b_s=$(echo "$t2 - $t1" | bc)
	ref_sz=$(stat -c %s "$W/ref.tar.zst"); b_sz=$(stat -c %s "$W/b.tar.zst")
	echo "run $r (load $(cut -d' ' -f1 /proc/loadavg)):"
	printf '  tar -c | zstd -3 -T1    %6.2f s  %8d KB peak RSS (zstd)  %10d bytes\n' "$ref_s" "$(cat "$W/tar.rss")" "$ref_sz"
	printf '  agentctl bundle         %6.2f s  %8d KB peak RSS          %10d bytes\n' "$b_s" "$(cat "$W/bundle.rss")" "$b_sz"
	ratio=$(printf '%.2f' "$(echo "$b_s / $ref_s" | bc -l)")
	printf '  time ratio bundle/tar|zstd: %s   size ratio: %.3f\n' "$ratio" "$(echo "$b_sz / $ref_sz" | bc -l)"
	ratios="$ratios $ratio"
	if [ -z "$ref_min" ] || [ "$(echo "$ref_s < $ref_min" | bc)" = 1 ]; then ref_min=$ref_s; fi
	if [ -z "$b_min" ] || [ "$(echo "$b_s < $b_min" | bc)" = 1 ]; then b_min=$b_s; fi
done
echo "time ratios of the $RUNS runs:$ratios"
printf 'fastest: tar|zstd %.2f s, bundle %.2f s, ratio %.2f\n' "$ref_min" "$b_min" "$(echo "$b_min / $ref_min" | bc -l)"
zstd -t -q "$W/b.tar.zst" && echo "bundle verified by zstd -t"
