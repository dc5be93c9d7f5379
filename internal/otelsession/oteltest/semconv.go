package oteltest

import (
	"crypto/sha1"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/agentctl/agentctl/internal/testenv"
)

// The versions of the GenAI conventions the test corpus holds
// (testdata/corpus/semconv, rows in its SOURCES.md).
const (
	// V141 is semantic-conventions v1.41.1, the last release that carries
	// the GenAI conventions (what Go's semconv/v1.41.0 encodes).
	V141 = "open-telemetry__semantic-conventions@v1.41.1"
	// GenAIRepo is semantic-conventions-genai, where they moved, as of
	// 2026-05-11.
	GenAIRepo = "trask__semantic-conventions-genai@34beb964"
)

// Conventions is what the corpus's copies of the conventions define.
type Conventions struct {
	// Attributes maps each registry attribute to the versions defining it.
	Attributes map[string][]string
	// Events maps each event name to the versions defining it.
	Events map[string][]string
	// Deprecated holds the attributes v1.41.1's registry page lists as
	// deprecated (gen_ai.system, gen_ai.usage.prompt_tokens, …), which
	// emitters of earlier versions still send.
	Deprecated map[string]bool
}

// Has reports whether version defines the attribute name.
func (c Conventions) Has(version, name string) bool {
	for _, v := range c.Attributes[name] {
		if v == version {
			return true
		}
	}
	return false
}

// LoadConventions parses the registry and events of both versions from
// the corpus, after checking each file is the recorded one (its git blob
// id against SOURCES.md): a test of names against an edited copy would
// prove nothing.
func LoadConventions(t testing.TB) Conventions {
	t.Helper()
	dir := filepath.Join(testenv.Root(), "testdata", "corpus")
	sources, err := os.ReadFile(filepath.Join(dir, "SOURCES.md"))
	if err != nil {
		t.Fatal(err)
	}
	read := func(rel string) []byte {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatalf("read corpus file: %v", err)
		}
		m := regexp.MustCompile("(?m)^\\| `" + regexp.QuoteMeta(rel) + "` \\|.*?\\| `([0-9a-f]{12})` \\|").FindSubmatch(sources)
		if m == nil {
			t.Fatalf("%s has no row in testdata/corpus/SOURCES.md", rel)
		}
		h := sha1.New()
		fmt.Fprintf(h, "blob %d\x00", len(b))
		h.Write(b)
		if got := fmt.Sprintf("%x", h.Sum(nil)); !strings.HasPrefix(got, string(m[1])) {
			t.Fatalf("%s: git blob %s, SOURCES.md says %s: the copy was edited", rel, got[:12], m[1])
		}
		return b
	}
	c := Conventions{Attributes: map[string][]string{}, Events: map[string][]string{}, Deprecated: map[string]bool{}}
	unmarshal := func(rel string, v any) {
		t.Helper()
		if err := yaml.Unmarshal(read(rel), v); err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
	}

	// v1.41.1: definition/1, groups of attributes (id) and events (name).
	var old struct {
		Groups []struct {
			Type       string `yaml:"type"`
			Name       string `yaml:"name"`
			Attributes []struct {
				ID string `yaml:"id"`
			} `yaml:"attributes"`
		} `yaml:"groups"`
	}
	unmarshal("semconv/"+V141+"/model/gen-ai/registry.yaml", &old)
	for _, g := range old.Groups {
		for _, a := range g.Attributes {
			if a.ID != "" {
				c.Attributes[a.ID] = append(c.Attributes[a.ID], V141)
			}
		}
	}
	old.Groups = nil
	unmarshal("semconv/"+V141+"/model/gen-ai/events.yaml", &old)
	for _, g := range old.Groups {
		if g.Type == "event" {
			c.Events[g.Name] = append(c.Events[g.Name], V141)
		}
	}
	page := read("semconv/" + V141 + "/docs/registry/attributes/gen-ai.md")
	for _, m := range regexp.MustCompile("(?m)^\\| <a id=\"[^\"]*\" href=\"[^\"]*\">`([a-z0-9_.]+)`</a> \\| !\\[Deprecated\\]").FindAllSubmatch(page, -1) {
		c.Deprecated[string(m[1])] = true
	}

	// semantic-conventions-genai: definition/2, attributes by key, events
	// by name.
	var reg struct {
		Attributes []struct {
			Key string `yaml:"key"`
		} `yaml:"attributes"`
	}
	unmarshal("semconv/"+GenAIRepo+"/model/gen-ai/registry.yaml", &reg)
	for _, a := range reg.Attributes {
		c.Attributes[a.Key] = append(c.Attributes[a.Key], GenAIRepo)
	}
	var evs struct {
		Events []struct {
			Name string `yaml:"name"`
		} `yaml:"events"`
	}
	unmarshal("semconv/"+GenAIRepo+"/model/gen-ai/events.yaml", &evs)
	for _, e := range evs.Events {
		c.Events[e.Name] = append(c.Events[e.Name], GenAIRepo)
	}
	if len(c.Attributes) < 40 || len(c.Events) < 3 || len(c.Deprecated) < 5 {
		t.Fatalf("corpus conventions: %d attributes, %d events, %d deprecated: the parse missed them", len(c.Attributes), len(c.Events), len(c.Deprecated))
	}
	return c
}
