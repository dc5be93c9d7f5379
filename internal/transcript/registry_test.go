package transcript_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	_ "github.com/agentctl/agentctl/internal/otelimport" // registers otlp, as the binary does
	"github.com/agentctl/agentctl/internal/transcript"
)

// realFiles lists, for each registered format, the real files of it the
// repository holds: the third-party corpus (by folder), the OTLP
// captures of real emitters, and the files the real programs wrote for
// these tests (testdata/, see its README). A new format adds its row.
func realFiles(t *testing.T) map[string][]string {
	t.Helper()
	glob := func(patterns ...string) []string {
		var out []string
		for _, p := range patterns {
			m, err := filepath.Glob(p)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, m...)
		}
		return out
	}
	walk := func(dir string) []string {
		var out []string
		if err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
			if err == nil && !fi.IsDir() {
				out = append(out, p)
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	files := map[string][]string{
		transcript.FormatClaudeCode: append(walk(tr("claude-code")), glob(tr("atif/*/*/*.jsonl"), "testdata/claude-code/*.jsonl")...),
		transcript.FormatCodex:      append(walk(tr("codex")), glob("testdata/codex/*.jsonl")...),
		transcript.FormatSWEAgent:   walk(tr("swe-agent")),
		transcript.FormatOpenHands:  walk(tr("openhands")),
		transcript.FormatInspect:    walk(tr("inspect-ai")),
		transcript.FormatATIF:       glob(tr("atif/*/*/*.json")),
		"otlp":                      glob("../../testdata/otel/*/*/[0-9][0-9][0-9]-*", "../collect/testdata/otlp-proto-example-*.json"),
		"opencode":                  glob("testdata/opencode/*.db"),
		transcript.FormatGeminiCLI:  walk("testdata/gemini-cli"),
		transcript.FormatCopilot:    glob("testdata/copilot/session-state/*/events.jsonl"),
		transcript.FormatAmp:        glob("testdata/amp/threads/T-*.json"),
		transcript.FormatCursor:     walk("testdata/cursor"),
	}
	return files
}

// notAnyFormat are real files of no format import reads: agentctl's own
// session logs, documentation, Go source.
func notAnyFormat(t *testing.T) []string {
	m, err := filepath.Glob("../../testdata/otel/*/*/model-server.jsonl")
	if err != nil || len(m) == 0 {
		t.Fatalf("no session logs beside the captures (%v)", err)
	}
	return append(m[:3], "../../README.md", "registry.go", "../otelsession/testdata/openinference.jsonl")
}

// TestSignaturesClaimOnlyTheirOwn runs every registered format's signature
// over every format's real files: a file is claimed by its own format and
// by no other, so `import auto` never guesses (on main, any "sessionId"
// made a file Claude Code's, and an OTLP capture or an opencode database
// could not be told at all). A file of no format is claimed by none.
func TestSignaturesClaimOnlyTheirOwn(t *testing.T) {
	files := realFiles(t)
	formats := transcript.Formats()
	for _, f := range formats {
		if len(files[f.Name]) == 0 {
			t.Errorf("format %s is registered but has no real test files here: add them to realFiles", f.Name)
		}
	}
	check := func(t *testing.T, p, want string) {
		h, err := transcript.ReadHead(p)
		if err != nil {
			t.Fatal(err)
		}
		var claimed []string
		for _, f := range formats {
			if f.Detect(h) {
				claimed = append(claimed, f.Name)
			}
		}
		switch {
		case want == "" && len(claimed) > 0:
			t.Errorf("claimed by %v; a file of no format must be claimed by none", claimed)
		case want != "" && !slices.Equal(claimed, []string{want}):
			t.Errorf("claimed by %v; want exactly [%s]", claimed, want)
		}
		got, err := transcript.Detect(p)
		switch {
		case want == "" && (err == nil || !strings.Contains(err.Error(), "cannot tell the format of "+p)):
			t.Errorf("Detect = %q, %v; want cannot tell", got, err)
		case want != "" && (err != nil || got != want):
			t.Errorf("Detect = %q, %v; want %s", got, err, want)
		}
	}
	for name, ps := range files {
		for _, p := range ps {
			t.Run(name+"/"+filepath.Base(p), func(t *testing.T) { check(t, p, name) })
		}
	}
	for _, p := range notAnyFormat(t) {
		t.Run("none/"+filepath.Base(p), func(t *testing.T) { check(t, p, "") })
	}
}

// TestDetectNamesEveryFormat: a file no signature claims is refused with
// every registered format named, otlp included.
func TestDetectNamesEveryFormat(t *testing.T) {
	p := filepath.Join(t.TempDir(), "notes.jsonl")
	// A "sessionId" is not enough to be Claude Code's.
	if err := os.WriteFile(p, []byte(`{"sessionId":"s1","type":"user","content":"hi"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := transcript.Detect(p)
	if err == nil {
		t.Fatal("Detect claimed a file with only a sessionId")
	}
	for _, name := range append(transcript.Names(), "otlp") {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("the error does not name %s: %v", name, err)
		}
	}
	if _, err := transcript.Import(transcript.FormatAuto, p); err == nil {
		t.Error("Import auto imported a file no format claims")
	}
}

// TestDetectFirstLineLongerThanHead: a transcript whose first line is
// longer than the head Detect reads (a pasted prompt, long instructions)
// is still told by the keys before the cut. Derived from the real Claude
// Code and Codex files: the first line's prompt or instructions grown to
// 80 KiB.
func TestDetectFirstLineLongerThanHead(t *testing.T) {
	long := strings.Repeat("a pasted line of text. ", 80<<10/23)
	for _, tt := range []struct {
		format, glob string
		// at is where, in the first line, the long text goes (the line's
		// own keys and their order are kept).
		at string
	}{
		{transcript.FormatClaudeCode, "testdata/claude-code/*.jsonl", `"content":"`},
		{transcript.FormatCodex, "testdata/codex/*.jsonl", `"base_instructions":{"text":"`},
	} {
		t.Run(tt.format, func(t *testing.T) {
			files, _ := filepath.Glob(tt.glob)
			if len(files) == 0 {
				t.Fatalf("no %s", tt.glob)
			}
			b, err := os.ReadFile(files[0])
			if err != nil {
				t.Fatal(err)
			}
			first, rest, _ := strings.Cut(string(b), "\n")
			if !strings.Contains(first, tt.at) {
				t.Fatalf("the first line has no %s", tt.at)
			}
			grown := strings.Replace(first, tt.at, tt.at+long, 1)
			if !json.Valid([]byte(grown)) || len(grown) <= transcript.HeadBytes {
				t.Fatalf("the grown line is %d bytes, valid %v; want valid JSON longer than the head", len(grown), json.Valid([]byte(grown)))
			}
			p := filepath.Join(t.TempDir(), filepath.Base(files[0]))
			if err := os.WriteFile(p, []byte(grown+"\n"+rest), 0o644); err != nil {
				t.Fatal(err)
			}
			if got, err := transcript.Detect(p); err != nil || got != tt.format {
				t.Fatalf("Detect = %q, %v; want %s", got, err, tt.format)
			}
			if _, err := transcript.Import(transcript.FormatAuto, p); err != nil {
				t.Fatal(err)
			}
		})
	}
}
