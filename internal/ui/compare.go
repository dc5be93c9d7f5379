package ui

import (
	"fmt"
	"net/url"
	"os"
	"sort"
	"strings"

	"github.com/agentctl/agentctl/internal/recorder"
	replaycheck "github.com/agentctl/agentctl/internal/replay/check"
	"github.com/agentctl/agentctl/internal/session"
)

func init() {
	// serverOnly: the sessions compared come in the URL, so a static
	// export (which writes each page once, without a query) could only
	// write an empty page.
	register(route{pattern: "GET /compare", nav: "Compare", navPath: "/compare", order: 30, serverOnly: true, handle: comparePage})
}

const (
	// compareMin and compareMax bound the sessions of one comparison: a
	// page of eight columns is the most a screen shows side by side.
	compareMin, compareMax = 2, 8
	// compareMaxTurns bounds the rows of the turn table.
	compareMaxTurns = 500
)

// compareMaxLog bounds the log a comparison reads whole (eight of them at
// most): turns are aligned over all of a session's events
// (replaycheck.Diff), so a bigger session is compared with `agentctl
// replay diff`. A variable for the test of the bound.
var compareMaxLog int64 = 16 << 20

// compareData is the compare page: each session against the first, as
// `agentctl replay diff FIRST OTHER` compares two.
type compareData struct {
	// Refs are the s= values as given (the form shows them again).
	Refs     string
	Sessions []compareSide
	Rows     []compareRow
	// FirstDiff is the first turn where any session differs from the
	// first one, 0 when all turns agree; Same also needs their final
	// statuses to agree.
	FirstDiff int
	Same      bool
	// Clipped says the turn table stops at compareMaxTurns.
	Clipped int
}

// compareSide is one compared session.
type compareSide struct {
	Summary recorder.Summary
	Href    string
	Turns   int
	Tools   []toolCount
	// FirstDiff is the first turn where this session differs from the
	// first session (0: none), Differ what differs there.
	FirstDiff int
	Differ    []string
	Same      bool
}

type toolCount struct {
	Name string
	N    int
}

// compareRow is turn N of every session; a cell of a session without
// turn N is nil.
type compareRow struct {
	Turn  int
	Cells []*compareCell
	// Differ: some session differs from the first at this turn.
	Differ bool
}

type compareCell struct {
	Turn   replaycheck.Turn
	Differ []string // against the first session's turn
}

// compareRefs splits the s= values (several, or one of IDs separated by
// spaces or commas, as the form sends them).
func compareRefs(q url.Values) []string {
	var refs []string
	for _, v := range q["s"] {
		refs = append(refs, strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' })...)
	}
	return refs
}

func comparePage(c *Ctx) error {
	refs := compareRefs(c.R.URL.Query())
	d := &compareData{Refs: strings.Join(refs, " ")}
	if len(refs) == 0 {
		return c.Render("compare.html", "Compare", d)
	}
	if len(refs) < compareMin || len(refs) > compareMax {
		return badRequest("compare takes %d to %d sessions, got %d: give each as s=ID", compareMin, compareMax, len(refs))
	}
	evs := make([][]session.Event, len(refs))
	ids := make([]string, len(refs))
	for i, ref := range refs {
		// A session only the remote has (--remote) is compared from the
		// remote's cache, as its page reads it.
		st, id, err := c.find(ref)
		if err != nil {
			return notFound("compare: session %q: %v", ref, err)
		}
		if fi, err := os.Stat(st.LogPath(id)); err == nil && fi.Size() > compareMaxLog {
			return badRequest("compare: session %s has a log of %d MB, more than the page reads (%d MB): compare it with agentctl replay diff", id, fi.Size()>>20, compareMaxLog>>20)
		}
		e, tail, err := st.Load(id)
		if len(e) == 0 {
			if err == nil {
				err = fmt.Errorf("no events")
			}
			return notFound("compare: session %s: %v", id, err)
		}
		ids[i], evs[i] = id, e
		sum := summaryOf(st, id, e, tail, err)
		d.Sessions = append(d.Sessions, compareSide{Summary: sum, Href: c.Link("/sessions/"+id, nil), Tools: toolsCalled(e), Same: true})
	}
	d.Same = true
	var rows [][]replaycheck.DiffRow
	for i := range ids {
		rep := replaycheck.Diff(ids[0], evs[0], ids[i], evs[i])
		s := &d.Sessions[i]
		s.Turns = len(replaycheck.Turns(evs[i]))
		s.FirstDiff, s.Same = rep.FirstDiff, rep.Same
		if rep.FirstDiff > 0 {
			s.Differ = rep.Rows[rep.FirstDiff-1].Differ
			if d.FirstDiff == 0 || rep.FirstDiff < d.FirstDiff {
				d.FirstDiff = rep.FirstDiff
			}
		}
		d.Same = d.Same && rep.Same
		rows = append(rows, rep.Rows)
	}
	n := 0
	for _, r := range rows {
		n = max(n, len(r))
	}
	if n > compareMaxTurns {
		d.Clipped, n = n, compareMaxTurns
	}
	for t := range n {
		row := compareRow{Turn: t + 1, Cells: make([]*compareCell, len(ids))}
		for i, r := range rows {
			if t >= len(r) || r[t].B == nil {
				continue
			}
			cell := &compareCell{Turn: *r[t].B}
			if i > 0 {
				cell.Differ = r[t].Differ
				row.Differ = row.Differ || len(r[t].Differ) > 0
			}
			row.Cells[i] = cell
		}
		d.Rows = append(d.Rows, row)
	}
	return c.Render("compare.html", "Compare", d)
}

// summaryOf is the session's summary as `agentctl sessions` says it: a
// log with no end is running while a process holds its lease.
func summaryOf(st recorder.Store, id string, evs []session.Event, tail recorder.Tail, err error) recorder.Summary {
	f := session.Fold(evs)
	f.Live = recorder.Live(st.SessionDir(id))
	return recorder.SummaryOf(id, f, tail, err)
}

// toolsCalled counts the tools the session's turns asked for, by name.
func toolsCalled(evs []session.Event) []toolCount {
	n := map[string]int{}
	for _, e := range evs {
		if e.Kind == session.KindAssistantMessage {
			for _, c := range e.ToolCalls {
				n[c.Name]++
			}
		}
	}
	out := make([]toolCount, 0, len(n))
	for k, v := range n {
		out = append(out, toolCount{k, v})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].N != out[j].N {
			return out[i].N > out[j].N
		}
		return out[i].Name < out[j].Name
	})
	return out
}
