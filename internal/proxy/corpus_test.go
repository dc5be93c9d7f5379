package proxy

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"gopkg.in/yaml.v3"
)

// corpusDir is the corpus of recorded provider streams (the repository's
// byte-for-byte copy in testdata/corpus, or AGENTCTL_CORPUS). A missing
// corpus fails the tests: it is never skipped.
func corpusDir(t testing.TB) string {
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

func corpusFile(t testing.TB, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(corpusDir(t), filepath.FromSlash(rel)))
	if err != nil {
		t.Fatalf("read corpus file: %v", err)
	}
	return b
}

// cassetteBody returns the response body of interaction i of a pydantic-ai
// VCR cassette (response.body.string).
func cassetteBody(t testing.TB, rel string, i int) []byte {
	t.Helper()
	var c struct {
		Interactions []struct {
			Response struct {
				Body struct {
					String string `yaml:"string"`
				} `yaml:"body"`
			} `yaml:"response"`
		} `yaml:"interactions"`
	}
	if err := yaml.Unmarshal(corpusFile(t, rel), &c); err != nil {
		t.Fatalf("parse cassette %s: %v", rel, err)
	}
	return []byte(c.Interactions[i].Response.Body.String)
}

// reply is one canned upstream answer.
type reply struct {
	status int
	ctype  string
	body   []byte
	// hang writes half the body, then waits for the client to go away.
	hang bool
}

// upstream is a loopback provider serving replies in order (the last
// repeats), written in pieces at odd offsets with a flush after each, as
// a real stream arrives. It keeps the requests it saw.
type upstream struct {
	*httptest.Server
	mu      sync.Mutex
	replies []reply
	headers []http.Header
	paths   []string
}

func newUpstream(t testing.TB, replies ...reply) *upstream {
	u := &upstream{replies: replies}
	u.Server = httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) serve(w http.ResponseWriter, r *http.Request) {
	u.mu.Lock()
	n := len(u.headers)
	u.headers = append(u.headers, r.Header.Clone())
	u.paths = append(u.paths, r.URL.RequestURI())
	rep := u.replies[min(n, len(u.replies)-1)]
	u.mu.Unlock()
	w.Header().Set("Content-Type", rep.ctype)
	w.Header().Set("Request-Id", "req_upstream")
	w.WriteHeader(rep.status)
	body := rep.body
	if rep.hang {
		w.Write(body[:len(body)/2])
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		return
	}
	for len(body) > 0 {
		k := min(len(body), 777)
		w.Write(body[:k])
		w.(http.Flusher).Flush()
		body = body[k:]
	}
}

func (u *upstream) seen() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.headers)
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }
