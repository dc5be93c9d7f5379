package runner

import (
	"context"
	"fmt"

	"github.com/agentctl/agentctl/recorder"
	"github.com/agentctl/agentctl/runner/provider"
	"github.com/agentctl/agentctl/session"
)

// compactionPrompt asks for a summary that keeps what later turns need.
const compactionPrompt = `Summarise the conversation below for your own later use. Keep the goal,
every constraint the user stated, decisions taken, files touched and what is
left to do. Be concise; do not invent anything.`

// maybeCompact records a compaction when the projection passes the spec's
// threshold of the window. The summary is made from the original events on
// disk up to `through`, never from an earlier summary, and through stops
// before the latest assistant message so the current turn stays verbatim.
func (r *run) maybeCompact(ctx context.Context) error {
	c := r.cfg.Spec.Compaction
	msgs := r.st.projector.Messages()
	if float64(estimateTokens(msgs)) < c.Threshold*float64(c.Window) {
		return nil
	}
	if r.st.LastAssistantSeq == 0 {
		return nil
	}
	through := r.st.LastAssistantSeq - 1
	if through <= r.st.projector.Through() {
		return nil // nothing new to fold in; the window is simply too small
	}
	evs, _, err := recorder.ReadFile(r.cfg.Store.LogPath(r.id))
	if err != nil {
		return fmt.Errorf("compaction: read the log: %w", err)
	}
	msgs, seqs := CompactionMessages(evs, through)
	req := provider.Request{
		Model:     r.st.Model,
		Messages:  msgs,
		MaxTokens: r.cfg.Spec.Model.MaxTokens,
		Purpose:   provider.PurposeCompaction,
	}
	resp, err := r.cfg.Provider.Complete(ctx, req, nil)
	if err != nil {
		return fmt.Errorf("compaction: %w", err)
	}
	return r.append(
		r.modelCallEvent(req, resp, 0, ""),
		session.Event{Kind: session.KindCompaction, Through: through, Summary: resp.Text, SourceSeqs: seqs},
	)
}

// CompactionMessages is what a compaction through seq `through` asks the
// model to summarise: the runner's prompt, then the original conversational
// events up to through projected without any earlier compaction (a summary
// is never made from a summary). It also returns the seqs it read. Replay
// uses it to recompute the request digests of compaction calls.
func CompactionMessages(evs []session.Event, through int64) ([]session.Message, []int64) {
	var src []session.Event
	var seqs []int64
	for _, e := range evs {
		if e.Seq > through {
			break
		}
		switch e.Kind {
		case session.KindUserMessage, session.KindAssistantMessage, session.KindToolResult,
			session.KindReconciled, session.KindApprovalDenied, session.KindInterrupted:
			src = append(src, e)
			seqs = append(seqs, e.Seq)
		}
	}
	return append([]session.Message{{Role: session.RoleSystem, Content: compactionPrompt}}, session.Project(src, "")...), seqs
}
