package cli_test

import (
	"encoding/json"
	"os"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
)

// forgeheader LOG JSON: rewrite the session log at LOG with JSON merged
// into its header (objects merged key by key, anything else replaced), with
// valid CRCs, as someone who edited a home handed over to us would.
func forgeHeader(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: forgeheader LOG JSON")
	}
	path := ts.MkAbs(args[0])
	evs, _, err := recorder.ReadFile(path)
	ts.Check(err)
	if len(evs) == 0 {
		ts.Fatalf("%s has no events", path)
	}
	b, err := session.Encode(evs[0])
	ts.Check(err)
	var hdr, patch map[string]any
	ts.Check(json.Unmarshal(b, &hdr))
	ts.Check(json.Unmarshal([]byte(os.Expand(args[1], ts.Getenv)), &patch))
	merge(hdr, patch)
	b, err = json.Marshal(hdr)
	ts.Check(err)
	forged, err := session.Decode(b)
	ts.Check(err)
	ts.Check(os.Remove(path))
	w, err := recorder.Create(path, forged, recorder.Options{NoSync: true})
	ts.Check(err)
	if len(evs) > 1 {
		_, err = w.Append(evs[1:]...)
		ts.Check(err)
	}
	ts.Check(w.Close())
}

func merge(dst, src map[string]any) {
	for k, v := range src {
		if sv, ok := v.(map[string]any); ok {
			if dv, ok := dst[k].(map[string]any); ok {
				merge(dv, sv)
				continue
			}
		}
		dst[k] = v
	}
}
