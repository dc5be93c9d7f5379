package proxy

import (
	// Every registered model API: the proxy serves their wires; a run calls
	// their clients.
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	_ "github.com/agentctl/agentctl/internal/modelapi/all"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentctl/agentctl/internal/loopback"
	"github.com/agentctl/agentctl/internal/modelapi"
	"github.com/agentctl/agentctl/internal/provider"
	"github.com/agentctl/agentctl/internal/redact"
	"github.com/agentctl/agentctl/internal/session"
)

// Backend answers model calls. Serve writes the answer to w in the call's
// wire format (c.API, c.Stream), flushing as it goes; the proxy captures
// what it writes and records it. Serve is called concurrently for
// different conversations, and one at a time within a conversation.
// Cancellation: ctx ends when the client goes away; Serve returns then.
// An error returned before anything was written is answered by the proxy
// in the provider's error shape (a *provider.Error keeps its status and
// type; a *Divergence is a 400 replay_divergence; anything else a 502)
// and recorded as the call's error; once bytes were written the error is
// only recorded.
type Backend interface {
	Serve(ctx context.Context, c *Call, w http.ResponseWriter) error
}

// Policy is consulted before each model call is served, with the parsed
// call (model, max tokens, messages, what the conversation spent so far).
// A non-nil Refusal is answered in the provider's error shape instead of
// serving the call, and recorded as the call's model_call error. It is
// called from one goroutine per conversation at a time.
type Policy func(ctx context.Context, c *Call) *Refusal

// Refusal is a Policy's answer to a call it does not allow.
type Refusal struct {
	// Status is the HTTP status (400 if 0). Type is the provider error
	// type the client sees (e.g. "budget_exceeded", "invalid_request_error");
	// Message what it says.
	Status  int
	Type    string
	Message string
}

// Opener creates the session of a new conversation in standalone mode. id
// is the one the client's base URL named (/s/<id>/v1), "" for the proxy to
// choose; header is the session_started event the proxy proposes
// (provider, model, system from the first request, and Config.Header's
// fields).
type Opener func(id string, header session.Event) (Sink, error)

// Config configures a Server.
type Config struct {
	// Backend answers the calls (Scripted, Upstream, Replay).
	Backend Backend
	// Sink, when set, records every call into that one session, which its
	// owner (the runner) opened and will finish. Otherwise Open creates a
	// session per conversation, and Close finishes them.
	Sink Sink
	Open Opener
	// OpenSide, when set, opens the session of a side thread (a call
	// that shares nothing with its session's conversation: a client's
	// title or quota call; session.Route): id is session.SideThreadID,
	// header session.SideThreadHeader's. Without it, side threads are
	// opened with Open, and a Sink's calls are all one conversation.
	OpenSide Opener
	// Header is laid into the session_started of sessions Open creates:
	// Name, ParentSessionID, ForkedFrom, Attrs.
	Header session.Event
	// Policy, when set, may refuse calls (pinned model, budget, wall time).
	Policy Policy
	// Token, when set, must come with every request: in the
	// X-Agentctl-Token header or as a /t/<token>/ base URL prefix.
	Token string
	// Redactor redacts the raw bodies kept as artifacts; nil means the
	// secrets of this process's environment and the token formats.
	Redactor *redact.Redactor
	// MaxBody caps a request body (default 32 MiB).
	MaxBody int64
	// MaxRecord caps what is kept of an answer to parse and record
	// (default 16 MiB, decoded): the client gets every byte whatever
	// its size, as it arrives, but the proxy holds at most this much, so
	// a huge stream or a gzip bomb costs it bounded memory. A larger
	// answer is recorded as a model_call with error_type
	// response_too_large (its size, no text, no response artifact); the
	// agent's next request carries what it said.
	MaxRecord int64
	// OnRecorded, when set, is called after each model call's events are
	// durable, with the call and the events as written (a runner ends
	// the run on a refusal, counts spend, streams progress). It is called
	// from one goroutine per conversation at a time, before the client's
	// response ends: keep it short.
	OnRecorded func(c *Call, evs []session.Event)
	// Logf, when set, is told about sessions opened and calls that failed.
	Logf func(format string, args ...any)
}

// Server is the proxy: an http.Handler serving the model APIs at /v1/…,
// /s/<session>/v1/… and /t/<token>/…. Safe for concurrent use.
type Server struct {
	cfg Config
	red *redact.Redactor

	// inflight counts requests being served (answered or recorded).
	inflight atomic.Int64

	mu     sync.Mutex
	convs  []*conversation
	byID   map[string]*conversation
	fixed  *conversation
	closed bool
	ended  []Ended
}

