#!/bin/sh
# Bundle packing against `tar -c | zstd -3` of the same 200 MB workspace.
# Usage: bench/bundle/run.sh [MB]   (from the repository root; default 200)
# Prints wall time, peak RSS and size for both, and the ratios.
set -eu
MB=${1:-200}
W=$(mktemp -d /tmp/agentctl-bench-bundle-XXXXXX)
trap 'rm -rf "$W"' EXIT
go build -o "$W/agentctl" ./cmd/agentctl
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
# warm the page cache for both
tar -cf - -C "$WS" . >/dev/null

t0=$(date +%s.%N)
/usr/bin/time -f '%M' -o "$W/tar.rss" sh -c "tar -cf - -C '$WS' . | zstd -3 -q -T1 -o '$W/ref.tar.zst'"
t1=$(date +%s.%N)
/usr/bin/time -f '%M' -o "$W/bundle.rss" "$W/agentctl" bundle be0c000000000001 -o "$W/b.tar.zst" >/dev/null
t2=$(date +%s.%N)

ref_s=$(echo "$t1 - $t0" | bc); b_s=$(echo "$t2 - $t1" | bc)
ref_sz=$(stat -c %s "$W/ref.tar.zst"); b_sz=$(stat -c %s "$W/b.tar.zst")
printf 'tar -c | zstd -3 -T1    %6.2f s  %8d KB peak RSS (zstd)  %10d bytes\n' "$ref_s" "$(cat "$W/tar.rss")" "$ref_sz"
printf 'agentctl bundle         %6.2f s  %8d KB peak RSS          %10d bytes\n' "$b_s" "$(cat "$W/bundle.rss")" "$b_sz"
printf 'time ratio bundle/tar|zstd: %.2f   size ratio: %.3f\n' "$(echo "$b_s / $ref_s" | bc -l)" "$(echo "$b_sz / $ref_sz" | bc -l)"
zstd -t -q "$W/b.tar.zst" && echo "bundle verified by zstd -t"
