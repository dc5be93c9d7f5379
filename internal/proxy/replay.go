package proxy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	"github.com/agentctl/agentctl/internal/modelapi"
	"github.com/agentctl/agentctl/internal/provider"
	"github.com/agentctl/agentctl/internal/redact"
	"github.com/agentctl/agentctl/internal/replaymatch"
	"github.com/agentctl/agentctl/internal/session"
)

// ReplayConfig configures a Replay backend.
type ReplayConfig struct {
	// Events is the recorded session's log; Artifacts reads the files
	// its events name (ReadArtifact over the session folder).
	Events    []session.Event
	Artifacts func(rel string) ([]byte, error)
	// Strict makes any difference a divergence: no normaliser of
	// replaymatch's table runs (Ignore's still do), and the metadata
	// compares too. A session that recorded no content cannot be
	// replayed strictly (replaymatch.ErrNoContent).
	Strict bool
	// Ignore are the user's own normalisers (--ignore, a scenario's
	// ignore:), replaymatch.Ignores.
	Ignore []replaymatch.Normaliser
	// Dir is the folder the replaying program runs in (the recorded
	// one is the session's): the workspace-path normaliser replaces both.
	Dir string
	// OnMiss, when set, serves a conversation from its first divergence
	// on (a fork: --on-miss upstream) instead of failing the call.
	OnMiss Backend
	// Until, when > 0, replays turns 1..Until and serves the rest with
	// Live (--until N).
	Until int
	Live  Backend
	// Redactor is the one the recording was made with (nil: this
	// process's environment and the token formats, as the proxy's
	// default): the recorded requests are redacted, so a live message is
	// compared as it would have been recorded.
	Redactor *redact.Redactor
	// Sides are the session's recorded side threads (SideThreads): each
	// is served by a Replay of its own (Events and Artifacts from here,
	// the rest the session's: --until N replays N turns of each thread),
	// see side.go.
	Sides []ReplayConfig
}

// recordedTurn is one model call of the recording.
type recordedTurn struct {
	seq    int64
	model  string
	api    API
	call   *Call  // the recorded request, parsed (nil when no artifact)
	status int    // HTTP status served
	stream bool   // the body is SSE
	body   []byte // the exact bytes served, nil when no artifact
	answer *provider.Response
}

// Replay serves a recorded session's answers, matching each call to the
// recorded turn at the same position of its conversation. Safe for
// concurrent use.
type Replay struct {
	cfg    ReplayConfig
	turns  []recordedTurn
	models []string
	// match compares each call with its turn of the recording: the one
	// matcher of every replay path.
	match *replaymatch.Matcher

	// known maps the sha256 of each recorded request body (its API
	// first) to its parsed call: a replay mostly sees the same bytes
	// again, and a body seen before need not be parsed again.
	known map[[32]byte]*Call

	mu       sync.Mutex
	live     map[string]bool // conversations that went live (fork)
	findings []Finding

	// Side threads (side.go): the recording's first request, its side
	// threads' replays (a side notes its findings in its parent), and
	// which recorded thread serves each replaying thread.
	first   session.Thread
	sides   []*Replay
	parent  *Replay
	threads map[string]*Replay
	taken   map[string]map[*Replay]bool
}

var _ Backend = (*Replay)(nil)

// Finding is a difference a replay saw between a call and its recorded
// turn. Fatal ones were answered with a Divergence (or forked); the others
// are volatile parts the default match reports and tolerates.
type Finding struct {
	SessionID string `json:"session_id"`
	Turn      int    `json:"turn"`
	Seq       int64  `json:"seq,omitempty"`
	What      string `json:"what"`
	Fatal     bool   `json:"fatal"`
	Forked    bool   `json:"forked,omitempty"`
	// Difference is the matcher's account of a request that differs
	// (the message, the field, both sides' excerpts).
	Difference *replaymatch.Difference `json:"difference,omitempty"`
}

