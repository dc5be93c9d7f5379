package recorder

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/agentctl/agentctl/internal/session"
)

// ErrForeignWorkspace means a session's header names a workspace that is
// neither the session's own folder nor the one the caller was told to use.
var ErrForeignWorkspace = errors.New("the log names a workspace outside the session's own folder")

// Workspace returns the workspace of session id that agentctl may read,
// archive or run tools in: want when the caller names one (a spec's
// workspace.path, a --workspace flag), or else the session's own folder,
// sessions/<id>/workspace. The header's recorded workspace must agree.
//
// A log is not signed (its CRCs catch damage, not edits), and a home may
// come from elsewhere, so the header never chooses a host folder: a header
// naming /home/victim is refused unless the caller names that folder too.
// A header naming sessions/<id>/workspace under another root (the home was
// moved, or unpacked from a CI artifact) is the session's own folder where
// the home is now.
func (s Store) Workspace(id string, hdr session.Event, want string) (string, error) {
	own, err := filepath.Abs(filepath.Join(s.SessionDir(id), WorkspaceDir))
	if err != nil {
		return "", err
	}
	target := own
	if want != "" {
		if target, err = filepath.Abs(want); err != nil {
			return "", err
		}
	}
	rec := filepath.Clean(hdr.Workspace)
	switch {
	case hdr.Workspace == "" || rec == target:
		return target, nil
	case want == "" && ownShaped(rec, id):
		return own, nil
	}
	hint := fmt.Sprintf("if %s really is its workspace, name it (agentctl resume --workspace %s, agentctl bundle --workspace %s)", rec, rec, rec)
	if want != "" {
		hint = fmt.Sprintf("the spec or flag names %s; check which folder the session worked in", target)
	}
	return "", fmt.Errorf("session %s: %w: it names %s, but agentctl acts only on %s unless told otherwise (a log edited elsewhere must not choose a host folder); %s",
		id, ErrForeignWorkspace, rec, target, hint)
}

// ownShaped reports whether p is <root>/sessions/<id>/workspace for some
// root.
func ownShaped(p, id string) bool {
	return filepath.Base(p) == WorkspaceDir && filepath.Base(filepath.Dir(p)) == id &&
		filepath.Base(filepath.Dir(filepath.Dir(p))) == "sessions"
}
