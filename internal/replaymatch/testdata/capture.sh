#!/bin/sh
# capture.sh CLIENT...: record the real CLIENT (codex, claude-code, opencode,
# openai-agents: launchers and scripted models in fixtures/external/clients)
# through `agentctl proxy --script` four times, each from a fresh folder
# with a fresh HOME, and keep the request bodies it sent (as the proxy
# recorded them, redacted) in testdata/CLIENT/:
#
#   A-turn1.json A-turn2.json   the recording, from /tmp/agentctl-capture/CLIENT/A
#   B-turn1.json B-turn2.json   the same program and prompt from .../B
#   tool-turn2.json             from .../tool, where README.md says something else
#                               (the tool result changed)
#   prompt-turn1.json           from .../prompt, asked another question
#
# and dirs.json with the four folders. Needs agentctl on PATH, python3, and
# $AGENTCTL_NPM_AGENTS with fixtures/external/npm's lock installed.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
clients="$root/fixtures/external/clients"
prompt='What does this service do? Read README.md.'
other='What language is this service written in? Read README.md.'
for c in "$@"; do
  base=/tmp/agentctl-capture/$c
  rm -rf "$base" && mkdir -p "$base" "$here/$c"
  for run in A B tool prompt; do
    cp -r "$root/fixtures/workspaces/typo" "$base/$run"
    p=$prompt
    [ "$run" = prompt ] && p=$other
    [ "$run" = tool ] && sed -i 's/will recieve mail and forward it/rejects all mail/' "$base/$run/README.md"
    (cd "$base/$run" && agentctl --home "$base/home-$run" proxy --script "$clients/$c.yaml" --session rec -- \
      sh "$clients/$c.sh" "$base/user-$run" "$p" >"$base/$run.out" 2>"$base/$run.err") || true
    agentctl --home "$base/home-$run" show rec --json >"$base/$run.events"
    python3 - "$base" "$run" "$here/$c" <<'PY'
import json, sys
base, run, out = sys.argv[1:]
want = {"A": (1, 2), "B": (1, 2), "tool": (2,), "prompt": (1,)}[run]
bodies = open(f"{base}/home-{run}/sessions/rec/artifacts/proxy-bodies", "rb").read()
turn = 0
for line in open(f"{base}/{run}.events"):
    e = json.loads(line)
    if e["kind"] != "model_call":
        continue
    turn += 1
    ref = e["attrs"]["request_artifact"].split("#")[1]
    off, n = (int(x) for x in ref.split("+"))
    if turn in want:
        body = json.loads(bodies[off:off + n])
        with open(f"{out}/{run}-turn{turn}.json", "w") as f:
            json.dump(body, f, indent=1, ensure_ascii=False)
            f.write("\n")
PY
  done
  printf '{"A":"%s","B":"%s","tool":"%s","prompt":"%s"}\n' "$base/A" "$base/B" "$base/tool" "$base/prompt" >"$here/$c/dirs.json"
done