// Where names the turn of a finding of the replaying session id: "turn N",
// or "side thread <id> turn N" for one of its side threads, whose turns
// count apart (session.Route).
func (f Finding) Where(id string) string {
	if f.SessionID != "" && id != "" && f.SessionID != id {
		return fmt.Sprintf("side thread %s turn %d", f.SessionID, f.Turn)
	}
	return fmt.Sprintf("turn %d", f.Turn)
}

// NewReplay reads the recorded turns of a session: every model_call, with
// the exact bytes of its response_artifact when the proxy recorded it,
// else (a session `agentctl run` recorded) the assistant_message before it
// rendered in the caller's wire format.
func NewReplay(cfg ReplayConfig) (*Replay, error) {
	if cfg.Redactor == nil {
		cfg.Redactor = redact.New(redact.FromEnv(environ())...)
	}
	r := &Replay{cfg: cfg, live: map[string]bool{}, known: map[[32]byte]*Call{}}
	rec := replaymatch.NewRecording(cfg.Events)
	m, err := replaymatch.NewMatcher(rec, replaymatch.Options{Strict: cfg.Strict, Ignore: cfg.Ignore,
		Env: replaymatch.Env{ReplayDir: cfg.Dir}, Redact: cfg.Redactor.String})
	if err != nil {
		return nil, err
	}
	r.match = m
	seen := map[string]bool{}
	var lastAnswer *provider.Response
	for _, e := range cfg.Events {
		switch e.Kind {
		case session.KindAssistantMessage:
			if isFromRequest(e.Attrs) {
				continue
			}
			a := provider.Response{Text: e.Text, Refusal: e.Refusal, ToolCalls: e.ToolCalls, InputTokens: e.InputTokens, OutputTokens: e.OutputTokens}
			lastAnswer = &a
		case session.KindModelCall:
			if !isTurn(e) {
				lastAnswer = nil
				continue
			}
			var attrs struct {
				API              API    `json:"api"`
				Path             string `json:"path"`
				Status           int    `json:"status"`
				Stream           bool   `json:"stream"`
				RequestArtifact  string `json:"request_artifact"`
				ResponseArtifact string `json:"response_artifact"`
				ResponseSSE      *bool  `json:"response_sse"`
			}
			_ = json.Unmarshal(e.Attrs, &attrs)
			t := recordedTurn{seq: e.Seq, model: e.Model, api: attrs.API, status: attrs.Status, stream: attrs.Stream}
			if t.status == 0 {
				t.status = http.StatusOK
			}
			if attrs.ResponseArtifact != "" && cfg.Artifacts != nil {
				// A torn artifact (a crash between its sync and the log's)
				// leaves the answer to be rendered from the events.
				if b, err := cfg.Artifacts(attrs.ResponseArtifact); err == nil {
					t.body = b
				}
				if attrs.ResponseSSE != nil {
					t.stream = *attrs.ResponseSSE
				}
			}
			if attrs.RequestArtifact != "" && cfg.Artifacts != nil {
				b, err := cfg.Artifacts(attrs.RequestArtifact)
				c := &Call{API: attrs.API, Path: attrs.Path, Body: b}
				if err == nil && parseCall(c) == nil {
					t.call = c
					r.known[bodyKey(c.API, b)] = c
					t.model = c.Model
					r.match.Recorded(len(r.turns)+1, matchRequest(c))
				}
			}
			if t.body == nil {
				if e.Error != "" {
					t.status = http.StatusInternalServerError
					if attrs.Status != 0 && attrs.Status != http.StatusOK {
						t.status = attrs.Status
					}
					typ := e.ErrorType
					if typ == "" {
						typ = "api_error"
					}
					t.body = errorBody(attrs.API, typ, e.Error)
				} else {
					t.answer = lastAnswer
					if t.answer != nil {
						t.answer.Model, t.answer.FinishReason, t.answer.ResponseID = e.Model, e.FinishReason, e.ResponseID
						t.answer.CacheReadTokens, t.answer.CacheCreationTokens = e.CacheReadInputTokens, e.CacheCreationInputTokens
						if t.answer.FinishReason == "" {
							t.answer.FinishReason = provider.FinishStop
							if len(t.answer.ToolCalls) > 0 {
								t.answer.FinishReason = provider.FinishToolCalls
							}
						}
					}
				}
			}
			lastAnswer = nil
			r.turns = append(r.turns, t)
			if t.model != "" && !seen[t.model] {
				seen[t.model] = true
				r.models = append(r.models, t.model)
			}
		}
	}
	r.first = firstRequest(cfg.Events, r.turns)
	r.threads, r.taken = map[string]*Replay{}, map[string]map[*Replay]bool{}
	for _, s := range cfg.Sides {
		// A side thread is replayed as the session is (strictness,
		// --ignore, the folder, --until, the live upstream): only its
		// events and artifacts are its own.
		sc := cfg
		sc.Events, sc.Artifacts, sc.Sides = s.Events, s.Artifacts, nil
		side, err := NewReplay(sc)
		if err != nil {
			return nil, err
		}
		side.parent = r
		r.sides = append(r.sides, side)
		for _, m := range side.models {
			if !seen[m] {
				seen[m] = true
				r.models = append(r.models, m)
			}
		}
	}
	return r, nil
}

