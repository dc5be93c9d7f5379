package proxy

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/agentctl/agentctl/internal/testenv/corpus"
)

// The corpus readers are package corpus's, shared with the provider's
// tests and the model API contract suite.
func corpusDir(t testing.TB) string              { return corpus.Dir(t) }
func corpusFile(t testing.TB, rel string) []byte { return corpus.File(t, rel) }

// cassetteBody returns the response body of interaction i of a cassette.
func cassetteBody(t testing.TB, rel string, i int) []byte {
	b, _ := corpus.CassetteBody(t, rel, i)
	return b
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
