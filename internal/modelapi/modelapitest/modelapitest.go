// Package modelapitest is the contract suite every registered model API
// runs (restic's internal/backend/test): the same cases, fed from the
// API's real recorded answers (testdata/corpus, see SOURCES.md), so that
// "a new API works" is one table of captures.
//
// For each case the suite checks, with the API's own Wire:
//
//  1. parse: ParseResponse reads the capture as the Want says (text,
//     refusal, tool calls in order, finish reason, usage with cache, the
//     mid-stream error);
//  2. render: the answer rendered by NewEncoder, streamed and plain, reads
//     back as the same turn (what the proxy serves for a scripted call or
//     a replay without the recorded bytes);
//  3. record and replay: the capture served by a loopback upstream goes
//     through the proxy to the client byte for byte and is recorded; a
//     replay of that recording, with no upstream, serves the same bytes.
//
// A case the corpus has no capture of is skipped with the reason the
// API's Suite gives (Missing): never with an invented capture.
//
// # Example
//
//	func TestContract(t *testing.T) {
//		api, _ := modelapi.Lookup("openai")
//		modelapitest.Run(t, api, modelapitest.Suite{Request: …, Captures: …, Missing: …})
//	}
package modelapitest

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/modelapi"
	"github.com/agentctl/agentctl/internal/proxy"
	"github.com/agentctl/agentctl/internal/session"
)

// Case is one behaviour every API's answers must read, render and replay
// right.
type Case string

// The cases of the contract, in the order Run runs them.
const (
	StreamedText      Case = "streamed_text"
	PlainAnswer       Case = "plain_answer"
	ToolCalls         Case = "tool_calls"
	ParallelToolCalls Case = "parallel_tool_calls"
	Refusal           Case = "refusal"
	LengthCut         Case = "length_cut"
	UsageWithCache    Case = "usage_with_cache"
	ErrorMidStream    Case = "error_mid_stream"
)

// Cases lists every case.
var Cases = []Case{StreamedText, PlainAnswer, ToolCalls, ParallelToolCalls, Refusal, LengthCut, UsageWithCache, ErrorMidStream}

// Capture is one real answer of the API.
type Capture struct {
	// Source says where Body comes from (a corpus path), for failures.
	Source string
	// Body is the answer as the wire carried it: SSE when Stream, else
	// the JSON object.
	Body   []byte
	Stream bool
	Want   Want
}

// Want is what a capture must read as. Zero fields other than the token
// counts are not checked; token counts are always checked.
type Want struct {
	// Text and Refusal are prefixes of the turn's.
	Text    string
	Refusal string
	// ToolCalls are the names of the turn's tool calls, in order.
	ToolCalls    []string
	FinishReason string
	InputTokens  int64
	OutputTokens int64
	// CacheReadTokens is the part of InputTokens read from the cache.
	CacheReadTokens int64
	// ErrType, when set, is the Type of the *modelapi.Error an error
	// event in the stream gives.
	ErrType string
}

// Suite is what an API supplies to run the contract.
type Suite struct {
	// Request is a model call of the API as a client sends it to the
	// proxy: the path (below the proxy's prefixes) and the body, streamed
	// or not.
	Request func(stream bool) (path string, body []byte)
	// Captures holds the API's capture of each case it has one of.
	Captures map[Case]Capture
	// Missing says, for each case without a capture, why the corpus has
	// none: the case is skipped with that reason.
	Missing map[Case]string
}

// Run runs every case of the contract against api.
func Run(t *testing.T, api modelapi.API, s Suite) {
	if api.Wire == nil {
		t.Skipf("%s has no wire of its own (the proxy serves it over each registered wire, whose contracts cover it)", api.Name)
	}
	for _, c := range Cases {
		t.Run(string(c), func(t *testing.T) {
			capt, ok := s.Captures[c]
			if !ok {
				why := s.Missing[c]
				if why == "" {
					t.Fatalf("%s: no capture of %s and no reason given in Suite.Missing", api.Name, c)
				}
				t.Skip(why)
			}
			if len(capt.Body) == 0 {
				t.Fatalf("%s: capture of %s (%s) is empty", api.Name, c, capt.Source)
			}
			resp := checkParse(t, api, capt)
			if capt.Want.ErrType == "" {
				checkRender(t, api, resp)
			}
			checkRecordReplay(t, api, s, capt)
		})
	}
}

func checkParse(t *testing.T, api modelapi.API, c Capture) modelapi.Response {
	t.Helper()
	r, err := api.Wire.ParseResponse(c.Body, c.Stream, "requested-model")
	w := c.Want
	if w.ErrType != "" {
		var pe *modelapi.Error
		if !errorsAs(err, &pe) || pe.Type != w.ErrType {
			t.Errorf("parse %s: err = %v, want a %s error", c.Source, err, w.ErrType)
		}
		return r
	}
	if err != nil {
		t.Fatalf("parse %s: %v", c.Source, err)
	}
	var names []string
	for _, tc := range r.ToolCalls {
		names = append(names, tc.Name)
		if tc.ID == "" {
			t.Errorf("parse %s: tool call %s has no id", c.Source, tc.Name)
		}
	}
	switch {
	case !strings.HasPrefix(r.Text, w.Text):
		t.Errorf("parse %s: Text = %q, want it to begin %q", c.Source, r.Text, w.Text)
	case !strings.HasPrefix(r.Refusal, w.Refusal) || (w.Refusal != "") != (r.Refusal != ""):
		t.Errorf("parse %s: Refusal = %q, want %q…", c.Source, r.Refusal, w.Refusal)
	case !reflect.DeepEqual(names, w.ToolCalls):
		t.Errorf("parse %s: tool calls = %v, want %v", c.Source, names, w.ToolCalls)
	case w.FinishReason != "" && r.FinishReason != w.FinishReason:
		t.Errorf("parse %s: FinishReason = %q, want %q", c.Source, r.FinishReason, w.FinishReason)
	case r.InputTokens != w.InputTokens || r.OutputTokens != w.OutputTokens || r.CacheReadTokens != w.CacheReadTokens:
		t.Errorf("parse %s: usage in %d (cache read %d) out %d, want in %d (cache read %d) out %d", c.Source,
			r.InputTokens, r.CacheReadTokens, r.OutputTokens, w.InputTokens, w.CacheReadTokens, w.OutputTokens)
	}
	return r
}