func isFromRequest(attrs json.RawMessage) bool {
	var a struct {
		FromRequest bool `json:"from_request"`
	}
	return len(attrs) > 0 && json.Unmarshal(attrs, &a) == nil && a.FromRequest
}

// Turns reports how many model calls the recording holds.
func (r *Replay) Turns() int { return len(r.turns) }

// TurnSeq is the seq of the recorded model_call of turn n (1-based; past
// the last turn, the last's): the forked_from of a fork that replays n
// turns, as replay fork --from names it.
func (r *Replay) TurnSeq(n int) int64 {
	if n > len(r.turns) {
		n = len(r.turns)
	}
	if n < 1 {
		return 0
	}
	return r.turns[n-1].seq
}

// Findings returns what the replay has seen so far, in order.
func (r *Replay) Findings() []Finding {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Finding(nil), r.findings...)
}

// Diverged reports whether any call diverged (fatally).
func (r *Replay) Diverged() bool {
	for _, f := range r.Findings() {
		if f.Fatal {
			return true
		}
	}
	return false
}

func (r *Replay) note(f Finding) {
	if r.parent != nil {
		r.parent.note(f)
		return
	}
	r.mu.Lock()
	r.findings = append(r.findings, f)
	r.mu.Unlock()
}

// Serve answers c with its recorded turn, or reports how it diverges.
func (r *Replay) Serve(ctx context.Context, c *Call, w http.ResponseWriter) error {
	switch c.Op() {
	case modelapi.OpModels:
		if r.cfg.Live != nil && r.cfg.Until == 0 {
			return r.cfg.Live.Serve(ctx, c, w)
		}
		return serveModels(w, c, r.models)
	case modelapi.OpCountTokens:
		return serveCount(w, c)
	}
	if len(r.sides) > 0 {
		t := r.threadOf(c)
		if t == nil {
			f := fmt.Sprintf("the recording has %d threads (its conversation and %d side threads) and this is another one", 1+len(r.sides), len(r.sides))
			r.note(Finding{SessionID: c.SessionID, Turn: c.Turn, What: f, Fatal: true})
			return &Divergence{Turn: c.Turn, What: f}
		}
		if t != r {
			return t.Serve(ctx, c, w)
		}
	}
	r.mu.Lock()
	live := r.live[c.SessionID]
	r.mu.Unlock()
	if live {
		return r.forward(ctx, c, w)
	}
	if r.cfg.Until > 0 && c.Turn > r.cfg.Until {
		if r.cfg.Live == nil {
			return &Divergence{Turn: c.Turn, What: fmt.Sprintf("--until %d and no upstream to go on with", r.cfg.Until)}
		}
		r.mu.Lock()
		r.live[c.SessionID] = true
		r.mu.Unlock()
		return r.forward(ctx, c, w)
	}
	var rec *recordedTurn
	if c.Turn <= len(r.turns) {
		rec = &r.turns[c.Turn-1]
	}
	fatal, diff, volatile := r.compare(c, rec)
	for _, v := range volatile {
		r.note(Finding{SessionID: c.SessionID, Turn: c.Turn, Seq: seqOf(rec), What: v, Fatal: r.cfg.Strict})
	}
	if fatal == "" && r.cfg.Strict && len(volatile) > 0 {
		fatal = volatile[0] + " (--strict)"
	}
	if fatal != "" {
		if r.cfg.OnMiss != nil {
			r.note(Finding{SessionID: c.SessionID, Turn: c.Turn, Seq: seqOf(rec), What: fatal, Forked: true, Difference: diff})
			r.mu.Lock()
			r.live[c.SessionID] = true
			r.mu.Unlock()
			return r.forward(ctx, c, w)
		}
		if len(volatile) == 0 || !r.cfg.Strict {
			r.note(Finding{SessionID: c.SessionID, Turn: c.Turn, Seq: seqOf(rec), What: fatal, Fatal: true, Difference: diff})
		}
		return &Divergence{Turn: c.Turn, Seq: seqOf(rec), What: fatal}
	}
	if rec.body != nil {
		ct := "application/json"
		if rec.stream {
			ct = "text/event-stream; charset=utf-8"
		}
		w.Header().Set("Content-Type", ct)
		w.WriteHeader(rec.status)
		w.Write(rec.body)
		return nil
	}
	enc, err := newEncoder(c, rec.answer.Model, w)
	if err != nil {
		return err
	}
	enc.Text(rec.answer.Text)
	enc.Finish(*rec.answer)
	return nil
}

