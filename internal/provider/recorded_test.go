package provider

import (
	"context"
	"errors"
	"testing"

	"github.com/agentctl/agentctl/internal/session"
)

func TestRecordedServesTurnsInOrder(t *testing.T) {
	evs := []session.Event{
		{Seq: 1, Kind: session.KindSessionStarted},
		{Seq: 2, Kind: session.KindUserMessage, Text: "go"},
		{Seq: 3, Kind: session.KindAssistantMessage, Text: "reading", ToolCalls: []session.ToolCall{{ID: "c1", Name: "read_file", Args: []byte(`{"path":"a"}`)}}, InputTokens: 10, OutputTokens: 2},
		{Seq: 4, Kind: session.KindModelCall, Model: "m-1", CostUSD: 0.5, FinishReason: "tool_calls"},
		{Seq: 5, Kind: session.KindModelCall, Model: "m-1", Attrs: []byte(`{"purpose":"compaction"}`), InputTokens: 7},
		{Seq: 6, Kind: session.KindCompaction, Summary: "so far"},
		{Seq: 7, Kind: session.KindAssistantMessage, Text: "done"},
		{Seq: 8, Kind: session.KindModelCall, Model: "m-1"},
	}
	r := NewRecorded(evs)
	ctx := context.Background()
	got, err := r.Complete(ctx, Request{}, nil)
	if err != nil || got.Text != "reading" || got.ToolCalls[0].ID != "c1" || got.InputTokens != 10 || got.CostUSD != 0.5 || got.Model != "m-1" {
		t.Fatalf("turn 1 = %+v, %v", got, err)
	}
	s, err := r.Complete(ctx, Request{Purpose: PurposeCompaction}, nil)
	if err != nil || s.Text != "so far" || s.InputTokens != 7 {
		t.Fatalf("summary = %+v, %v", s, err)
	}
	got, _ = r.Complete(ctx, Request{}, nil)
	if got.Text != "done" || got.FinishReason != FinishStop {
		t.Fatalf("turn 2 = %+v", got)
	}
	if _, err := r.Complete(ctx, Request{}, nil); !errors.Is(err, ErrRecordingExhausted) {
		t.Fatalf("turn 3 error = %v, want ErrRecordingExhausted", err)
	}
	r.SetTurn(1)
	if got, _ := r.Complete(ctx, Request{}, nil); got.Text != "done" {
		t.Fatalf("after SetTurn(1) = %q, want done", got.Text)
	}
}
