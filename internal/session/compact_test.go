package session

import (
	"reflect"
	"strings"
	"testing"
)

func TestCutRunes(t *testing.T) {
	for _, c := range []struct {
		s       string
		n       int
		fromEnd bool
		want    string
	}{
		{"abc", 5, false, "abc"},
		{"abcdef", 2, false, "ab"},
		{"abcdef", 2, true, "ef"},
		{"aé", 2, false, "a"}, // é is two bytes: cutting after one splits it
		{"éa", 2, true, "a"},
		{"é", 0, false, ""},
	} {
		if got := CutRunes(c.s, c.n, c.fromEnd); got != c.want {
			t.Errorf("CutRunes(%q, %d, %v) = %q, want %q", c.s, c.n, c.fromEnd, got, c.want)
		}
	}
}

// TestCompactionChunks: a chunk starts only at a turn, and a turn that
// passes the limit alone is its own chunk, fitted by CompactionMessages.
func TestCompactionChunks(t *testing.T) {
	long := strings.Repeat("x", 4000)
	evs := []Event{
		{Seq: 1, Kind: KindSessionStarted},
		{Seq: 2, Kind: KindUserMessage, Text: "goal"},
		{Seq: 3, Kind: KindAssistantMessage, Text: "ok", ToolCalls: []ToolCall{{ID: "c1", Name: "read"}}},
		{Seq: 4, Kind: KindToolResult, CallID: "c1", Tool: "read", Output: long},
		{Seq: 5, Kind: KindAssistantMessage, Text: "done"},
		{Seq: 6, Kind: KindModelCall},
	}
	got := CompactionChunks(evs, 1, 6, 500)
	want := []Chunk{{2, 2}, {3, 4}, {5, 6}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("CompactionChunks = %v, want %v", got, want)
	}
	msgs, seqs := CompactionMessages(evs, 3, 4, 500)
	if !reflect.DeepEqual(seqs, []int64{3, 4}) {
		t.Errorf("CompactionMessages seqs = %v, want [3 4]", seqs)
	}
	if n := EstimateTokens(msgs); n > 500 {
		t.Errorf("CompactionMessages fitted to 500 tokens: estimate %d", n)
	}
	if msgs[0].Role != RoleSystem || msgs[0].Content != compactionPrompt {
		t.Errorf("CompactionMessages[0] = %+v, want the prompt", msgs[0])
	}
}
