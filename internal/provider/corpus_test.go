package provider

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"gopkg.in/yaml.v3"
)

// corpusDir is the corpus of recorded provider streams: the repository's
// byte-for-byte copy in testdata/corpus (see its README), or AGENTCTL_CORPUS.
// It is never skipped: a missing corpus fails the tests.
func corpusDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("AGENTCTL_CORPUS")
	if dir == "" {
		dir = filepath.Join("..", "..", "testdata", "corpus")
	}
	if _, err := os.Stat(filepath.Join(dir, "sse")); err != nil {
		t.Fatalf("corpus not found at %s (set AGENTCTL_CORPUS): %v", dir, err)
	}
	return dir
}

func corpusFile(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(corpusDir(t), filepath.FromSlash(rel)))
	if err != nil {
		t.Fatalf("read corpus file: %v", err)
	}
	return b
}

// cassetteBody returns the response body and status of interaction i of a
// VCR cassette: pydantic-ai's (response.body.string, response.status.code)
// or go-vcr v1's (response.body, response.code).
func cassetteBody(t *testing.T, rel string, i int) ([]byte, int) {
	t.Helper()
	var c struct {
		Interactions []struct {
			Request  yaml.Node `yaml:"request"`
			Response struct {
				Body   yaml.Node `yaml:"body"`
				Code   int       `yaml:"code"`
				Status yaml.Node `yaml:"status"`
			} `yaml:"response"`
		} `yaml:"interactions"`
	}
	if err := yaml.Unmarshal(corpusFile(t, rel), &c); err != nil {
		t.Fatalf("parse cassette %s: %v", rel, err)
	}
	if i >= len(c.Interactions) {
		t.Fatalf("cassette %s has %d interactions, want index %d", rel, len(c.Interactions), i)
	}
	r := c.Interactions[i].Response
	var body string
	if r.Body.Kind == yaml.MappingNode {
		var b struct {
			String string `yaml:"string"`
		}
		if err := r.Body.Decode(&b); err != nil {
			t.Fatal(err)
		}
		body = b.String
	} else if err := r.Body.Decode(&body); err != nil {
		t.Fatal(err)
	}
	code := r.Code
	if r.Status.Kind == yaml.MappingNode {
		var s struct {
			Code int `yaml:"code"`
		}
		if err := r.Status.Decode(&s); err != nil {
			t.Fatal(err)
		}
		code = s.Code
	}
	return []byte(body), code
}

// cassetteRequest returns the recorded request body of interaction i of a
// go-vcr cassette (a JSON string).
func cassetteRequest(t *testing.T, rel string, i int) []byte {
	t.Helper()
	var c struct {
		Interactions []struct {
			Request struct {
				Body string `yaml:"body"`
			} `yaml:"request"`
		} `yaml:"interactions"`
	}
	if err := yaml.Unmarshal(corpusFile(t, rel), &c); err != nil {
		t.Fatalf("parse cassette %s: %v", rel, err)
	}
	return []byte(c.Interactions[i].Request.Body)
}

// chunksToSSE frames vercel/ai's one-payload-per-line fixtures as the SSE
// the API sends ("event: <type>\ndata: <payload>\n\n"): the only change
// made to any corpus file before serving it, since those fixtures had the
// framing stripped.
func chunksToSSE(t *testing.T, lines []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(lines))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var ev struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(line, &ev); err != nil {
			t.Fatalf("chunk %q: %v", line, err)
		}
		out.WriteString("event: " + ev.Type + "\ndata: ")
		out.Write(line)
		out.WriteString("\n\n")
	}
	return out.Bytes()
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
