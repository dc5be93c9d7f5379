package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
)

// The subagent benchmark pair: the same work (one read_file and an answer)
// done by the session itself (Direct) and handed to a subagent through the
// task tool (Added): the cost of a child harness (its spec load and
// checks, its own log with header, lease and fsync, the parent's subagent
// events). Both record durably. See bench/README.md.
func benchSubagent(b *testing.B, delegate bool) {
	model := "turns:\n  - text: reading\n    tool_calls:\n      - {name: read_file, args: {path: notes.txt}}\n  - text: \"It says hello.\"\n"
	if delegate {
		model = parentModel(`{agent: reader, prompt: "Read notes.txt."}`)
	}
	files := map[string]string{
		"parent.yaml": strings.Replace(parentSpec, "script: parent.yaml", "script: model.yaml", 1),
		"reader.yaml": readerSpec, "reader-model.yaml": readerModel, "model.yaml": model,
		"ws/notes.txt": "hello from the workspace\n",
	}
	dir := b.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	base := subagentConfig(b, filepath.Join(dir, "parent.yaml"), "")
	base.NoSync = false
	for b.Loop() {
		cfg := base
		cfg.Store = recorder.Store{Root: b.TempDir()}
		prov, err := scriptedProvider(cfg.Spec)
		if err != nil {
			b.Fatal(err)
		}
		cfg.Provider = prov
		res, err := Start(context.Background(), cfg)
		if err != nil || res.Status != session.StatusDone {
			b.Fatalf("run = %+v, %v", res, err)
		}
	}
}

func BenchmarkSubagentAdded(b *testing.B)  { benchSubagent(b, true) }
func BenchmarkSubagentDirect(b *testing.B) { benchSubagent(b, false) }
