package cli_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
	"gopkg.in/yaml.v3"
)

// serve VAR REPLY...: answer HTTP requests on loopback with the replies in
// order, as the provider did, and set $VAR to the server's URL; a request
// after the last reply gets a 400. A REPLY is
//
//	corpus/REL          a recorded stream of testdata/corpus, byte for byte
//	corpus/REL#N        the response body of interaction N of a cassette there
//	derived/NAME        a stream of testdata/derived (built from a recorded one)
//	STATUS=FILE         an error response: FILE's bytes as JSON, Retry-After-Ms: 1
//
// The server runs in the test process until the script ends.
func serveReplies(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: serve VAR REPLY...")
	}
	type reply struct {
		status int
		body   []byte
	}
	var replies []reply
	repo := filepath.Join("..", "..", "testdata")
	for _, a := range args[1:] {
		switch {
		case strings.HasPrefix(a, "corpus/") || strings.HasPrefix(a, "derived/"):
			path, n, cassette := strings.Cut(a, "#")
			b, err := os.ReadFile(filepath.Join(repo, filepath.FromSlash(path)))
			ts.Check(err)
			if cassette {
				i, err := strconv.Atoi(n)
				ts.Check(err)
				b, err = cassetteBody(b, i)
				ts.Check(err)
			}
			replies = append(replies, reply{200, b})
		default:
			st, file, ok := strings.Cut(a, "=")
			code, err := strconv.Atoi(st)
			if !ok || err != nil {
				ts.Fatalf("serve: reply %q is not corpus/…, derived/… or STATUS=FILE", a)
			}
			b, err := os.ReadFile(ts.MkAbs(file))
			ts.Check(err)
			replies = append(replies, reply{code, b})
		}
	}
	var mu sync.Mutex
	next := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		i := next
		next++
		mu.Unlock()
		if i >= len(replies) {
			http.Error(w, `{"error":{"message":"no more recorded turns","type":"invalid_request_error"}}`, http.StatusBadRequest)
			return
		}
		rep := replies[i]
		if rep.status == 200 {
			w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		} else {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After-Ms", "1")
		}
		w.WriteHeader(rep.status)
		w.Write(rep.body)
	}))
	ts.Defer(srv.Close)
	ts.Setenv(args[0], srv.URL)
}

// cassetteBody is the response body of interaction i of a VCR cassette:
// pydantic-ai's response.body.string or go-vcr's response.body.
func cassetteBody(b []byte, i int) ([]byte, error) {
	var c struct {
		Interactions []struct {
			Response struct {
				Body yaml.Node `yaml:"body"`
			} `yaml:"response"`
		} `yaml:"interactions"`
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		return nil, err
	}
	if i >= len(c.Interactions) {
		return nil, fmt.Errorf("the cassette has %d interactions, want index %d", len(c.Interactions), i)
	}
	body := c.Interactions[i].Response.Body
	var s string
	if body.Kind == yaml.MappingNode {
		var m struct {
			String string `yaml:"string"`
		}
		if err := body.Decode(&m); err != nil {
			return nil, err
		}
		s = m.String
	} else if err := body.Decode(&s); err != nil {
		return nil, err
	}
	return []byte(s), nil
}

// cassetteSSE is the body of a cassette's first interaction.
func cassetteSSE(t *testing.T, cassette string) []byte {
	t.Helper()
	b, err := cassetteBody([]byte(cassette), 0)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
