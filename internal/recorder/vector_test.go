package recorder

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/session"
)

// TestFormatVector decodes the hex dump in doc.go's "Test vector" section,
// so the documented bytes and the reader cannot drift apart, and checks the
// writer still produces exactly those bytes.
func TestFormatVector(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	var raw []byte
	in := false
	for _, line := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(line, "// # Test vector") {
			in = true
			continue
		}
		if !in {
			continue
		}
		if strings.HasPrefix(line, "// #") {
			break
		}
		rest, ok := strings.CutPrefix(line, "//\t")
		if !ok || len(rest) < 10 || rest[8] != ':' {
			continue
		}
		hexPart := rest[10:min(len(rest), 10+39)]
		b, err := hex.DecodeString(strings.ReplaceAll(hexPart, " ", ""))
		if err != nil {
			t.Fatalf("doc.go hex line %q: %v", line, err)
		}
		raw = append(raw, b...)
	}
	if len(raw) == 0 {
		t.Fatal("no test vector found in doc.go")
	}
	path := filepath.Join(t.TempDir(), LogFile)
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	evs, tail, err := ReadFile(path)
	if err != nil || tail.Torn {
		t.Fatalf("ReadFile(test vector) = %v, torn %v", err, tail.Torn)
	}
	ts := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if len(evs) != 2 || evs[0].Kind != session.KindSessionStarted || evs[0].SessionID != "0123456789abcdef" || !evs[0].TS.Equal(ts) ||
		evs[1].Kind != session.KindUserMessage || evs[1].Text != "hi" || evs[1].Seq != 2 || !evs[1].TS.Equal(ts.Add(1500*time.Millisecond)) {
		t.Fatalf("test vector decodes to %+v", evs)
	}

	// The writer makes the same bytes from the same events.
	again := filepath.Join(t.TempDir(), LogFile)
	w, err := Create(again, session.Event{Kind: session.KindSessionStarted, SessionID: "0123456789abcdef", TS: ts}, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(session.Event{Kind: session.KindUserMessage, Text: "hi", TS: ts.Add(1500 * time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if got, _ := os.ReadFile(again); string(got) != string(raw) {
		t.Errorf("the writer's bytes differ from the documented vector:\n%s", hex.Dump(got))
	}
}
