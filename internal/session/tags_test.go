package session

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func TestParseTag(t *testing.T) {
	for _, tt := range []struct {
		in, k, v, err string
	}{
		{in: "env=ci", k: "env", v: "ci"},
		{in: "eval.suite=smoke-1", k: "eval.suite", v: "smoke-1"},
		{in: "q=a=b", k: "q", v: "a=b"},
		{in: "empty=", k: "empty", v: ""},
		{in: "env", err: "not KEY=VALUE"},
		{in: "Env=ci", err: "tag key \"Env\""},
		{in: "=ci", err: "tag key \"\""},
		{in: "a b=c", err: "tag key"},
		{in: strings.Repeat("k", 65) + "=v", err: "1 to 64"},
		{in: "k=" + strings.Repeat("v", 257), err: "257 bytes, at most 256"},
	} {
		k, v, err := ParseTag(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseTag(%q) = %v, want error with %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || k != tt.k || v != tt.v {
			t.Errorf("ParseTag(%q) = %q, %q, %v", tt.in, k, v, err)
		}
	}
	many := map[string]string{}
	for i := range MaxTags + 1 {
		many[fmt.Sprintf("k%d", i)] = ""
	}
	if err := ValidateTags(many); err == nil || !strings.Contains(err.Error(), "at most 64") {
		t.Errorf("ValidateTags(65 tags) = %v", err)
	}
}

// Tags from a span are made to fit, never refused: the run recorded them.
func TestCleanTags(t *testing.T) {
	long := strings.Repeat("é", 200) // 400 bytes
	got, dropped := CleanTags(map[string]string{"Env": "ci", "bad key": "x", "v": long, "ok": "\xff"})
	if dropped != 1 || got["env"] != "ci" || len(got["v"]) != 256 || got["v"] != strings.Repeat("é", 128) || got["ok"] != "\uFFFD" || len(got) != 3 {
		t.Errorf("CleanTags = %q, dropped %d", got, dropped)
	}
	many := map[string]string{}
	for i := range MaxTags + 3 {
		many[fmt.Sprintf("k%03d", i)] = ""
	}
	if got, dropped := CleanTags(many); len(got) != MaxTags || dropped != 3 {
		t.Errorf("CleanTags(67) = %d tags, %d dropped", len(got), dropped)
	}
}

func TestWithTags(t *testing.T) {
	tags := map[string]string{"team": "a", "env": "ci"}
	for _, tt := range []struct {
		attrs, user, want string
		tags              map[string]string
	}{
		{attrs: `{"tools":["bash"]}`, tags: tags, user: "alice", want: `{"tools":["bash"],"tags":{"env":"ci","team":"a"},"user_id":"alice"}`},
		{attrs: ``, tags: tags, want: `{"tags":{"env":"ci","team":"a"}}`},
		{attrs: `{}`, user: "bob", want: `{"user_id":"bob"}`},
		{attrs: `{"tools":[]}`, want: `{"tools":[]}`},
		{attrs: `[1]`, tags: tags, want: `[1]`},
		// A header that has tags (a fork's, copied from its parent): the
		// new ones over them, one key each.
		{attrs: `{"z":1,"tags":{"env":"dev","keep":"x"},"user_id":"u"}`, tags: tags, want: `{"tags":{"env":"ci","keep":"x","team":"a"},"user_id":"u","z":1}`},
	} {
		got := WithTags(json.RawMessage(tt.attrs), tt.tags, tt.user)
		if string(got) != tt.want {
			t.Errorf("WithTags(%s) = %s, want %s", tt.attrs, got, tt.want)
		}
		if tt.attrs == `[1]` {
			continue
		}
		var want struct {
			Tags map[string]string `json:"tags"`
			User string            `json:"user_id"`
		}
		if err := json.Unmarshal([]byte(tt.want), &want); err != nil {
			t.Fatal(err)
		}
		h := Event{Kind: KindSessionStarted, Attrs: got}
		if fmt.Sprint(HeaderTags(h)) != fmt.Sprint(want.Tags) || HeaderUserID(h) != want.User {
			t.Errorf("HeaderTags, HeaderUserID(%s) = %v, %q", got, HeaderTags(h), HeaderUserID(h))
		}
	}
}
