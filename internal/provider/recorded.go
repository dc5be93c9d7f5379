package provider

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentctl/agentctl/internal/session"
)

// ErrRecordingExhausted matches (with errors.Is) the error a Recorded model
// returns when the run asks for more turns than the session recorded.
var ErrRecordingExhausted = errors.New("recorded: the recording has no more turns")

// Recorded stands in for the model during an offline replay: it answers
// each turn with the next assistant_message of a recorded session (text,
// tool calls with their recorded ids, and the usage of the model_call that
// came with it), and each compaction request with the next recorded
// compaction summary. It never touches the network and needs no key. It is
// not safe for concurrent use: Complete serves turns from a counter.
type Recorded struct {
	turns     []Response
	summaries []Response
	turn      int
	summary   int
}

var _ Provider = (*Recorded)(nil)

// NewRecorded reads the answers out of a session's events.
func NewRecorded(evs []session.Event) *Recorded {
	r := &Recorded{}
	for i, e := range evs {
		var call session.Event
		if i+1 < len(evs) && evs[i+1].Kind == session.KindModelCall {
			call = evs[i+1]
		}
		switch e.Kind {
		case session.KindAssistantMessage:
			resp := Response{Text: e.Text, Refusal: e.Refusal, ToolCalls: e.ToolCalls, InputTokens: e.InputTokens,
				OutputTokens: e.OutputTokens, Model: call.Model, CostUSD: call.CostUSD, FinishReason: call.FinishReason,
				CacheReadTokens: call.CacheReadInputTokens, CacheCreationTokens: call.CacheCreationInputTokens,
				ResponseID: call.ResponseID}
			if resp.FinishReason == "" {
				resp.FinishReason = FinishStop
				if len(e.ToolCalls) > 0 {
					resp.FinishReason = FinishToolCalls
				}
			}
			r.turns = append(r.turns, resp)
		case session.KindCompaction:
			resp := Response{Text: e.Summary, FinishReason: FinishStop}
			if i > 0 && evs[i-1].Kind == session.KindModelCall {
				c := evs[i-1]
				resp.InputTokens, resp.OutputTokens, resp.Model, resp.CostUSD = c.InputTokens, c.OutputTokens, c.Model, c.CostUSD
				resp.CacheReadTokens, resp.CacheCreationTokens, resp.ResponseID = c.CacheReadInputTokens, c.CacheCreationInputTokens, c.ResponseID
			}
			r.summaries = append(r.summaries, resp)
		}
	}
	return r
}

// Name returns "recorded".
func (r *Recorded) Name() string { return "recorded" }

// Turns is the number of recorded assistant turns.
func (r *Recorded) Turns() int { return len(r.turns) }

// Turn reports how many turns have been served.
func (r *Recorded) Turn() int { return r.turn }

// SetTurn sets how many turns have been served, so a resumed replay goes on
// with the next recorded turn.
func (r *Recorded) SetTurn(n int) { r.turn = n }

// Complete serves the next recorded turn (or compaction summary), streaming
// its text in one piece.
func (r *Recorded) Complete(ctx context.Context, req Request, onText func(string)) (Response, error) {
	if err := ctx.Err(); err != nil {
		return Response{}, err
	}
	if req.Purpose == PurposeCompaction {
		if r.summary >= len(r.summaries) {
			return Response{}, fmt.Errorf("%w: the replay compacted %d times, the recording %d", ErrRecordingExhausted, r.summary+1, len(r.summaries))
		}
		resp := r.summaries[r.summary]
		r.summary++
		emit(onText, resp.Text)
		return resp, nil
	}
	if r.turn >= len(r.turns) {
		return Response{}, fmt.Errorf("%w: it has %d turns and the replay asked for turn %d", ErrRecordingExhausted, len(r.turns), r.turn+1)
	}
	resp := r.turns[r.turn]
	r.turn++
	emit(onText, resp.Text)
	return resp, nil
}
