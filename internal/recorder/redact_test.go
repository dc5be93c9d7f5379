package recorder

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/redact"
	"github.com/agentctl/agentctl/internal/session"
)

// TestAppendRedacts: the header and every event are redacted before they
// are written, in every string field, with the Redactor of Options.Redact
// asked at each Append; Append and Header return what was written; with a
// nil Redact the environment's secrets and the token formats still are.
func TestAppendRedacts(t *testing.T) {
	ghp := "gh" + "p_" + strings.Repeat("Zq7", 12)
	secret := "value-of-the-dotenv-1"
	known := []redact.Secret{}
	opts := Options{Redact: func() *redact.Redactor { return redact.New(known...) }}
	path := filepath.Join(t.TempDir(), LogFile)
	w, err := Create(path, session.Event{Kind: session.KindSessionStarted, Text: "prompt " + ghp,
		Spec: json.RawMessage(`{"prompt":"` + ghp + `"}`)}, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if h := w.Header(); strings.Contains(h.Text, ghp) || strings.Contains(string(h.Spec), ghp) || h.Seq != 1 {
		t.Errorf("Header = %+v", h)
	}
	known = append(known, redact.Secret{Name: "MY_TOKEN", Value: secret}) // learnt mid-run
	out, err := w.Append(
		session.Event{Kind: session.KindAssistantMessage, Text: "use " + secret,
			ToolCalls: []session.ToolCall{{ID: "c1", Name: "bash", Args: json.RawMessage(`{"command":"curl -H 'x: ` + secret + `'"}`)}}},
		session.Event{Kind: session.KindToolIntent, CallID: "c1", Tool: "bash", Args: json.RawMessage(`{"command":"` + ghp + `"}`)},
		session.Event{Kind: session.KindError, Error: "failed with " + secret, Attrs: json.RawMessage(`{"k":"` + secret + `"}`)},
	)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	b, _ := os.ReadFile(path)
	for _, s := range []string{ghp, secret} {
		if strings.Contains(string(b), s) {
			t.Errorf("the log holds %q", s)
		}
		for _, e := range out {
			if j, _ := session.Encode(e); strings.Contains(string(j), s) {
				t.Errorf("Append returned %s", j)
			}
		}
	}
	if !strings.Contains(string(b), "[REDACTED:MY_TOKEN]") || !strings.Contains(string(b), "[REDACTED:github_token]") {
		t.Errorf("no markers in the log:\n%s", b)
	}

	t.Setenv("SOME_API_KEY", "environment-secret-77")
	w2, _ := newLog(t, Options{})
	out, err = w2.Append(session.Event{Kind: session.KindUserMessage, Text: "environment-secret-77 and " + ghp})
	if err != nil || out[0].Text != "[REDACTED:SOME_API_KEY] and [REDACTED:github_token]" {
		t.Errorf("default redaction: %q, %v", out[0].Text, err)
	}
}
