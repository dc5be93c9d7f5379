package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/diagnose"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
)

// TestDiagnoseManyCompactions: a collected app that sends only its newest
// messages makes a compaction every turn, each recorded with no
// source_seqs. diagnose summarises them (the count, the first few
// failures, the rest counted by code) and cites at most diagnose.MaxSeqs
// seqs, so its report stays a few lines; it printed one line with an entry
// per compaction (69,999 of them on 210,000 events).
func TestDiagnoseManyCompactions(t *testing.T) {
	home := t.TempDir()
	st := recorder.Store{Root: home}
	const id = "d1a6000000003000"
	ts := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	s, err := st.Create(session.Event{TS: ts, Kind: session.KindSessionStarted, SessionID: id, Provider: "openai", Model: "gpt-4o-mini"}, recorder.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	const turns = 3000
	var evs []session.Event
	at := func() time.Time { return ts.Add(time.Duration(len(evs)+1) * time.Millisecond) }
	for turn := 1; turn <= turns; turn++ {
		if turn > 1 {
			evs = append(evs, session.Event{TS: at(), Kind: session.KindCompaction, Summary: fmt.Sprintf("Where is order %d?", turn),
				Attrs: json.RawMessage(`{"recorded_by":"otlp","kept_messages":0}`)})
		}
		evs = append(evs, session.Event{TS: at(), Kind: session.KindUserMessage, Text: fmt.Sprintf("Where is order %d?", turn)},
			session.Event{TS: at(), Kind: session.KindAssistantMessage, Text: fmt.Sprintf("Order %d shipped.", turn)},
			session.Event{TS: at(), Kind: session.KindModelCall, Provider: "openai", Model: "gpt-4o-mini", InputTokens: 40, OutputTokens: 10, FinishReason: "stop"})
	}
	if _, err := s.Append(evs...); err != nil {
		t.Fatal(err)
	}
	s.Close()
	run := func(args ...string) string {
		t.Helper()
		var out, errb strings.Builder
		if code := Main(context.Background(), append([]string{"--home", home}, args...), Streams{Out: &out, Err: &errb}); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errb.String())
		}
		return out.String()
	}
	text := run("diagnose", id)
	if len(text) > 8<<10 {
		t.Errorf("diagnose printed %d bytes for %d compactions, want a few lines:\n%.2000s", len(text), turns-1, text)
	}
	if !strings.Contains(text, "2999 compactions") || !strings.Contains(text, "more (2994 no_source_seqs)") {
		t.Errorf("the compaction finding does not summarise the 2,999 compactions:\n%.2000s", text)
	}
	var rep diagnose.Report
	if err := json.Unmarshal([]byte(run("diagnose", "--json", id)), &rep); err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Findings {
		if len(f.Seqs) > diagnose.MaxSeqs {
			t.Errorf("finding %s cites %d seqs, want at most %d", f.Kind, len(f.Seqs), diagnose.MaxSeqs)
		}
	}
}
