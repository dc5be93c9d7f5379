package spec

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"sort"

	"github.com/agentctl/agentctl/internal/session"
)

// ForSession loads the spec a recorded session goes on with (resume,
// replay run, replay fork): the file at path when the caller names one,
// else the file the session was run from (the header's spec_path).
//
// The copy of the spec inside the header is never what runs: a log is not
// signed, and a log or home handed over from elsewhere could name any
// command as a custom tool or any host folder as the workspace. Commands,
// tools and workspace come from a spec file the user has; Changes says how
// it differs from what the session recorded.
func ForSession(hdr session.Event, path string) (*Spec, error) {
	if path == "" {
		path = hdr.SpecPath
	}
	if path == "" {
		return nil, fmt.Errorf("the session records no spec file; pass --spec FILE with the spec to go on with")
	}
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("the spec the session ran from, %s, is not readable here (%v); pass --spec FILE with the spec to go on with", path, err)
	}
	return Load(path)
}

// Hash fingerprints the resolved spec as the session header records it
// (spec_hash), computed before the header is redacted.
func (s *Spec) Hash() string {
	sum := sha256.Sum256(s.JSON())
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Changes lists the top-level spec keys (budget, custom_tools, workspace, ...)
// whose values differ between the spec recorded in hdr and sp, sorted; nil
// when they are the same. The recorded hash decides whether anything
// changed: the header's copy of the spec is redacted, so a spec holding a
// secret differs from it in value but not in hash.
func Changes(hdr session.Event, sp *Spec) []string {
	if hdr.SpecHash != "" && hdr.SpecHash == sp.Hash() {
		return nil
	}
	var rec, cur map[string]json.RawMessage
	if json.Unmarshal(hdr.Spec, &rec) != nil {
		return []string{"(the recorded spec is unreadable)"}
	}
	if json.Unmarshal(sp.JSON(), &cur) != nil {
		return []string{"(the spec is unreadable)"}
	}
	var out []string
	for k, v := range cur {
		if w, ok := rec[k]; !ok || !sameJSON(v, w) {
			out = append(out, k)
		}
	}
	for k := range rec {
		if _, ok := cur[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	if len(out) == 0 && hdr.SpecHash != "" {
		out = []string{"(a value the log holds redacted)"}
	}
	return out
}

// sameJSON compares two JSON values by content, so key order and spacing
// from an older encoder do not count as a change.
func sameJSON(a, b json.RawMessage) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ca, _ := json.Marshal(x)
	cb, _ := json.Marshal(y)
	return bytes.Equal(ca, cb)
}
