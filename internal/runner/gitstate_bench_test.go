package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/tools"
)

// benchTurn sets up a 10,000-file workspace (100 folders of 100 small Go
// files) with the run's git state already initialised when git is true,
// and returns one turn: three write_file calls changing three files, each
// followed, with git, by the commit the runner makes after a call that
// changed files (commitWorkspace: stage, compare trees, commit only what
// changed).
func benchTurn(b *testing.B, git bool) func(i int) {
	b.Helper()
	home := b.TempDir()
	store := recorder.Store{Root: home}
	id := "bench000000000001"
	ws := filepath.Join(store.SessionDir(id), recorder.WorkspaceDir)
	for i := range 10000 {
		p := filepath.Join(ws, "d"+strconv.Itoa(i%100), "f"+strconv.Itoa(i)+".go")
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte("package d // file "+strconv.Itoa(i)+"\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	reg, err := tools.Builtins("write", []string{"write_file"})
	if err != nil {
		b.Fatal(err)
	}
	wf, _ := reg.Get("write_file")
	r := &run{cfg: Config{Store: store}, st: newState(""), id: id, ws: ws}
	ctx := context.Background()
	if git {
		sha, err := r.commitWorkspace(ctx, "initializer", 1, "")
		if err != nil {
			b.Fatal(err)
		}
		r.st.GitSHA = sha // as the first user message records it
	}
	return func(i int) {
		for k := range 3 {
			args, _ := json.Marshal(map[string]string{"path": fmt.Sprintf("d%d/f%d.go", k, k), "content": fmt.Sprintf("package d // turn %d\n", i)})
			if res := wf.Run(ctx, tools.Call{Args: args, Workspace: ws}); res.Status != "ok" {
				b.Fatalf("write_file: %+v", res)
			}
			if git {
				cs := &callState{Call: session.ToolCall{ID: "c", Name: tools.NameWriteFile, Args: args}}
				sha := r.commitCall(ctx, cs)
				err := r.gitErr
				if err != nil || sha == "" {
					b.Fatalf("commit: %q %v", sha, err)
				}
				r.st.GitSHA = sha
			}
		}
	}
}

// BenchmarkTurnCommit: one turn of three file-changing calls in a
// 10,000-file workspace, each call committed (what workspace.git costs).
func BenchmarkTurnCommit(b *testing.B) {
	turn := benchTurn(b, true)
	i := 0
	for b.Loop() {
		i++
		turn(i)
	}
}

// BenchmarkTurnNoGit: the same turn without git state.
func BenchmarkTurnNoGit(b *testing.B) {
	turn := benchTurn(b, false)
	i := 0
	for b.Loop() {
		i++
		turn(i)
	}
}
