package ui

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/termsafe"
)

func init() {
	register(route{pattern: "GET /api/sessions/{id}/events", handle: sessionEvents})
}

// maxLiveRows bounds what one live connection sends: past it the stream
// ends with a note and the page offers a reload (the timeline is paged;
// an open page is not where a million events are read).
const maxLiveRows = 5000

// liveRow is a row and the session's figures after it, as the fold
// makes them, formatted as the page's header shows them.
type liveRow struct {
	row
	Figures figures `json:"figures"`
}

type figures struct {
	In        string `json:"in"`
	Out       string `json:"out"`
	Cost      string `json:"cost"`
	Turns     int    `json:"turns"`
	ToolCalls int64  `json:"tool_calls"`
}

// sessionEvents streams a session's events after seq ?after= as they
// become durable (recorder.Store.Follow), as server-sent events: each
// "data:" is a row (the timeline's row, cleaned as the page's), and an
// "end" event says the session finished or no process writes it any more.
func sessionEvents(c *Ctx) error {
	id, err := c.resolve(c.R.PathValue("id"))
	if err != nil {
		return err
	}
	st := c.store()
	var after int64
	if a := c.R.URL.Query().Get("after"); a != "" {
		if after, err = strconv.ParseInt(a, 10, 64); err != nil || after < 0 {
			return badRequest("after=%q: give the last seq the page shows", a)
		}
	}
	fl, ok := c.W.(http.Flusher)
	if !ok {
		return fmt.Errorf("ui: the connection cannot stream")
	}
	h := c.W.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	c.W.WriteHeader(http.StatusOK)
	fmt.Fprint(c.W, ": agentctl ui live events\n\n")
	fl.Flush()
	var hdr session.Event
	fold := session.NewState()
	sent := 0
	errEnough := fmt.Errorf("enough")
	err = st.Follow(c.R.Context(), id, func(e session.Event) error {
		if e.Seq == 1 {
			hdr = e
		}
		fold.Add(e)
		if e.Seq <= after {
			return nil
		}
		rows, _, err := cleanRows(id, hdr, []session.Event{e})
		if err != nil || len(rows) == 0 {
			return err
		}
		b, err := json.Marshal(liveRow{row: rows[0], Figures: figures{
			In: formatTokens(fold.InputTokens), Out: formatTokens(fold.OutputTokens), Cost: formatCost(fold.CostUSD),
			Turns: fold.Turns, ToolCalls: fold.ToolCalls,
		}})
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(c.W, "data: %s\n\n", b); err != nil {
			return err
		}
		fl.Flush()
		if sent++; sent >= maxLiveRows {
			return errEnough
		}
		return nil
	})
	reason := "finished"
	switch {
	case err == errEnough:
		reason = "more"
	case err != nil:
		reason = "error"
	case c.R.Context().Err() != nil:
		return nil
	}
	// Nothing writes it any more (or the stream stopped): the fold's
	// status without a lease.
	b, _ := json.Marshal(map[string]string{"reason": reason, "status": termsafe.String(string(fold.Status()))})
	fmt.Fprintf(c.W, "event: end\ndata: %s\n\n", b)
	fl.Flush()
	return nil
}