// turn is the part of a Response an encoder renders: what replay must
// give back (not the provider's ids, model or visible reasoning, which
// the proxy replays from the recorded bytes instead). Tool arguments are
// compared as JSON: a rendered object may drop the model's spacing.
func turn(r modelapi.Response) modelapi.Response {
	calls := make([]session.ToolCall, len(r.ToolCalls))
	for i, tc := range r.ToolCalls {
		tc.Args = modelapi.Args(string(tc.Args))
		calls[i] = tc
	}
	return modelapi.Response{Text: r.Text, Refusal: r.Refusal, ToolCalls: calls, FinishReason: r.FinishReason,
		InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, CacheReadTokens: r.CacheReadTokens, CacheCreationTokens: r.CacheCreationTokens}
}

func checkRender(t *testing.T, api modelapi.API, r modelapi.Response) {
	t.Helper()
	for _, stream := range []bool{true, false} {
		rec := httptest.NewRecorder()
		enc := api.Wire.NewEncoder(rec, stream, api.Wire.ResponseID("contract", 1), "rendered-model")
		enc.Text(r.Text)
		enc.Finish(r)
		again := httptest.NewRecorder()
		enc2 := api.Wire.NewEncoder(again, stream, api.Wire.ResponseID("contract", 1), "rendered-model")
		enc2.Text(r.Text)
		enc2.Finish(r)
		if !bytes.Equal(rec.Body.Bytes(), again.Body.Bytes()) {
			t.Errorf("render (stream %v) is not deterministic:\n%s\n%s", stream, rec.Body.Bytes(), again.Body.Bytes())
		}
		got, err := api.Wire.ParseResponse(rec.Body.Bytes(), stream, "rendered-model")
		if err != nil {
			t.Fatalf("render (stream %v) does not parse: %v\n%s", stream, err, rec.Body.Bytes())
		}
		if g, w := turn(got), turn(r); !reflect.DeepEqual(g, w) {
			t.Errorf("render (stream %v) reads back as\n%+v\nwant\n%+v\n%s", stream, g, w, rec.Body.Bytes())
		}
	}
}

func checkRecordReplay(t *testing.T, api modelapi.API, s Suite, c Capture) {
	t.Helper()
	if s.Request == nil {
		t.Fatalf("%s: Suite.Request is nil", api.Name)
	}
	path, body := s.Request(c.Stream)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ct := "application/json"
		if c.Stream {
			ct = "text/event-stream; charset=utf-8"
		}
		w.Header().Set("Content-Type", ct)
		w.WriteHeader(http.StatusOK)
		// In pieces at odd offsets, flushed, as a real stream arrives.
		for b := c.Body; len(b) > 0; {
			k := min(len(b), 777)
			w.Write(b[:k])
			w.(http.Flusher).Flush()
			b = b[k:]
		}
	}))
	defer up.Close()
	b, err := proxy.NewUpstream(up.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	mem := &proxy.MemSessions{}
	got := serve(t, proxy.Config{Backend: b, Open: mem.Open}, path, body)
	if !bytes.Equal(got, c.Body) {
		t.Fatalf("record %s: the client got %d bytes, the upstream sent %d: the proxy must pass answers on byte for byte", c.Source, len(got), len(c.Body))
	}
	ids := mem.IDs()
	if len(ids) != 1 {
		t.Fatalf("record %s: %d sessions, want 1", c.Source, len(ids))
	}
	rec := mem.Get(ids[0])
	r, err := proxy.NewReplay(proxy.ReplayConfig{Events: rec.Events(), Artifacts: rec.ReadArtifact})
	if err != nil {
		t.Fatalf("replay %s: %v", c.Source, err)
	}
	again := serve(t, proxy.Config{Backend: r, Open: (&proxy.MemSessions{}).Open}, path, body)
	if !bytes.Equal(again, c.Body) {
		t.Fatalf("replay %s: served %d bytes differing from the recorded %d:\n%.400s", c.Source, len(again), len(c.Body), again)
	}
	if r.Diverged() {
		t.Fatalf("replay %s diverged: %+v", c.Source, r.Findings())
	}
}

// serve posts body to path on a proxy of cfg, closes the proxy (which
// finishes its sessions) and returns the answer's bytes.
func serve(t *testing.T, cfg proxy.Config, path string, body []byte) []byte {
	t.Helper()
	srv, err := proxy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	req, _ := http.NewRequest(http.MethodPost, hs.URL+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %d %s", path, resp.StatusCode, got)
	}
	if err := srv.Close(); err != nil {
		t.Fatalf("close proxy: %v", err)
	}
	return got
}

func errorsAs(err error, target **modelapi.Error) bool { return errors.As(err, target) }
