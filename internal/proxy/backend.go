package proxy

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/agentctl/agentctl/internal/modelapi"
	"github.com/agentctl/agentctl/internal/provider"
	"github.com/agentctl/agentctl/internal/session"
)

// Scripted serves agentctl's scripted model (provider.Scripted) over every
// wire protocol: turn N of the script answers call N of each conversation
// (each side thread counted on its own, answered by the script's thread
// its system text picks, provider.Script.For), so any agent runs with no
// key and no network.
type Scripted struct {
	script provider.Script
	// model is reported as the answer's model; "" echoes the request's.
	model string
	// skip is how many calls of a conversation come before the script's
	// first turn (AfterTurn).
	skip int
}

var _ Backend = (*Scripted)(nil)

// NewScripted returns the backend of a script; model, when set, is the
// model id the answers report, else each request's own.
func NewScripted(s provider.Script, model string) *Scripted {
	return &Scripted{script: s, model: model}
}

// Serve answers c with the script's turn c.Turn, streaming its text as the
// scripted model produces it (a turn's delay falls mid-text).
func (b *Scripted) Serve(ctx context.Context, c *Call, w http.ResponseWriter) error {
	model := b.model
	if model == "" {
		model = c.Model
	}
	switch c.Op() {
	case modelapi.OpModels:
		return serveModels(w, c, []string{model})
	case modelapi.OpCountTokens:
		return serveCount(w, c)
	}
	// The proxy counts c.Turn per thread (a side thread is a conversation
	// of its own), so a side call takes a turn of its thread only.
	p := provider.NewScripted(b.script.For(c.System), model)
	p.SetTurn(max(0, c.Turn-1-b.skip))
	enc, err := newEncoder(c, model, w)
	if err != nil {
		return err
	}
	resp, err := p.Complete(ctx, provider.Request{Model: model, Messages: c.projection(), MaxTokens: c.MaxTokens}, enc.Text)
	if b.skip > 0 {
		// The ids say the conversation's call, not the script's turn: an
		// id the skipped calls used must not come back (agents such as
		// the OpenAI Agents SDK refuse a reused tool call id).
		for i := range resp.ToolCalls {
			resp.ToolCalls[i].ID = fmt.Sprintf("call_%d_%d", c.Turn, i)
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if enc.Began() && c.Stream {
			return err
		}
		if pe, ok := err.(*provider.Error); ok {
			return &provider.Error{Provider: c.Provider, Status: http.StatusInternalServerError, Type: pe.Type, Message: pe.Message}
		}
		return &provider.Error{Provider: c.Provider, Status: http.StatusBadRequest, Type: "script_exhausted", Message: err.Error()}
	}
	enc.Finish(resp)
	return nil
}

func serveModels(w http.ResponseWriter, c *Call, models []string) error {
	var data []any
	for _, m := range models {
		if c.Model != "" && m != c.Model {
			continue
		}
		data = append(data, obj{"id": m, "object": "model", "type": "model", "display_name": m, "created": 0, "created_at": "1970-01-01T00:00:00Z", "owned_by": "agentctl"})
	}
	w.Header().Set("Content-Type", "application/json")
	if c.Model != "" {
		if len(data) == 0 {
			writeError(w, c.API, http.StatusNotFound, "not_found_error", fmt.Sprintf("agentctl proxy: no model %q here", c.Model))
			return nil
		}
		w.Write(marshal(data[0]))
		return nil
	}
	if data == nil {
		data = []any{}
	}
	first, last := "", ""
	if len(models) > 0 {
		first, last = models[0], models[len(models)-1]
	}
	w.Write(marshal(obj{"object": "list", "data": data, "has_more": false, "first_id": first, "last_id": last}))
	return nil
}

// serveCount answers count_tokens with the scripted model's estimate
// (characters / 4 + 1): a stand-in, not the provider's tokenizer.
func serveCount(w http.ResponseWriter, c *Call) error {
	n := utf8.RuneCountInString(c.System)
	for _, m := range c.Messages {
		n += utf8.RuneCountInString(m.Content)
		for _, tc := range m.ToolCalls {
			n += utf8.RuneCount(tc.Args)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(marshal(obj{"input_tokens": n/4 + 1}))
	return nil
}

// Upstream forwards calls to a real provider with the client's own
// credentials and streams the answer back as it arrives.
type Upstream struct {
	base   *url.URL
	client *http.Client
}

var _ Backend = (*Upstream)(nil)

// NewUpstream returns the backend that forwards to base, the API root as
// an SDK's base URL names it ("https://api.openai.com/v1",
// "https://api.anthropic.com"): a trailing /v1 is optional. client nil
// means a default client with no overall timeout (streams last).
func NewUpstream(base string, client *http.Client) (*Upstream, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("proxy: upstream %q: want an absolute http(s) URL such as https://api.openai.com/v1", base)
	}
	u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/v1")
	if client == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		// Serve asks for the encoding itself (acceptEncoding): the
		// transport must never inflate an answer on its own.
		t.DisableCompression = true
		client = &http.Client{Transport: t}
	}
	return &Upstream{base: u, client: client}, nil
}

// url is where c goes upstream: the call's route (c.Path, which for GET
// /v1/models/{id} already ends in the id that parseRoute checked is one
// segment) below the upstream's base path, and the client's query. It is
// the only place an upstream URL is built.
func (b *Upstream) url(c *Call) string {
	u := *b.base
	u.Path, u.RawPath = b.base.Path+c.Path, ""
	u.RawQuery = c.RawQuery
	return u.String()
}

// hopHeaders are not forwarded (RFC 9110 7.6.1), nor are the proxy's own.
var hopHeaders = map[string]bool{"Connection": true, "Keep-Alive": true, "Proxy-Connection": true, "Te": true, "Trailer": true,
	"Transfer-Encoding": true, "Upgrade": true, "Proxy-Authorization": true, "Host": true, "Content-Length": true,
	"Accept-Encoding": true, "X-Agentctl-Token": true}

// Serve forwards c. Each chunk read from the upstream is written and
// flushed before the next read: nothing is buffered.
func (b *Upstream) Serve(ctx context.Context, c *Call, w http.ResponseWriter) error {
	u := b.url(c)
	method := http.MethodPost
	var body io.Reader = strings.NewReader(string(c.Body))
	if c.Op() == modelapi.OpModels {
		method, body = http.MethodGet, nil
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return err
	}
	for k, vs := range c.Header {
		if !hopHeaders[http.CanonicalHeaderKey(k)] {
			req.Header[k] = vs
		}
	}
	req.Header.Set("Accept-Encoding", acceptEncoding(c.Header))
	resp, err := b.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &provider.Error{Provider: c.Provider, Type: "connection_error", Message: "agentctl proxy: upstream " + b.base.Host + " unreachable: " + err.Error()}
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		if !hopHeaders[http.CanonicalHeaderKey(k)] && !(k == "Content-Encoding" && resp.Uncompressed) {
			w.Header()[k] = vs
		}
	}
	w.WriteHeader(resp.StatusCode)
	buf := make([]byte, 32<<10)
	var sent int64
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return werr
			}
			sent += int64(n)
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return &provider.Error{Provider: c.Provider, Type: "connection_error",
				Message: fmt.Sprintf("agentctl proxy: upstream %s: the answer broke off after %d bytes: %v", b.base.Host, sent, rerr)}
		}
	}
}

