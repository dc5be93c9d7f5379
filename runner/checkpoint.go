package runner

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/agentctl/agentctl/gitsafe"
	"github.com/agentctl/agentctl/session"
)

// CheckpointsFile holds the session's checkpoints, one JSON object a line,
// in the session folder. They are derived state: resume uses the latest
// valid one to avoid folding the whole log, and a missing, truncated or
// corrupt file only makes resume fold from the start.
const CheckpointsFile = "checkpoints.jsonl"

// Checkpoint is the folded state of a session after event Seq.
type Checkpoint struct {
	Seq        int64                  `json:"seq"`
	TS         time.Time              `json:"ts"` // of event Seq, to check it still matches the log
	Projection session.ProjectorState `json:"projection"`

	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
	ToolCalls    int64   `json:"tool_calls"`
	Turns        int     `json:"turns"`
	EvalFailures int     `json:"eval_failures"`
	Prompted     bool    `json:"prompted"`
	DoneClaim    bool    `json:"done_claim,omitempty"`
	WallSpentMS  int64   `json:"wall_spent_ms"`

	NeedsHuman     []string       `json:"needs_human,omitempty"`
	SessionGrants  []string       `json:"session_grants,omitempty"`
	LastAssistant  *session.Event `json:"last_assistant,omitempty"`
	Calls          []callSnapshot `json:"calls,omitempty"` // of the last assistant message
	PendingIntents []string       `json:"pending_intents,omitempty"`
	LastEval       *session.Event `json:"last_eval,omitempty"`
	Finished       *session.Event `json:"finished,omitempty"`
	SegStart       time.Time      `json:"seg_start"`
	Provider       string         `json:"provider"`
	Model          string         `json:"model"`
	WorkspaceGit   string         `json:"workspace_git_sha,omitempty"`
	Sum            string         `json:"sum,omitempty"`
}

type callSnapshot struct {
	Call         session.ToolCall `json:"call"`
	AssistantSeq int64            `json:"assistant_seq"`
	Index        int              `json:"index"`
	Intent       bool             `json:"intent,omitempty"`
	IntentKey    string           `json:"intent_key,omitempty"`
	Done         bool             `json:"done,omitempty"`
	Requested    bool             `json:"requested,omitempty"`
	Granted      string           `json:"granted,omitempty"`
	Denied       bool             `json:"denied,omitempty"`
}

// checkpoint captures s; the runner takes one at each turn boundary.
func (s *state) checkpoint(ws string) Checkpoint {
	cp := Checkpoint{
		Seq: s.lastSeq, TS: s.lastTS, Projection: s.projector.State(),
		InputTokens: s.inputTokens, OutputTokens: s.outputTokens, CostUSD: s.costUSD,
		ToolCalls: s.toolCalls, Turns: s.turns, EvalFailures: s.evalFailures,
		Prompted: s.prompted, DoneClaim: s.doneClaim, LastEval: s.lastEval,
		WallSpentMS: s.wallSpent.Milliseconds(), LastAssistant: s.lastAssistant, Finished: s.finished,
		Provider: s.provider, Model: s.model, WorkspaceGit: gitHead(ws),
	}
	cp.SegStart = s.segStart
	for tool := range s.sessionGrants {
		cp.SessionGrants = append(cp.SessionGrants, tool)
	}
	for id := range s.needsHuman {
		cp.NeedsHuman = append(cp.NeedsHuman, id)
	}
	sort.Strings(cp.SessionGrants)
	sort.Strings(cp.NeedsHuman)
	if s.lastAssistant != nil {
		for _, c := range s.lastAssistant.ToolCalls {
			if cs := s.calls[c.ID]; cs != nil {
				cp.Calls = append(cp.Calls, callSnapshot(*cs))
				if cs.Intent && !cs.Done {
					cp.PendingIntents = append(cp.PendingIntents, c.ID)
				}
			}
		}
	}
	return cp
}

// restore rebuilds a state from a checkpoint.
func restore(cp Checkpoint) *state {
	s := newState(cp.Projection.System)
	s.projector = session.RestoreProjector(cp.Projection)
	s.lastSeq, s.lastTS = cp.Seq, cp.TS
	s.inputTokens, s.outputTokens, s.costUSD = cp.InputTokens, cp.OutputTokens, cp.CostUSD
	s.toolCalls, s.turns, s.evalFailures = cp.ToolCalls, cp.Turns, cp.EvalFailures
	s.prompted, s.doneClaim, s.lastEval = cp.Prompted, cp.DoneClaim, cp.LastEval
	s.wallSpent = time.Duration(cp.WallSpentMS) * time.Millisecond
	s.segStart = cp.SegStart
	s.lastAssistant, s.finished = cp.LastAssistant, cp.Finished
	s.provider, s.model = cp.Provider, cp.Model
	for _, t := range cp.SessionGrants {
		s.sessionGrants[t] = true
	}
	for _, id := range cp.NeedsHuman {
		s.needsHuman[id] = true
	}
	for _, c := range cp.Calls {
		cs := callState(c)
		s.calls[c.Call.ID] = &cs
	}
	return s
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
	if r.st.lastSeq < r.cpDue {
		return
	}
	cp := r.st.checkpoint(r.ws)
	cp.Sum = cp.sum()
	b, err := json.Marshal(cp)
	if err != nil {
		return
	}
	r.cpDue = r.st.lastSeq + max(1, int64(len(b)/checkpointBytesPerEvent))
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
		if json.Unmarshal(sc.Bytes(), &cp) != nil || cp.Sum != cp.sum() {
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
