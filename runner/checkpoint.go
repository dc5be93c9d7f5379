package runner

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"time"

	"github.com/agentctl/agentctl/gitsafe"
	"github.com/agentctl/agentctl/session"
)

// CheckpointsFile holds the session's checkpoints, one JSON object a line,
// in the session folder. They are derived state: resume uses the latest
// valid one to avoid folding the whole log, and a missing, truncated or
// corrupt file only makes resume fold from the start.
const CheckpointsFile = "checkpoints.jsonl"

// CheckpointFormat is the format of the checkpoints this version writes.
// A checkpoint of another format (one written before the fold moved to
// session.State had none; format 2 had no budget in force and no summary
// parts) is skipped, and resume folds the log instead: checkpoints are
// derived state, never the only copy of anything.
const CheckpointFormat = 3

// Checkpoint is the folded state of a session after event Seq: the
// session's fold and the projection the model would be sent next.
type Checkpoint struct {
	Format     int                    `json:"format"`
	Seq        int64                  `json:"seq"`
	TS         time.Time              `json:"ts"` // of event Seq, to check it still matches the log
	Projection session.ProjectorState `json:"projection"`
	State      session.State          `json:"state"`

	WorkspaceGit string `json:"workspace_git_sha,omitempty"`
	Sum          string `json:"sum,omitempty"`
}

// checkpoint captures s; the runner takes one at each turn boundary.
func (s *state) checkpoint(ws string) Checkpoint {
	return Checkpoint{Format: CheckpointFormat, Seq: s.LastSeq, TS: s.LastTS, Projection: s.projector.State(),
		State: s.State, WorkspaceGit: gitHead(ws)}
}

// restore rebuilds a state from a checkpoint.
func restore(cp Checkpoint) *state {
	return &state{State: cp.State, projector: session.RestoreProjector(cp.Projection)}
}

func (cp Checkpoint) sum() string {
	cp.Sum = ""
	b, _ := json.Marshal(cp)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// checkpointBytesPerEvent paces checkpoints: after one of B bytes, the
// next is written once B/checkpointBytesPerEvent more events are in the
// log. A checkpoint holds the whole projection tail, so writing one every
// turn of a long uncompacted session would make checkpoints.jsonl grow
// with the square of the log; paced, it stays proportional to it.
const checkpointBytesPerEvent = 1024

// writeCheckpoint appends the current state to the session's checkpoints
// when one is due. Failure to write one is not an error of the run: it is
// only an optimisation, and the log stays the state.
func (r *run) writeCheckpoint() {
	if r.st.LastSeq < r.cpDue {
		return
	}
	cp := r.st.checkpoint(r.ws)
	if r.st.GitSHA != "" {
		cp.WorkspaceGit = r.st.GitSHA // the run branch's commit, not the workspace's own HEAD
	}
	cp.Sum = cp.sum()
	b, err := json.Marshal(cp)
	if err != nil {
		return
	}
	r.cpDue = r.st.LastSeq + max(1, int64(len(b)/checkpointBytesPerEvent))
	f, err := os.OpenFile(filepath.Join(r.cfg.Store.SessionDir(r.id), CheckpointsFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	f.Write(append(b, '\n'))
	f.Close()
}

// latestCheckpoint returns the newest checkpoint that is intact and agrees
// with the log (its seq exists and has the recorded timestamp).
func latestCheckpoint(dir string, evs []session.Event) (Checkpoint, bool) {
	b, err := os.ReadFile(filepath.Join(dir, CheckpointsFile))
	if err != nil {
		return Checkpoint{}, false
	}
	var best Checkpoint
	found := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var cp Checkpoint
		if json.Unmarshal(sc.Bytes(), &cp) != nil || cp.Format != CheckpointFormat || cp.Sum != cp.sum() {
			continue
		}
		if cp.Seq < 1 || cp.Seq > int64(len(evs)) || !evs[cp.Seq-1].TS.Equal(cp.TS) {
			continue
		}
		if !found || cp.Seq > best.Seq {
			best, found = cp, true
		}
	}
	return best, found
}

// gitHead is the workspace's HEAD commit when it is a git repository,
// read by Go code (gitsafe.Head): git is never run on the host against a
// workspace the agent wrote. It is "" when there is none or the repository
// is refused (its git folder leads outside the workspace).
func gitHead(ws string) string {
	id, _ := gitsafe.Head(ws)
	return id
}

// foldLog rebuilds the state of a session from its events, starting from
// the latest valid checkpoint when there is one. It also reports which.
func foldLog(dir string, evs []session.Event) (*state, int64) {
	if cp, ok := latestCheckpoint(dir, evs); ok {
		s := restore(cp)
		for _, e := range evs[cp.Seq:] {
			s.add(e)
		}
		return s, cp.Seq
	}
	s := newState(evs[0].System)
	for _, e := range evs {
		s.add(e)
	}
	return s, 0
}