// acceptEncoding is the Accept-Encoding asked of the upstream: gzip when
// the client takes it (the answer is then passed on compressed, and only
// what is recorded is inflated, at most Config.MaxRecord), else identity.
// Encodings the proxy cannot decode to record (br, zstd) are not asked for.
func acceptEncoding(h http.Header) string {
	for _, v := range h.Values("Accept-Encoding") {
		for _, part := range strings.Split(v, ",") {
			coding, params, _ := strings.Cut(part, ";")
			if !strings.EqualFold(strings.TrimSpace(coding), "gzip") {
				continue
			}
			q, ok := strings.CutPrefix(strings.ReplaceAll(params, " ", ""), "q=")
			if v, err := strconv.ParseFloat(q, 64); ok && err == nil && v == 0 {
				continue
			}
			return "gzip"
		}
	}
	return "identity"
}

// WithKey wraps a backend so that every call it serves carries key as the
// provider's credential (its wire's SetKey: Anthropic's x-api-key,
// OpenAI's Authorization: Bearer) in place of whatever the client sent. An external agent is
// given a placeholder key and the proxy adds the real one on its way
// upstream: a program agentctl runs cannot print, encode or send
// elsewhere a key it never had. A known-bodies backend (a Replay) stays
// one.
func WithKey(b Backend, key string) Backend {
	if kb, ok := b.(knownBodies); ok {
		return keyReplay{keyBackend{b, key}, kb}
	}
	return keyBackend{b, key}
}

type keyBackend struct {
	b   Backend
	key string
}

func (k keyBackend) Serve(ctx context.Context, c *Call, w http.ResponseWriter) error {
	cc := *c
	cc.Header = c.Header.Clone()
	if cc.Header == nil {
		cc.Header = http.Header{}
	}
	for _, h := range []string{"Authorization", "X-Api-Key", "Api-Key"} {
		cc.Header.Del(h)
	}
	api, _, _, err := c.wire()
	if err != nil {
		return err
	}
	api.Wire.SetKey(cc.Header, k.key)
	return k.b.Serve(ctx, &cc, w)
}

type keyReplay struct {
	keyBackend
	knownBodies
}

// Divergence is a replayed call that does not match the recording: the
// first diverging turn and what differs. The client sees it as a 400
// replay_divergence in its provider's error shape.
type Divergence struct {
	// Turn is the call's number in the conversation (1-based); Seq the
	// recorded model_call it was matched against (0 when the recording
	// has no such turn).
	Turn int
	Seq  int64
	// What says what differs: "log has X, request has Y".
	What string
}

func (d *Divergence) Error() string {
	if d.Seq == 0 {
		return fmt.Sprintf("agentctl replay: turn %d diverges: %s", d.Turn, d.What)
	}
	return fmt.Sprintf("agentctl replay: turn %d (recorded model_call seq %d) diverges: %s", d.Turn, d.Seq, d.What)
}

var _ = session.RoleUser
var _ sync.Mutex
