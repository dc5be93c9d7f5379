package bundle_test

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/klauspost/compress/zstd"
)

// TestSpecProgressFiles: the progress files the recorded spec names are
// bundled under progress/, redacted, next to the usual PROGRESS.md; a
// name that leaves the workspace (.., a symlinked folder, .git) is not
// followed.
func TestSpecProgressFiles(t *testing.T) {
	home := t.TempDir()
	id := "b0b0000000000002"
	ws := filepath.Join(home, "sessions", id, "workspace")
	outside := filepath.Join(home, "outside")
	for p, body := range map[string]string{
		filepath.Join(ws, "notes", "plan.md"):        "plan uses " + secret + "\n",
		filepath.Join(ws, "feature-list.json"):       `{"done": ["a"]}`,
		filepath.Join(ws, ".env"):                    "API_TOKEN=" + secret + "\n",
		filepath.Join(ws, ".git", "config"):          "[core]\n",
		filepath.Join(outside, "x.md"):               "OUTSIDE-CONTENT\n",
		filepath.Join(home, "sessions", "escape.md"): "OUTSIDE-CONTENT\n",
	} {
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(body), 0o644)
	}
	os.Symlink(outside, filepath.Join(ws, "link-out"))
	st := recorder.Store{Root: home}
	hdr := session.Event{Kind: session.KindSessionStarted, SessionID: id, Name: "p", Workspace: ws,
		Spec: []byte(`{"name":"p","progress":["notes/plan.md","feature-list.json","../escape.md","link-out/x.md",".git/config","/etc/passwd"]}`)}
	if _, err := st.WriteSession([]session.Event{hdr, {Kind: session.KindUserMessage, Text: "go"}}, recorder.Options{NoSync: true}); err != nil {
		t.Fatal(err)
	}
	p, _ := writeBundle(t, st, id)
	f, _ := os.Open(p)
	defer f.Close()
	zr, err := zstd.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	got := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		io.Copy(&b, tr)
		if strings.HasPrefix(h.Name, "progress/") {
			got[h.Name] = b.String()
		}
	}
	if len(got) != 2 || !strings.Contains(got["progress/notes/plan.md"], "plan uses") || got["progress/feature-list.json"] != `{"done": ["a"]}` {
		t.Errorf("progress members = %v, want notes/plan.md and feature-list.json only", got)
	}
	for name, body := range got {
		if strings.Contains(body, secret) || strings.Contains(body, "OUTSIDE-CONTENT") {
			t.Errorf("%s holds %q", name, body)
		}
	}
}