func (r *Replay) forward(ctx context.Context, c *Call, w http.ResponseWriter) error {
	b := r.cfg.Live
	if b == nil {
		b = r.cfg.OnMiss
	}
	return b.Serve(ctx, c, w)
}

func seqOf(t *recordedTurn) int64 {
	if t == nil {
		return 0
	}
	return t.seq
}

// compare matches a call against its recorded turn: what only the proxy
// knows (a turn the recording does not have, another API, stream or not),
// then the request itself with the one matcher of every replay path
// (replaymatch: the conversation the session's events hold at that turn,
// normalised unless --strict). The metadata (volatile: a user or session
// id) is a finding the default match tolerates and --strict does not.
func (r *Replay) compare(c *Call, rec *recordedTurn) (fatal string, diff *replaymatch.Difference, volatile []string) {
	if rec == nil {
		return fmt.Sprintf("the recording has %d model calls and this is call %d", len(r.turns), c.Turn), nil, nil
	}
	if rec.body == nil && rec.answer == nil {
		return fmt.Sprintf("recorded model_call seq %d has no answer to serve", rec.seq), nil, nil
	}
	if rec.api != "" && rec.api != c.API {
		return fmt.Sprintf("log has a %s call, request is %s", rec.api, c.API), nil, nil
	}
	if rec.body != nil && rec.stream != c.Stream {
		return fmt.Sprintf("log has stream=%t, request has stream=%t", rec.stream, c.Stream), nil, nil
	}
	if d := r.match.Check(c.Turn, matchRequest(c)); d != nil {
		return d.Detail(), d, nil
	}
	if rc := rec.call; rc != nil && !sameJSON(orNull(rc.Metadata), orNull(c.Metadata)) &&
		!r.match.CheckText(c.Turn, string(orNull(rc.Metadata)), string(orNull(c.Metadata))) {
		volatile = append(volatile, fmt.Sprintf("metadata differs: log has %s, request has %s", orNull(rc.Metadata), orNull(c.Metadata)))
	}
	return "", nil, volatile
}

