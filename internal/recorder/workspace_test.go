package recorder

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/agentctl/agentctl/internal/session"
)

func TestStoreWorkspace(t *testing.T) {
	root := t.TempDir()
	st := Store{Root: root}
	id := "00000000000000a1"
	own := filepath.Join(root, "sessions", id, "workspace")
	tests := []struct {
		name, recorded, want, got string
		foreign                   bool
	}{
		{"own folder", own, "", own, false},
		{"no workspace recorded", "", "", own, false},
		{"home moved since the run", "/ci/job-7/.agentctl/sessions/" + id + "/workspace", "", own, false},
		{"another session's folder", "/ci/.agentctl/sessions/00000000000000b2/workspace", "", "", true},
		{"a host folder", "/home/victim", "", "", true},
		{"a host folder named by the caller too", "/home/victim", "/home/victim", "/home/victim", false},
		{"in place, as the spec says", "/src/app", "/src/app/", "/src/app", false},
		{"spec names another folder", "/src/app", "/src/other", "", true},
		{"own-shaped but the spec names a folder", own, "/src/app", "", true},
		{"dot-dot tricks", own + "/../../../../../home/victim", "", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := st.Workspace(id, session.Event{Kind: session.KindSessionStarted, Workspace: tt.recorded}, tt.want)
			if tt.foreign {
				if !errors.Is(err, ErrForeignWorkspace) {
					t.Fatalf("Workspace = %q, %v; want ErrForeignWorkspace", got, err)
				}
				return
			}
			if err != nil || got != tt.got {
				t.Fatalf("Workspace = %q, %v; want %q", got, err, tt.got)
			}
		})
	}
}
