// Package transcripttest derives, from real transcripts, the shapes of
// other versions of their tools that the corpus holds no file of, for the
// importers' tests. Each derivation changes only what it says.
package transcripttest

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
)

var leadingParent = regexp.MustCompile(`^\{"parentUuid":"[^"]+"`)

// ClaudeCode21 re-parents each tool_result line of a Claude Code JSONL
// transcript (its lines, without newlines) onto the assistant line that
// holds its call, the way Claude Code 2.1.x writes parallel calls: each
// call its own assistant line under one message.id, each result hanging
// off its own call's line (parentUuid) rather than off the result before
// it. Nothing but those parentUuids changes. It fails when no line moves
// (the file has no parallel calls).
func ClaudeCode21(lines []string) ([]string, error) {
	owner := map[string]string{} // tool_use id -> uuid of its line
	for i, l := range lines {
		var r struct {
			Type    string `json:"type"`
			UUID    string `json:"uuid"`
			Message struct {
				Content json.RawMessage `json:"content"`
			} `json:"message"`
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		var blocks []struct{ Type, ID string }
		if r.Type == "assistant" && json.Unmarshal(r.Message.Content, &blocks) == nil {
			for _, b := range blocks {
				if b.Type == "tool_use" {
					owner[b.ID] = r.UUID
				}
			}
		}
	}
	out := make([]string, len(lines))
	moved := 0
	for i, l := range lines {
		out[i] = l
		var r struct {
			Type    string `json:"type"`
			Message struct {
				Content []struct {
					Type      string `json:"type"`
					ToolUseID string `json:"tool_use_id"`
				} `json:"content"`
			} `json:"message"`
		}
		if json.Unmarshal([]byte(l), &r) != nil || r.Type != "user" || len(r.Message.Content) != 1 || r.Message.Content[0].Type != "tool_result" {
			continue
		}
		u := owner[r.Message.Content[0].ToolUseID]
		if u == "" || !leadingParent.MatchString(l) {
			return nil, fmt.Errorf("line %d: a result whose call's line is unknown, or no leading parentUuid", i+1)
		}
		if out[i] = leadingParent.ReplaceAllString(l, `{"parentUuid":"`+u+`"`); out[i] != l {
			moved++
		}
	}
	if moved == 0 {
		return nil, errors.New("no result line moved: the transcript has no parallel calls")
	}
	return out, nil
}