var _ http.Handler = (*Server)(nil)

// New returns a Server.
func New(cfg Config) (*Server, error) {
	if cfg.Backend == nil {
		return nil, errors.New("proxy: no backend: give a scripted model, an upstream or a recorded session")
	}
	if (cfg.Sink == nil) == (cfg.Open == nil) {
		return nil, errors.New("proxy: give exactly one of Sink (record into one session) and Open (a session per conversation)")
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = 32 << 20
	}
	if cfg.MaxRecord <= 0 {
		cfg.MaxRecord = 16 << 20
	}
	s := &Server{cfg: cfg, red: cfg.Redactor, byID: map[string]*conversation{}}
	if s.red == nil {
		s.red = redact.New(redact.FromEnv(environ())...)
	}
	if cfg.Sink != nil {
		s.fixed = &conversation{sink: cfg.Sink, id: cfg.Sink.SessionID(), keyed: true}
	}
	return s, nil
}

func (s *Server) logf(format string, args ...any) {
	if s.cfg.Logf != nil {
		s.cfg.Logf(format, args...)
	}
}

// Sessions returns the ids of the sessions the server has recorded into,
// in the order they were opened.
func (s *Server) Sessions() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	if s.fixed != nil {
		ids = append(ids, s.fixed.id)
	}
	for _, c := range s.convs {
		if c.sink != nil {
			ids = append(ids, c.id)
		}
	}
	return ids
}

// Close finishes the sessions Open created (session_finished: see Finish,
// with status done) and closes those that are io.Closers. A Sink given in
// Config is left to its owner. Requests after Close are refused.
func (s *Server) Close() error {
	return s.Finish(session.StatusDone, "proxy stopped")
}

// Ended is how a session the proxy opened ended: its session_finished.
type Ended struct {
	SessionID string         `json:"session_id"`
	Status    session.Status `json:"status"`
	Reason    string         `json:"reason,omitempty"`
}

// Finish is Close with the status and reason the sessions end with: the
// agent's outcome (failed when it exited non-zero, interrupted when it was
// stopped by a signal). A session's model calls overrule it
// (session.ModelCalls.Failure): a replay that diverged ends failed
// whatever the status, and one whose every model call failed ends failed
// unless it was interrupted.
func (s *Server) Finish(status session.Status, reason string) error {
	s.mu.Lock()
	s.closed = true
	convs := append([]*conversation(nil), s.convs...)
	s.mu.Unlock()
	var errs []error
	for _, c := range convs {
		// A side thread's calls are served under its root's lock.
		mu := &c.mu
		if c.root != nil {
			mu = &c.root.mu
		}
		mu.Lock()
		if c.sink != nil {
			fin := session.Event{Kind: session.KindSessionFinished, Status: string(status), Reason: reason}
			if why, detail := c.calls.Failure(); why != "" && (c.calls.Diverged != nil || status != session.StatusInterrupted) {
				fin.Status, fin.Reason = string(session.StatusFailed), why+": "+detail
				if status == session.StatusFailed && reason != "" {
					fin.Reason += "; " + reason
				}
			}
			if _, err := c.sink.Append(fin); err != nil {
				errs = append(errs, err)
			}
			s.mu.Lock()
			s.ended = append(s.ended, Ended{SessionID: c.id, Status: session.Status(fin.Status), Reason: fin.Reason})
			s.mu.Unlock()
			if cl, ok := c.sink.(io.Closer); ok && c != s.fixed {
				if err := cl.Close(); err != nil {
					errs = append(errs, err)
				}
			}
		}
		mu.Unlock()
	}
	return errors.Join(errs...)
}

// Ended returns how the sessions Open created ended, once Close or Finish
// has ended them, in the order they were opened.
func (s *Server) Ended() []Ended {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Ended(nil), s.ended...)
}

// route is a parsed request path.
type route struct {
	api     API
	apiVal  modelapi.API
	op      modelapi.Op
	session string // from /s/<id>/
	token   string // from /t/<token>/
	path    string // /v1/…
	modelID string // GET /v1/models/{id}
}

