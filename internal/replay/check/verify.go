package check

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentctl/agentctl/internal/session"
)

// Verify statuses: the outcome of verifying one session.
const (
	// StatusOK: every recorded request digest matches today's projection.
	StatusOK = "ok"
	// StatusDiverged: a digest differs; Report.Divergence says where.
	StatusDiverged = "diverged"
	// StatusStructureOnly: the log records no digests (an imported
	// session, or one from before digests); only its structure was checked.
	StatusStructureOnly = "structure_only"
	// StatusBroken: the structure check found problems.
	StatusBroken = "broken"
	// StatusError: the log could not be read.
	StatusError = "error"
)

// Stable codes of verify findings. They appear in text and JSON output and
// never change meaning.
const (
	// CodeDigestMismatch: the request digest recorded in a model_call
	// differs from the digest of today's projection of the events before it.
	CodeDigestMismatch = "request_digest_mismatch"
	// CodeNoHeader: the log does not start with session_started.
	CodeNoHeader = "no_header"
	// CodeSeqGap: seqs are not dense from 1.
	CodeSeqGap = "seq_gap"
	// CodeOrphanResult: a tool_result answers a call no earlier assistant
	// message made.
	CodeOrphanResult = "orphan_tool_result"
	// CodeDuplicateResult: a call got two tool results.
	CodeDuplicateResult = "duplicate_tool_result"
	// CodeUnpairedAssistant: an assistant message recorded by agentctl
	// (not imported) has no model_call right after it.
	CodeUnpairedAssistant = "assistant_without_model_call"
)

// Report is the result of verifying one session. Its JSON form is the
// --json output of `agentctl replay verify` (one object per session); it
// only grows.
type Report struct {
	SessionID string `json:"session_id"`
	Status    string `json:"status"`
	Events    int64  `json:"events"`
	// ModelCalls counts model_call events (up to the divergence, where
	// verify stops); Checked those whose digest was recomputed and
	// compared; Skipped those that were not (compaction calls, calls
	// recorded without a digest).
	ModelCalls   int         `json:"model_calls"`
	Checked      int         `json:"checked"`
	Skipped      int         `json:"skipped"`
	ImportedFrom string      `json:"imported_from,omitempty"`
	Divergence   *Divergence `json:"divergence,omitempty"`
	Problems     []Problem   `json:"problems,omitempty"`
	Error        string      `json:"error,omitempty"`
	// Err is the read error behind StatusError (a *recorder.CorruptError
	// for a log damaged in the middle), for callers that map it to an
	// exit code.
	Err error `json:"-"`
}

// Problem is one structural finding.
type Problem struct {
	Code   string `json:"code"`
	Seq    int64  `json:"seq"`
	Detail string `json:"detail"`
}

// Divergence is the first model call whose recorded request differs from
// today's projection. The log keeps only a digest of each request, so the
// log's payload is known only when a known earlier projection rule (see
// Rules) reproduces the recorded digest; then Diffs compare the two
// payloads field by field. Otherwise Suspects lists the messages of today's
// payload that are new since the last turn that agreed: the difference lies
// among them (or in a rule that touches every message).
type Divergence struct {
	Code string `json:"code"`
	// Turn is the 1-based index of the model call among the checked ones.
	Turn int `json:"turn"`
	// Seq is the model_call's seq.
	Seq          int64  `json:"seq"`
	LogDigest    string `json:"log_digest"`
	ReplayDigest string `json:"replay_digest"`
	// AgreedSeq is the seq of the last model_call that matched (0: none).
	AgreedSeq int64 `json:"agreed_seq"`
	// Rule names the earlier projection rule that explains the log's
	// digest, if one does.
	Rule        string       `json:"rule,omitempty"`
	RuleDoc     string       `json:"rule_doc,omitempty"`
	Diffs       []FieldDiff  `json:"diffs,omitempty"`
	Suspects    []MessageRef `json:"suspects,omitempty"`
	ReplayCount int          `json:"replay_messages"`
}

// FieldDiff is one field of one message that differs: "message Index (Role,
// from event Seq) field Field: log has Log, replay produced Replay". A
// message present on one side only has Field "message".
type FieldDiff struct {
	Index  int    `json:"index"`
	Seq    int64  `json:"seq,omitempty"`
	Role   string `json:"role"`
	Field  string `json:"field"`
	Log    string `json:"log"`
	Replay string `json:"replay"`
}

// MessageRef points at a message of a payload.
type MessageRef struct {
	Index   int    `json:"index"`
	Seq     int64  `json:"seq,omitempty"`
	Role    string `json:"role"`
	Preview string `json:"preview"`
}

