package cli_test

import (
	"encoding/json"
	"os"
	"strconv"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/rogpeppe/go-internal/testscript"
)

// forgeevent LOG SEQ JSON: rewrite the session log at LOG with JSON merged
// into the event at SEQ (objects merged key by key, anything else
// replaced), with valid CRCs: a recorded model answer or result edited by
// whoever handed the home over, which no integrity check can tell from a
// real one.
func forgeEvent(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 {
		ts.Fatalf("usage: forgeevent LOG SEQ JSON")
	}
	path := ts.MkAbs(args[0])
	seq, err := strconv.ParseInt(args[1], 10, 64)
	ts.Check(err)
	evs, _, err := recorder.ReadFile(path)
	ts.Check(err)
	found := false
	for i, e := range evs {
		if e.Seq != seq {
			continue
		}
		b, err := session.Encode(e)
		ts.Check(err)
		var ev, patch map[string]any
		ts.Check(json.Unmarshal(b, &ev))
		ts.Check(json.Unmarshal([]byte(os.Expand(args[2], ts.Getenv)), &patch))
		merge(ev, patch)
		b, err = json.Marshal(ev)
		ts.Check(err)
		evs[i], err = session.Decode(b)
		ts.Check(err)
		found = true
	}
	if !found {
		ts.Fatalf("%s has no event at seq %d", path, seq)
	}
	ts.Check(os.Remove(path))
	w, err := recorder.Create(path, evs[0], recorder.Options{NoSync: true})
	ts.Check(err)
	if len(evs) > 1 {
		_, err = w.Append(evs[1:]...)
		ts.Check(err)
	}
	ts.Check(w.Close())
}