// parseRoute finds the registered wire route (modelapi.Match) of p below
// its /t/<token>/ and /s/<session>/ prefixes. A path without the /v1 its
// route has is taken with it (a base URL without /v1).
func parseRoute(method, p string) (route, error) {
	var r route
	rest := p
	for {
		switch {
		case strings.HasPrefix(rest, "/t/"):
			tok, tail, _ := strings.Cut(rest[3:], "/")
			r.token, rest = tok, "/"+tail
			continue
		case strings.HasPrefix(rest, "/s/"):
			id, tail, _ := strings.Cut(rest[3:], "/")
			r.session, rest = id, "/"+tail
			continue
		}
		break
	}
	api, rt, vars, ok := modelapi.Match(method, rest)
	r.path = rest
	if !ok {
		r.path = "/v1" + strings.TrimPrefix(rest, "/v1")
		api, rt, vars, ok = modelapi.Match(method, r.path)
	}
	if !ok {
		return r, fmt.Errorf("no such endpoint: %s %s (the proxy serves %s)", method, p, modelapi.RoutesText())
	}
	r.api, r.apiVal, r.op = API(rt.API), api, rt.Op
	if id, ok := vars["id"]; ok && rt.Op == modelapi.OpModels {
		r.modelID = id
		if !validModelID(r.modelID) {
			return r, fmt.Errorf("model id %q in %s: want one path segment (no '/', '\\', '..' or control characters)", r.modelID, p)
		}
	}
	if r.session != "" && !validSessionID(r.session) {
		return r, fmt.Errorf("session %q in the base URL: want letters, digits, '-' or '_'", r.session)
	}
	return r, nil
}

