// Package corpus reads the corpus of recorded provider streams and
// transcripts the tests run against: the repository's byte-for-byte copy
// in testdata/corpus (see its README and SOURCES.md), or the folder
// AGENTCTL_CORPUS names. It is never skipped: a missing corpus fails the
// test. The helpers are shared by every package that feeds real captures
// to a parser (provider, proxy, the model API contract suite), so that a
// cassette is read one way.
package corpus

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"gopkg.in/yaml.v3"
)

// Dir is the corpus folder: AGENTCTL_CORPUS, else testdata/corpus at the
// root of the module the test runs in (found from the working directory
// up to go.mod).
func Dir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("AGENTCTL_CORPUS")
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			t.Fatal(err)
		}
		for d := wd; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
				dir = filepath.Join(d, "testdata", "corpus")
				break
			}
			if filepath.Dir(d) == d {
				t.Fatalf("corpus: no go.mod above %s (set AGENTCTL_CORPUS)", wd)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "sse")); err != nil {
		t.Fatalf("corpus not found at %s (set AGENTCTL_CORPUS): %v", dir, err)
	}
	return dir
}

// File returns the bytes of the corpus file rel (slash-separated).
func File(t testing.TB, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(Dir(t), filepath.FromSlash(rel)))
	if err != nil {
		t.Fatalf("read corpus file: %v", err)
	}
	return b
}

// CassetteBody returns the response body and status of interaction i of
// a VCR cassette: pydantic-ai's (response.body.string,
// response.status.code) or go-vcr v1's (response.body, response.code).
func CassetteBody(t testing.TB, rel string, i int) ([]byte, int) {
	t.Helper()
	var c struct {
		Interactions []struct {
			Response struct {
				Body   yaml.Node `yaml:"body"`
				Code   int       `yaml:"code"`
				Status yaml.Node `yaml:"status"`
			} `yaml:"response"`
		} `yaml:"interactions"`
	}
	if err := yaml.Unmarshal(File(t, rel), &c); err != nil {
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

// CassetteRequest returns the recorded request body of interaction i of a
// go-vcr cassette (a JSON string).
func CassetteRequest(t testing.TB, rel string, i int) []byte {
	t.Helper()
	var c struct {
		Interactions []struct {
			Request struct {
				Body string `yaml:"body"`
			} `yaml:"request"`
		} `yaml:"interactions"`
	}
	if err := yaml.Unmarshal(File(t, rel), &c); err != nil {
		t.Fatalf("parse cassette %s: %v", rel, err)
	}
	return []byte(c.Interactions[i].Request.Body)
}

// ChunksToSSE frames vercel/ai's one-payload-per-line fixtures as the SSE
// the API sends ("event: <type>\ndata: <payload>\n\n"): the only change
// made to any corpus file before serving it, since those fixtures had the
// framing stripped.
func ChunksToSSE(t testing.TB, lines []byte) []byte {
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
