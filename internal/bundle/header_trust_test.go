package bundle_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/bundle"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
)

// TestBundleIgnoresForeignWorkspace: a log edited elsewhere (a CI artifact,
// a colleague's home) whose header names a host folder does not get that
// folder archived; it is bundled only when the user names it.
func TestBundleIgnoresForeignWorkspace(t *testing.T) {
	home := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	os.MkdirAll(filepath.Join(victim, ".ssh"), 0o700)
	os.WriteFile(filepath.Join(victim, ".ssh", "id_ed25519"), []byte("PRIVATE-KEY-BYTES\n"), 0o600)
	st := recorder.Store{Root: home}
	id := "f0e1000000000001"
	hdr := session.Event{Kind: session.KindSessionStarted, SessionID: id, Name: "forged", Workspace: victim}
	if _, err := st.WriteSession([]session.Event{hdr, {Kind: session.KindSessionFinished, Status: string(session.StatusDone)}}, recorder.Options{NoSync: true}); err != nil {
		t.Fatal(err)
	}

	write := func(opts bundle.Options) ([]string, string) {
		var out, warn bytes.Buffer
		opts.Warn = &warn
		m, err := bundle.Write(context.Background(), &out, st, id, opts)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, mm := range m.Members {
			names = append(names, mm.Name)
		}
		dir := t.TempDir()
		if _, err := bundle.Extract(context.Background(), bytes.NewReader(out.Bytes()), filepath.Join(dir, "x"), bundle.ExtractOptions{}); err != nil {
			t.Fatal(err)
		}
		return names, warn.String()
	}
	names, warn := write(bundle.Options{})
	if slices.Contains(names, "workspace.tar.zst") {
		t.Errorf("the header's workspace %s was archived: members %v", victim, names)
	}
	if !strings.Contains(warn, "no workspace") || !strings.Contains(warn, victim) {
		t.Errorf("warning = %q, want one that says the workspace named by the log was not bundled", warn)
	}
	names, _ = write(bundle.Options{Workspace: victim})
	if !slices.Contains(names, "workspace.tar.zst") {
		t.Errorf("with Options.Workspace naming it, the workspace was not bundled: %v", names)
	}
}
