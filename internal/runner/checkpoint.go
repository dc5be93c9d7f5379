package runner

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/agentctl/agentctl/internal/gitsafe"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
)

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
	return sumOf(b)
}

// sumOf is the sum of a checkpoint encoded without its Sum.
func sumOf(unsummed []byte) string {
	h := sha256.Sum256(unsummed)
	return hex.EncodeToString(h[:])
}

// encode is json.Marshal of cp with its Sum set, from one encoding: Sum is
// the last field, so the summed encoding is the unsummed one with
// `,"sum":"…"` before its closing brace (TestCheckpointEncode holds the
// two equal).
func (cp Checkpoint) encode() ([]byte, error) {
	cp.Sum = ""
	b, err := json.Marshal(cp)
	if err != nil {
		return nil, err
	}
	sum := sumOf(b)
	return append(append(b[:len(b)-1:len(b)-1], `,"sum":"`...), sum+`"}`...), nil
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
	b, err := cp.encode()
	if err != nil {
		return
	}
	r.cpDue = r.st.LastSeq + max(1, int64(len(b)/checkpointBytesPerEvent))
	f, err := os.OpenFile(filepath.Join(r.cfg.Store.SessionDir(r.id), recorder.CheckpointsFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	f.Write(append(b, '\n'))
	f.Close()
}

// latestCheckpoint returns the newest checkpoint that is intact and agrees
// with the log (its seq exists and has the recorded timestamp). Only the
// position of each line is decoded first; the candidates are then checked
// whole (decoded, summed) newest first, so a resume decodes one checkpoint
// rather than every one the session wrote.
func latestCheckpoint(dir string, evs []session.Event) (Checkpoint, bool) {
	b, err := os.ReadFile(filepath.Join(dir, recorder.CheckpointsFile))
	if err != nil {
		return Checkpoint{}, false
	}
	type candidate struct {
		seq  int64
		line []byte
	}
	var cands []candidate
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		var pos struct {
			Format int       `json:"format"`
			Seq    int64     `json:"seq"`
			TS     time.Time `json:"ts"`
		}
		if len(line) == 0 || json.Unmarshal(line, &pos) != nil || pos.Format != CheckpointFormat {
			continue
		}
		if pos.Seq < 1 || pos.Seq > int64(len(evs)) || !evs[pos.Seq-1].TS.Equal(pos.TS) {
			continue
		}
		cands = append(cands, candidate{pos.Seq, line})
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].seq > cands[j].seq })
	for _, c := range cands {
		var cp Checkpoint
		if json.Unmarshal(c.line, &cp) == nil && cp.Sum == cp.sum() {
			return cp, true // its format, seq and ts were checked above
		}
	}
	return Checkpoint{}, false
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
		s.keepOriginals(evs) // the checkpoint holds none
		return s, cp.Seq
	}
	s := newState(evs[0].System)
	for _, e := range evs {
		s.add(e)
	}
	return s, 0
}

// CheckpointWitness is a home's checkpoints as a recorder.Witness: a
// checkpoint is taken only after its event's Append returned, so one
// past the end of the log means the log lost acknowledged records. Only an
// intact checkpoint (its format, its sum) counts; a torn or garbled line
// says nothing, as it does to resume.
type CheckpointWitness struct{ Home string }

var _ recorder.Witness = CheckpointWitness{}

// Beyond implements recorder.Witness.
func (w CheckpointWitness) Beyond(id string, last int64) (recorder.Durable, bool) {
	path := filepath.Join(recorder.Store{Root: w.Home}.SessionDir(id), recorder.CheckpointsFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return recorder.Durable{}, false
	}
	var best int64
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		var pos struct {
			Format int   `json:"format"`
			Seq    int64 `json:"seq"`
		}
		if len(line) == 0 || json.Unmarshal(line, &pos) != nil || pos.Format != CheckpointFormat || pos.Seq <= max(last, best) {
			continue
		}
		var cp Checkpoint
		if json.Unmarshal(line, &cp) == nil && cp.Sum == cp.sum() {
			best = cp.Seq
		}
	}
	if best == 0 {
		return recorder.Durable{}, false
	}
	return recorder.Durable{Seq: best, By: "the checkpoint in " + path}, true
}
