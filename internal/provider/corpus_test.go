package provider

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/agentctl/agentctl/internal/testenv/corpus"
)

// The corpus readers are package corpus's, shared with the proxy's tests
// and the model API contract suite.
func corpusDir(t *testing.T) string              { return corpus.Dir(t) }
func corpusFile(t *testing.T, rel string) []byte { return corpus.File(t, rel) }
func cassetteRequest(t *testing.T, rel string, i int) []byte {
	return corpus.CassetteRequest(t, rel, i)
}
func chunksToSSE(t *testing.T, lines []byte) []byte { return corpus.ChunksToSSE(t, lines) }
func cassetteBody(t *testing.T, rel string, i int) ([]byte, int) {
	return corpus.CassetteBody(t, rel, i)
}

// reply is one canned HTTP response.
type reply struct {
	status int
	header map[string]string
	body   []byte
	// hang, when set, writes body, flushes, then blocks until the client
	// goes away: a stream cut off mid-way by the caller's cancel.
	hang bool
}

func sseReply(body []byte) reply {
	return reply{status: 200, header: map[string]string{"Content-Type": "text/event-stream; charset=utf-8"}, body: body}
}

func jsonReply(status int, body []byte, header ...string) reply {
	h := map[string]string{"Content-Type": "application/json"}
	for i := 0; i+1 < len(header); i += 2 {
		h[header[i]] = header[i+1]
	}
	return reply{status: status, header: h, body: body}
}

// fakeServer is a loopback provider that serves replies in order (the last
// one repeats) and keeps every request body it saw.
type fakeServer struct {
	*httptest.Server
	mu       sync.Mutex
	replies  []reply
	requests [][]byte
	paths    []string
}

func newFakeServer(t *testing.T, replies ...reply) *fakeServer {
	t.Helper()
	f := &fakeServer{replies: replies}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	n := len(f.requests)
	f.requests = append(f.requests, body)
	f.paths = append(f.paths, r.URL.Path)
	rep := f.replies[min(n, len(f.replies)-1)]
	f.mu.Unlock()
	for k, v := range rep.header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(rep.status)
	_, _ = w.Write(rep.body)
	if rep.hang {
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}
}

func (f *fakeServer) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

func (f *fakeServer) request(t *testing.T, i int) map[string]any {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if i >= len(f.requests) {
		t.Fatalf("server saw %d requests, want index %d", len(f.requests), i)
	}
	var m map[string]any
	if err := json.Unmarshal(f.requests[i], &m); err != nil {
		t.Fatalf("request %d is not JSON: %v\n%s", i, err, f.requests[i])
	}
	return m
}

// canon encodes a decoded JSON value (from a request map) canonically:
// sorted keys, no spacing.
func canon(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// canonText is canon for JSON text.
func canonText(t *testing.T, s string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("canonText %q: %v", s, err)
	}
	return canon(t, v)
}