func validSessionID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// validModelID reports whether id may name a model in GET /v1/models/{id}:
// one path segment, so that the upstream path built from it
// (Upstream.url) stays below /v1/models. parseRoute reads the decoded
// path, so an encoded "%2e%2e" or "%2f" is caught here as ".." or "/".
func validModelID(id string) bool {
	if id == "" || id == "." || id == ".." || len(id) > 256 || strings.ContainsAny(id, `/\`) {
		return false
	}
	for _, c := range id {
		if c < 0x20 || c == 0x7f {
			return false
		}
	}
	return true
}

// LoopbackHost reports whether host (a Host header or --listen address,
// with or without a port) names this machine's loopback (loopback.Host).
func LoopbackHost(host string) bool { return loopback.Host(host) }

// apiGuess is the API an unroutable request most likely spoke, for the
// shape of its error (modelapi.Guess); "" when no wire claims it.
func apiGuess(r *http.Request) API {
	if _, rt, ok := modelapi.Guess(r.URL.Path, r.Header); ok {
		return API(rt.API)
	}
	return ""
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.inflight.Add(1)
	defer s.inflight.Add(-1)
	rt, rerr := parseRoute(r.Method, r.URL.Path)
	if s.cfg.Token != "" {
		got := r.Header.Get("X-Agentctl-Token")
		if got == "" {
			got = rt.token
		}
		if !loopback.TokenOK(got, s.cfg.Token) {
			writeError(w, apiGuess(r), http.StatusUnauthorized, "authentication_error", "agentctl proxy: this proxy needs its token: send it as X-Agentctl-Token or put /t/<token> before /v1 in the base URL")
			return
		}
	}
	if s.cfg.Token == "" {
		if why := loopback.BrowserRequest(r); why != "" {
			writeError(w, apiGuess(r), http.StatusForbidden, "permission_error", "agentctl proxy: refused: "+why+
				"; a proxy without a token serves only programs on this machine, never a web page (which could forge calls with your key): "+
				"start it with --token (or AGENTCTL_PROXY_TOKEN) and send the token as X-Agentctl-Token to allow such clients")
			return
		}
	}
	if rerr != nil {
		writeError(w, apiGuess(r), http.StatusNotFound, "not_found_error", "agentctl proxy: "+rerr.Error())
		return
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		writeError(w, rt.api, http.StatusServiceUnavailable, "api_error", "agentctl proxy: shutting down")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBody))
	if err != nil {
		writeError(w, rt.api, http.StatusRequestEntityTooLarge, "request_too_large", fmt.Sprintf("agentctl proxy: read request body: %v", err))
		return
	}
	c := &Call{API: rt.api, Provider: rt.apiVal.Provider, Path: rt.path, RawQuery: r.URL.RawQuery, Body: body, Header: r.Header.Clone()}
	if rt.op != modelapi.OpGenerate {
		// Not model calls: nothing to record. count_tokens is parsed
		// only to answer locally.
		if rt.op == modelapi.OpCountTokens {
			if err := parseCall(c); err != nil {
				writeError(w, rt.api, http.StatusBadRequest, "invalid_request_error", "agentctl proxy: "+err.Error())
				return
			}
		}
		c.Model = rt.modelID
		if err := s.cfg.Backend.Serve(r.Context(), c, w); err != nil {
			s.answerError(w, c, err, false)
		}
		return
	}
	s.serveCall(w, r, rt, c)
}

func environ() []string { return osEnviron() }

// answerError writes err in the provider's error shape (unless bytes were
// already written) and returns the status, type and message recorded.
func (s *Server) answerError(w http.ResponseWriter, c *Call, err error, wrote bool) (int, string, string) {
	status, typ, msg := http.StatusBadGateway, "connection_error", err.Error()
	var pe *provider.Error
	var dv *Divergence
	var br *badRequest
	switch {
	case errors.As(err, &dv):
		status, typ, msg = http.StatusBadRequest, session.ErrorTypeReplayDivergence, dv.Error()
	case errors.As(err, &br):
		status, typ, msg = http.StatusBadRequest, "invalid_request_error", "agentctl proxy: "+br.msg
	case errors.As(err, &pe):
		typ, msg = pe.Type, pe.Message
		if pe.Status != 0 {
			status = pe.Status
		} else if pe.Type != "connection_error" {
			status = http.StatusInternalServerError
		}
		if typ == "" {
			typ = "api_error"
		}
	default:
		msg = "agentctl proxy: upstream unreachable: " + msg
	}
	if !wrote {
		writeError(w, c.API, status, typ, msg)
	}
	return status, typ, msg
}

// capture passes what a Backend writes on to the client, flushing each
// write, and keeps the first max bytes of it to record: the client gets
// the rest as it comes, the proxy holds no more than max.
type capture struct {
	w      http.ResponseWriter
	max    int64
	status int
	body   []byte
	n      int64 // bytes written, kept or not
	first  time.Time
	werr   error
}

func (c *capture) Header() http.Header { return c.w.Header() }

func (c *capture) WriteHeader(status int) {
	if c.status != 0 {
		return
	}
	c.status = status
	c.w.WriteHeader(status)
}

func (c *capture) Write(p []byte) (int, error) {
	if c.status == 0 {
		c.WriteHeader(http.StatusOK)
	}
	if c.first.IsZero() && len(p) > 0 {
		c.first = time.Now()
	}
	if keep := min(int64(len(p)), c.max+1-int64(len(c.body))); keep > 0 {
		c.body = append(c.body, p[:keep]...)
	}
	c.n += int64(len(p))
	if c.werr != nil {
		return 0, c.werr
	}
	n, err := c.w.Write(p)
	if err == nil {
		err = http.NewResponseController(c.w).Flush()
	}
	if err != nil {
		c.werr = err
	}
	return n, err
}

// Flush is a no-op: every Write flushes.
func (c *capture) Flush() {}

func (c *capture) wrote() bool { return c.status != 0 }

// errTooLarge is an answer larger than Config.MaxRecord: passed on to
// the client, not recorded.
type errTooLarge struct{ msg string }

func (e *errTooLarge) Error() string { return e.msg }

// recorded is the answer as it is recorded: the bytes the backend wrote,
// decoded when the upstream's Content-Encoding is passed on to the client
// (gzip), and at most max of them; an *errTooLarge when it was larger, or
// could not be decoded.
func (c *capture) recorded() ([]byte, error) {
	tooLarge := func(what string) error {
		return &errTooLarge{fmt.Sprintf("agentctl proxy: the answer (%d bytes as sent%s) is more than the %d bytes the proxy records: "+
			"the client got all of it; its text is not recorded (the agent's next request carries it)", c.n, what, c.max)}
	}
	if int64(len(c.body)) > c.max {
		return nil, tooLarge("")
	}
	switch enc := strings.ToLower(strings.TrimSpace(c.Header().Get("Content-Encoding"))); enc {
	case "", "identity":
		return c.body, nil
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(bytes.NewReader(c.body))
		if err != nil {
			return nil, &errTooLarge{fmt.Sprintf("agentctl proxy: the answer is not valid gzip (%v): passed on, not recorded", err)}
		}
		b, err := io.ReadAll(io.LimitReader(zr, c.max+1))
		if err != nil {
			return nil, &errTooLarge{fmt.Sprintf("agentctl proxy: the answer is not valid gzip (%v): passed on, not recorded", err)}
		}
		if int64(len(b)) > c.max {
			return nil, tooLarge(", gzip")
		}
		return b, nil
	default:
		return nil, &errTooLarge{fmt.Sprintf("agentctl proxy: the answer has Content-Encoding %q, which the proxy does not decode: passed on, not recorded", enc)}
	}
}

// parseAnswer reads the answer a backend wrote, with the call's wire.
func parseAnswer(c *Call, status int, body []byte, header http.Header) (provider.Response, error) {
	api, _, _, err := c.wire()
	if err != nil {
		return provider.Response{Model: c.Model}, err
	}
	if status < 200 || status > 299 {
		return provider.Response{Model: c.Model}, api.Wire.ParseError(status, header, body)
	}
	stream := c.Stream
	if ct := header.Get("Content-Type"); ct != "" {
		stream = strings.HasPrefix(ct, "text/event-stream")
	}
	return api.Wire.ParseResponse(body, stream, c.Model)
}

// knownBodies is implemented by a backend that knows request bodies ahead
// (a Replay): a body it knows is taken as parsed instead of parsed again,
// and needs no redaction (it is the recorded, already redacted, bytes).
type knownBodies interface {
	knownCall(api API, body []byte) *Call
}

// parse parses c's body, or takes a known body's parse; it reports
// whether the body was known.
func (s *Server) parse(c *Call) (bool, error) {
	if kb, ok := s.cfg.Backend.(knownBodies); ok {
		if k := kb.knownCall(c.API, c.Body); k != nil {
			c.Model, c.MaxTokens, c.Stream, c.System, c.Metadata = k.Model, k.MaxTokens, k.Stream, k.System, k.Metadata
			c.Messages = append([]session.Message(nil), k.Messages...)
			c.Tools, c.failed = k.Tools, k.failed
			return true, nil
		}
	}
	return false, parseCall(c)
}

// serveCall serves and records one model call.
func (s *Server) serveCall(w http.ResponseWriter, r *http.Request, rt route, c *Call) {
	began := time.Now()
	known, perr := s.parse(c)
	conv, err := s.conversation(rt, c)
	if err != nil {
		writeError(w, c.API, http.StatusInternalServerError, "api_error", "agentctl proxy: "+err.Error())
		s.logf("proxy: %v", err)
		return
	}
	// A side thread is served under its root's lock: the calls of one
	// conversation, side threads included, one at a time.
	root := conv
	root.mu.Lock()
	defer root.mu.Unlock()
	if perr == nil && root.sink != nil {
		conv = root.threadFor(s, c)
	}
	if err := conv.open(s, c); err != nil {
		writeError(w, c.API, http.StatusInternalServerError, "api_error", "agentctl proxy: "+err.Error())
		s.logf("proxy: %v", err)
		return
	}
	conv.n++
	c.SessionID, c.Turn, c.Spent = conv.id, conv.n, conv.budget().spent
	if conv.root != nil {
		c.Thread, c.ThreadOf = conv.thread, conv.root.id
	}
	rec := callRecord{conv: conv, call: c, began: began, known: known}
	if perr != nil {
		_, typ, msg := s.answerError(w, c, perr, false)
		rec.fail(s, 400, typ, msg, nil)
		return
	}
	rec.inputs = conv.inputs(c)
	if s.cfg.Policy != nil {
		if ref := s.cfg.Policy(r.Context(), c); ref != nil {
			status := ref.Status
			if status == 0 {
				status = http.StatusBadRequest
			}
			body := writeError(w, c.API, status, ref.Type, ref.Message)
			rec.attrs = obj{"refused": true}
			rec.fail(s, status, ref.Type, ref.Message, body)
			return
		}
	}
	cw := &capture{w: w, max: s.cfg.MaxRecord}
	serr := s.cfg.Backend.Serve(r.Context(), c, cw)
	rec.first = cw.first
	if serr != nil && !cw.wrote() {
		status, typ, msg := s.answerError(cw, c, serr, false)
		rec.fail(s, status, typ, msg, cw.body)
		return
	}
	if cw.status == 0 {
		cw.WriteHeader(http.StatusOK)
	}
	body, berr := cw.recorded()
	var resp provider.Response
	var aerr error
	if berr != nil {
		rec.artifacts(s, nil)
		resp.Model, aerr = c.Model, berr
		rec.attrs = obj{"response_bytes": cw.n}
	} else {
		// The answer is parsed while its bytes are made durable.
		type parsed struct {
			resp provider.Response
			err  error
		}
		done := make(chan parsed, 1)
		go func() {
			resp, err := parseAnswer(c, cw.status, body, cw.Header())
			done <- parsed{resp, err}
		}()
		rec.artifacts(s, body)
		p := <-done
		resp, aerr = p.resp, p.err
	}
	// Only a Serve cut short by the client counts: a client that closes
	// the connection right after the last byte was answered in full.
	disconnected := serr != nil && (r.Context().Err() != nil || cw.werr != nil)
	rec.finish(s, cw.status, cw.Header(), resp, aerr, serr, disconnected)
	if serr != nil && !disconnected {
		// The answer broke off (the upstream dropped mid-stream): the
		// client must see it broken, not a clean end of a short answer.
		// Aborting the handler closes the connection without the final
		// chunk (an HTTP/2 stream is reset), so its SDK raises.
		panic(http.ErrAbortHandler)
	}
}
