package replay

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/agentctl/agentctl/runner/provider"
	"github.com/agentctl/agentctl/session"
)

// ImportedClaudeCode is the imported_from value of sessions made by
// ImportClaudeCode.
const ImportedClaudeCode = "claude-code"

// ccLine is the part of a Claude Code transcript line the importer reads
// (format: FORMATS.md section 2.1 of the corpus).
type ccLine struct {
	Type             string    `json:"type"`
	Subtype          string    `json:"subtype"`
	UUID             string    `json:"uuid"`
	SessionID        string    `json:"sessionId"`
	Cwd              string    `json:"cwd"`
	Version          string    `json:"version"`
	Timestamp        time.Time `json:"timestamp"`
	IsSidechain      bool      `json:"isSidechain"`
	IsMeta           bool      `json:"isMeta"`
	IsCompactSummary bool      `json:"isCompactSummary"`
	Message          *struct {
		ID         string          `json:"id"`
		Role       string          `json:"role"`
		Model      string          `json:"model"`
		Content    json.RawMessage `json:"content"`
		StopReason string          `json:"stop_reason"`
		Usage      *struct {
			InputTokens              int64 `json:"input_tokens"`
			OutputTokens             int64 `json:"output_tokens"`
			CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
			CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
			CacheCreation            struct {
				Ephemeral1h int64 `json:"ephemeral_1h_input_tokens"`
			} `json:"cache_creation"`
		} `json:"usage"`
	} `json:"message"`
}

type ccBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   *bool           `json:"is_error"`
}

// ImportClaudeCode turns a Claude Code session transcript into events: the
// lines of one API response (split one content block per line, sharing
// message.id) become one assistant_message and one model_call without a
// request digest (usage counted once, as the live provider counts it:
// input_tokens holds the cache reads and writes, kept apart as
// cache_read_input_tokens and cache_creation_input_tokens, and cost_usd
// prices each part); tool_result blocks become
// tool_result events; the compact summary becomes a compaction event
// (through = the last event before it, no source_seqs: the transcript does
// not say what was read). Thinking blocks, sub-agent (sidechain) lines,
// meta lines, titles and file snapshots are not part of the conversation
// and are skipped. The header names the source in attrs
// {"imported_from":"claude-code","source_session_id":...}. Seqs are dense
// from 1; id becomes the session id.
func ImportClaudeCode(r io.Reader, id string) ([]session.Event, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 64<<20)
	var out []session.Event
	hdr := session.Event{Kind: session.KindSessionStarted, SessionID: id, Provider: "anthropic"}
	var srcID, version string
	add := func(e session.Event) {
		e.Seq = int64(len(out) + 2)
		out = append(out, e)
	}
	toolNames := map[string]string{}
	// The assistant response being gathered.
	var cur *session.Event
	var call session.Event
	curID := ""
	flush := func() {
		if cur == nil {
			return
		}
		add(*cur)
		add(call)
		cur, curID = nil, ""
	}
	line := 0
	for sc.Scan() {
		line++
		if len(strings.TrimSpace(sc.Text())) == 0 {
			continue
		}
		var l ccLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("replay: import claude-code line %d: %w", line, err)
		}
		if l.IsSidechain || l.Message == nil || (l.Type != "user" && l.Type != "assistant") {
			continue
		}
		if srcID == "" && l.SessionID != "" {
			srcID, version, hdr.Workspace, hdr.TS = l.SessionID, l.Version, l.Cwd, l.Timestamp
		}
		m := l.Message
		var blocks []ccBlock
		var text string
		if len(m.Content) > 0 && m.Content[0] == '"' {
			_ = json.Unmarshal(m.Content, &text)
		} else if err := json.Unmarshal(m.Content, &blocks); err != nil {
			return nil, fmt.Errorf("replay: import claude-code line %d: content: %w", line, err)
		}
		if l.Type == "assistant" {
			if hdr.Model == "" {
				hdr.Model = m.Model
			}
			if cur == nil || m.ID != curID {
				flush()
				cur = &session.Event{Kind: session.KindAssistantMessage, TS: l.Timestamp}
				call = session.Event{Kind: session.KindModelCall, TS: l.Timestamp, Provider: "anthropic", Model: m.Model,
					FinishReason: m.StopReason, ResponseID: m.ID, Attrs: json.RawMessage(`{"imported_from":"claude-code"}`)}
				if u := m.Usage; u != nil {
					// The rule of the live provider: billed input counts the
					// cache reads and writes, kept apart as the breakdown,
					// and each part is priced at its own rate.
					bill := provider.Usage{Input: u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens,
						CacheRead: u.CacheReadInputTokens, CacheCreation: u.CacheCreationInputTokens,
						CacheCreation1h: u.CacheCreation.Ephemeral1h, Output: u.OutputTokens}
					call.InputTokens, call.OutputTokens = bill.Input, bill.Output
					call.CacheReadInputTokens, call.CacheCreationInputTokens = bill.CacheRead, bill.CacheCreation
					call.CostUSD = provider.CostOf(m.Model, bill)
					cur.InputTokens, cur.OutputTokens = call.InputTokens, call.OutputTokens
				}
				curID = m.ID
			}
			if m.StopReason != "" {
				call.FinishReason = m.StopReason
			}
			for _, b := range blocks {
				switch b.Type {
				case "text":
					if cur.Text != "" {
						cur.Text += "\n"
					}
					cur.Text += b.Text
				case "tool_use":
					args := b.Input
					if len(args) == 0 {
						args = json.RawMessage(`{}`)
					}
					cur.ToolCalls = append(cur.ToolCalls, session.ToolCall{ID: b.ID, Name: b.Name, Args: args})
					toolNames[b.ID] = b.Name
				}
			}
			continue
		}
		// A user line ends the assistant response before it.
		flush()
		if l.IsMeta {
			continue
		}
		if l.IsCompactSummary {
			through := int64(len(out) + 1)
			add(session.Event{Kind: session.KindCompaction, TS: l.Timestamp, Through: through, Summary: text + blockText(blocks)})
			continue
		}
		if text != "" {
			add(session.Event{Kind: session.KindUserMessage, TS: l.Timestamp, Text: text})
			continue
		}
		var userText []string
		for _, b := range blocks {
			switch b.Type {
			case "tool_result":
				e := session.Event{Kind: session.KindToolResult, TS: l.Timestamp, CallID: b.ToolUseID, Tool: toolNames[b.ToolUseID],
					Status: session.ResultOK, Output: resultContent(b.Content)}
				if b.IsError != nil && *b.IsError {
					e.Status = session.ResultError
				}
				add(e)
			case "text":
				userText = append(userText, b.Text)
			}
		}
		if len(userText) > 0 {
			add(session.Event{Kind: session.KindUserMessage, TS: l.Timestamp, Text: strings.Join(userText, "\n")})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("replay: import claude-code: %w", err)
	}
	flush()
	if srcID == "" {
		return nil, fmt.Errorf("replay: import claude-code: no user or assistant lines; is this a Claude Code session transcript?")
	}
	hdr.Seq = 1
	hdr.Name = "claude-code " + srcID
	attrs, _ := json.Marshal(map[string]string{"imported_from": ImportedClaudeCode, "source_session_id": srcID, "source_version": version})
	hdr.Attrs = attrs
	return append([]session.Event{hdr}, out...), nil
}

func blockText(bs []ccBlock) string {
	var parts []string
	for _, b := range bs {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// resultContent reads a tool_result's content: a string, or text blocks.
func resultContent(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var bs []ccBlock
	if json.Unmarshal(raw, &bs) == nil {
		return blockText(bs)
	}
	return string(raw)
}
