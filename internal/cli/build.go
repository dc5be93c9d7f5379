package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentctl/agentctl/internal/replay"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/spec"
)

// specFromArg loads a spec file, with a hint when the path is wrong.
func specFromArg(path string) (*spec.Spec, error) {
	if _, err := os.Stat(path); err != nil {
		matches, _ := filepath.Glob("fixtures/agents/*.yaml")
		hint := "; 'agentctl run' with no spec runs the embedded example agent"
		if len(matches) > 0 {
			hint = fmt.Sprintf("; try one of the fixtures, e.g. agentctl run %s", matches[0])
		}
		return nil, fmt.Errorf("spec %s: %w%s", path, err, hint)
	}
	return spec.Load(path)
}

// sessionSpec is the spec a recorded session goes on with (resume, replay
// run, replay fork): the file named by specFile or the one the session ran
// from, by replay.SpecFile's rule for the home (never the copy in the
// header; a recorded spec inside the home refused; the embedded default
// agent extracted afresh), adjusted by the command's --workspace and
// --unsandboxed flags; changes lists how it differs from the recorded spec.
func sessionSpec(f *Factory, hdr session.Event, specFile, workspace string, unsandboxed bool) (sp *spec.Spec, changes []string, err error) {
	if sp, _, err = replay.SpecFile(f.Home, hdr, specFile); err != nil {
		return nil, nil, err
	}
	if unsandboxed {
		sp.Sandbox.Unconfined = true
	}
	if workspace != "" {
		abs, err := filepath.Abs(workspace)
		if err != nil {
			return nil, nil, err
		}
		sp.Workspace.Path, sp.Workspace.From = abs, ""
	}
	return sp, spec.Changes(hdr, sp), nil
}

// warnSpecChanges says on stderr that a replay or fork runs the tools of a
// spec file that differs from the one the session recorded.
func warnSpecChanges(f *Factory, cmd, id string, sp *spec.Spec, changes []string) {
	if len(changes) > 0 {
		fmt.Fprintf(f.Err, "warning: %s %s: the spec %s differs from the one the session recorded (changed: %s); its tools and workspace are used\n",
			cmd, id, sp.Path, strings.Join(changes, ", "))
	}
}