// matchRequest is a call in the matcher's terms.
func matchRequest(c *Call) replaymatch.Request {
	tools := c.Tools
	if tools == nil {
		tools = []string{} // known: none offered
	}
	return replaymatch.Request{Model: c.Model, System: c.System, Messages: c.Messages, Tools: tools}
}

// SetDir names the folder the replaying program runs in, once known (the
// fresh workspace of replay run): the workspace-path normaliser replaces
// it as it does the recorded one, in the session's thread and in each
// side thread. Call it before the first request.
func (r *Replay) SetDir(dir string) {
	r.match.SetReplayDir(dir)
	for _, s := range r.sides {
		s.match.SetReplayDir(dir)
	}
}

// Normalised lists what each normaliser changed over the replay so far
// (name, count, turns), for the replay report: the session's thread and
// its side threads added up by normaliser, each turn counted in its own
// thread. Without the sides, a client whose side call came first (so
// that its agent's conversation is side thread 1) reported nothing.
func (r *Replay) Normalised() []replaymatch.Change {
	var t replaymatch.Tally
	for _, th := range append([]*Replay{r}, r.sides...) {
		for _, c := range th.match.Changes() {
			for i, turn := range c.Turns {
				n := 0
				if i == 0 {
					n = c.Count // the count once, the turns each
				}
				t.Add(turn, map[string]int{c.Name: n})
			}
		}
	}
	return t.Changes()
}

// ContentCaptured reports whether the recording holds the conversation:
// false for a session collected with content capture off, whose replay
// compares only the turn count, the tool names and the model.
func (r *Replay) ContentCaptured() bool { return r.match.Captured() }

func orNull(b json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(b)) == 0 {
		return json.RawMessage("null")
	}
	return b
}

// WithModel wraps a backend so that every model call it serves asks for
// model instead of the client's (--model on a fork): the request body's
// "model" is replaced, nothing else, or where the call's wire names the
// model (modelapi.ModelSetter: a path) that.
func WithModel(b Backend, model string) Backend {
	return modelBackend{b, model}
}

type modelBackend struct {
	Backend
	model string
}

func (m modelBackend) Serve(ctx context.Context, c *Call, w http.ResponseWriter) error {
	if c.Op() != modelapi.OpGenerate || m.model == "" {
		return m.Backend.Serve(ctx, c, w)
	}
	api, _, _, err := c.wire()
	if err != nil {
		return err
	}
	cc := *c
	if ms, ok := api.Wire.(modelapi.ModelSetter); ok {
		if cc.Path, cc.Body, err = ms.SetModel(c.Path, c.Body, m.model); err != nil {
			return err
		}
	} else {
		var body map[string]json.RawMessage
		if err := json.Unmarshal(c.Body, &body); err != nil {
			return err
		}
		body["model"] = marshal(m.model)
		cc.Body = marshal(body)
	}
	// The proxy records the change in a session it opened (model_changed).
	c.liveModel = m.model
	cc.Model = m.model
	return m.Backend.Serve(ctx, &cc, w)
}

func bodyKey(api API, body []byte) [32]byte {
	h := sha256.New()
	h.Write([]byte(api))
	h.Write([]byte{0})
	h.Write(body)
	var k [32]byte
	h.Sum(k[:0])
	return k
}

// knownCall returns the parsed form of a body the recording holds byte for
// byte, nil for any other.
func (r *Replay) knownCall(api API, body []byte) *Call {
	k := bodyKey(api, body)
	if c := r.known[k]; c != nil {
		return c
	}
	for _, s := range r.sides {
		if c := s.known[k]; c != nil {
			return c
		}
	}
	return nil
}