// VerifyOptions tune Verify.
type VerifyOptions struct {
	// Project, if set, replaces today's projection, so tests can verify a
	// log against a changed rule. It receives the events before a model
	// call (the header included) and returns the payload.
	Project func(evs []session.Event, system string) []session.Message
}

// HeaderTools returns the tool names recorded in a header's attrs
// ({"tools":[...]}), and whether the header records them.
func HeaderTools(h session.Event) ([]string, bool) {
	if len(h.Attrs) == 0 {
		return nil, false
	}
	var a struct {
		Tools *[]string `json:"tools"`
	}
	if json.Unmarshal(h.Attrs, &a) != nil || a.Tools == nil {
		return nil, false
	}
	return *a.Tools, true
}

// ImportedFrom returns the tool a session was imported from (header attrs
// {"imported_from": ...}), or ""; see session.ImportedFrom.
func ImportedFrom(h session.Event) string { return session.ImportedFrom(h) }

func isCompactionCall(e session.Event) bool {
	if len(e.Attrs) == 0 {
		return false
	}
	// Without the word or an escape that could spell it, the purpose is
	// not "compaction": skip decoding the attrs of every model call.
	if !bytes.Contains(e.Attrs, []byte("compaction")) && !bytes.Contains(e.Attrs, []byte(`\`)) {
		return false
	}
	var a struct {
		Purpose string `json:"purpose"`
	}
	_ = json.Unmarshal(e.Attrs, &a)
	return a.Purpose == "compaction"
}

// Verify re-projects every model call of a session with today's code and
// compares the result with the request digest recorded in its model_call.
// It folds the log once with a session.Projector and hashes each message
// once (see session.Digester), so it is linear in the log.
//
// The request of a turn's model_call at seq m is the projection of every
// event before m except the assistant_message at m-1 that answered it, with
// the header's system prompt and tool list. Compaction calls (attrs
// purpose "compaction") are recomputed with session.CompactionMessages over
// the originals the compaction recorded right after the call covers (from
// its summary_from, or from the start, to its through); `replay anchors` checks
// what they read. Verify stops at the first divergence.
//
// Without opts.Project, Verify runs a Verifier over evs; verifyBatch is the
// reference it agrees with.
func Verify(id string, evs []session.Event, opts VerifyOptions) Report {
	if opts.Project == nil {
		v := NewVerifier(id)
		v.addAll(evs)
		if rep, ok := v.Report(); ok {
			return rep
		}
	}
	return verifyBatch(id, evs, opts)
}

// verifyBatch is Verify over a log held whole: the projection of a turn
// may be replaced (opts.Project) and compaction calls are recomputed from
// evs, which Verifier cannot do for every log.
func verifyBatch(id string, evs []session.Event, opts VerifyOptions) Report {
	rep := Report{SessionID: id, Status: StatusOK, Events: int64(len(evs))}
	if len(evs) == 0 || evs[0].Kind != session.KindSessionStarted {
		rep.Status = StatusBroken
		rep.Problems = append(rep.Problems, Problem{Code: CodeNoHeader, Seq: 1, Detail: "the log does not start with session_started"})
		return rep
	}
	hdr := evs[0]
	rep.ImportedFrom = ImportedFrom(hdr)
	rep.Problems = checkStructure(evs, rep.ImportedFrom != "")
	tools, haveTools := HeaderTools(hdr)

	p := session.NewProjector(hdr.System)
	d := session.NewDigester()
	var prev []session.Message // payload of the last turn that agreed
	var agreed int64
	project := func(i int) []session.Message {
		if opts.Project != nil {
			return opts.Project(evs[:i], hdr.System)
		}
		return p.Messages()
	}
	check := func(i int, call session.Event) bool {
		rep.ModelCalls++
		if isCompactionCall(call) {
			// Its request is the runner's prompt over the originals up to
			// the compaction recorded right after it, with no tools.
			if call.RequestDigest == "" || i+1 >= len(evs) || evs[i+1].Kind != session.KindCompaction || opts.Project != nil {
				rep.Skipped++
				return true
			}
			rep.Checked++
			from, fit := session.CompactionInput(evs[i+1])
			msgs, _ := session.CompactionMessages(evs[:i], from, evs[i+1].Through, fit)
			if got := session.Digest(msgs, []string{}); got != call.RequestDigest {
				rep.Status = StatusDiverged
				rep.Divergence = explain(call, rep.Checked, got, msgs, nil, nil, 0)
				return false
			}
			return true
		}
		if call.RequestDigest == "" || !haveTools {
			rep.Skipped++
			return true
		}
		rep.Checked++
		msgs := project(i)
		var got string
		if opts.Project != nil {
			got = session.Digest(msgs, tools)
		} else {
			got = d.Digest(msgs, tools)
		}
		if got == call.RequestDigest {
			prev, agreed = msgs, call.Seq
			return true
		}
		rep.Status = StatusDiverged
		rep.Divergence = explain(call, rep.Checked, got, msgs, tools, prev, agreed)
		return false
	}
	for i := 0; i < len(evs); i++ {
		e := evs[i]
		switch {
		case e.Kind == session.KindAssistantMessage && i+1 < len(evs) &&
			evs[i+1].Kind == session.KindModelCall && evs[i+1].Seq == e.Seq+1:
			// The call's request was projected before its answer.
			if !check(i, evs[i+1]) {
				return finish(rep)
			}
			p.Add(e)
			p.Add(evs[i+1])
			i++
			continue
		case e.Kind == session.KindModelCall:
			// A call with no answer (failed, interrupted, compaction).
			if !check(i, e) {
				return finish(rep)
			}
		}
		p.Add(e)
	}
	return finish(rep)
}

func finish(rep Report) Report {
	if rep.Status == StatusOK && rep.Checked == 0 && rep.ModelCalls-rep.Skipped == 0 {
		if len(rep.Problems) > 0 {
			rep.Status = StatusBroken
		} else {
			rep.Status = StatusStructureOnly
		}
		return rep
	}
	if rep.Status == StatusOK && len(rep.Problems) > 0 {
		rep.Status = StatusBroken
	}
	return rep
}

// checkStructure checks what holds for every log, with or without
// digests: a header first, dense seqs, tool results that answer a call made
// earlier and only once, and (for agentctl's own logs) a model_call right
// after each assistant message.
// unpairedAssistant: an assistant message agentctl recorded from a model
// is followed by that call's model_call; one an import or the agent's
// client wrote (session.FromRequest) has none to be followed by.
func unpairedAssistant(e session.Event, next *session.Event, imported bool) bool {
	return !imported && !session.FromRequest(e) && (next == nil || next.Kind != session.KindModelCall)
}

func checkStructure(evs []session.Event, imported bool) []Problem {
	var out []Problem
	calls := map[string]bool{} // call id -> answered
	for i, e := range evs {
		if want := int64(i + 1); e.Seq != want {
			out = append(out, Problem{Code: CodeSeqGap, Seq: e.Seq, Detail: fmt.Sprintf("event %d has seq %d", want, e.Seq)})
			break
		}
		switch e.Kind {
		case session.KindAssistantMessage:
			for _, c := range e.ToolCalls {
				calls[c.ID] = false
			}
			var next *session.Event
			if i+1 < len(evs) {
				next = &evs[i+1]
			}
			if unpairedAssistant(e, next, imported) {
				out = append(out, Problem{Code: CodeUnpairedAssistant, Seq: e.Seq, Detail: "no model_call follows the assistant message"})
			}
		case session.KindToolResult:
			answered, ok := calls[e.CallID]
			switch {
			case !ok:
				out = append(out, Problem{Code: CodeOrphanResult, Seq: e.Seq, Detail: fmt.Sprintf("call %s (%s) was never made", e.CallID, e.Tool)})
			case answered:
				out = append(out, Problem{Code: CodeDuplicateResult, Seq: e.Seq, Detail: fmt.Sprintf("call %s (%s) already has a result", e.CallID, e.Tool)})
			default:
				calls[e.CallID] = true
			}
		}
	}
	return out
}

// Text renders one session's verify result for a terminal: one line, and
// the divergence or structural problems under it.
func (r Report) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "session %s: %s (%d events, %d model calls, %d checked, %d skipped)\n",
		r.SessionID, r.Status, r.Events, r.ModelCalls, r.Checked, r.Skipped)
	switch {
	case r.Error != "":
		fmt.Fprintf(&b, "  error: %s\n", r.Error)
	case r.Status == StatusStructureOnly && r.ImportedFrom != "":
		fmt.Fprintf(&b, "  imported from %s: the log records no request digests; only its structure was checked\n", r.ImportedFrom)
	case r.Status == StatusStructureOnly:
		b.WriteString("  the log records no request digests (or no tool list); only its structure was checked\n")
	}
	for _, p := range r.Problems {
		fmt.Fprintf(&b, "  [%s] seq %d: %s\n", p.Code, p.Seq, p.Detail)
	}
	if r.Divergence != nil {
		for _, line := range strings.SplitAfter(strings.TrimSuffix(r.Divergence.Text(), "\n"), "\n") {
			b.WriteString("  " + line)
		}
		b.WriteString("\n")
	}
	return b.String()
}
