package ui

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/agentctl/agentctl/internal/diagnose"
	"github.com/agentctl/agentctl/internal/query"
	"github.com/agentctl/agentctl/internal/recorder"
	replaycheck "github.com/agentctl/agentctl/internal/replay/check"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/termsafe"
	"github.com/agentctl/agentctl/internal/view"
)

func init() {
	register(route{pattern: "GET /sessions/{id}", handle: sessionPage})
	register(route{pattern: "GET /api/sessions/{id}/diagnosis", handle: func(c *Ctx) error {
		id, err := c.S.opts.Store.Resolve(c.R.PathValue("id"))
		if err != nil {
			return notFound("%v", err)
		}
		q := c.R.URL.Query()
		from, _ := strconv.ParseInt(q.Get("from"), 10, 64)
		to, _ := strconv.ParseInt(q.Get("to"), 10, 64)
		return c.JSON(diagnosisOf(c, id, from, to))
	}})
}

// PageEvents is how many events one page of a session's timeline shows.
// A page is a seq range (?from=SEQ): the log is read a record at a time
// and only the range's events are kept, so a session of any length costs
// its fold and one page.
const PageEvents = 500

// sessionView is the data of the session page.
type sessionView struct {
	ID string
	// S is view.Build's data over the whole log, keeping almost no
	// events: its Summary, Header and the figures are the fold's.
	S *view.Session
	// Diag is the diagnosis and the children, which need the query
	// database and a second read of the log: an exported page holds it,
	// a served one fetches it from DiagURL after it painted.
	Diag     *diagnosis
	DiagURL  string
	Duration string
	Rows     []row
	Calls    []modelCall
	// From and To bound the seqs shown; Prev and Next are the pages
	// around it (0: none).
	From, To, Last int64
	Prev, Next     string
	First, End     string
	Ancestors      []lineageLink
	LineageErr     string
	Commands       []command
	Live           bool
	// EventsURL is the live endpoint; empty when nothing will come.
	EventsURL string
}

// diagnosis is what /api/sessions/{id}/diagnosis answers.
type diagnosis struct {
	Findings []finding     `json:"findings"`
	Error    string        `json:"error,omitempty"`
	Children []lineageLink `json:"children"`
}

// finding is a diagnose finding with links to the seqs it cites.
type finding struct {
	Kind string    `json:"kind"`
	Text string    `json:"text"`
	Seqs []seqLink `json:"seqs"`
}

type seqLink struct {
	Seq  int64  `json:"seq"`
	Href string `json:"href"`
}

type lineageLink struct {
	ID       string `json:"id"`
	Href     string `json:"href"`
	Relation string `json:"relation"`
	Seq      int64  `json:"seq,omitempty"`
}

type command struct {
	ID, What, Line string
}

// modelCall is one model_call event of the page's range.
type modelCall struct {
	Seq                         int64
	Model, Purpose, Finish, Err string
	In, Out, CacheRead          int64
	Cost                        float64
	LatencyMS                   int64
}

func sessionPage(c *Ctx) error {
	st := c.S.opts.Store
	id, err := st.Resolve(c.R.PathValue("id"))
	if err != nil {
		return notFound("%v", err)
	}
	from := int64(1)
	if f := c.R.URL.Query().Get("from"); f != "" {
		if from, err = strconv.ParseInt(f, 10, 64); err != nil || from < 1 {
			return badRequest("from=%q: give the seq a page starts at (1 or more)", f)
		}
	}
	d, err := readSession(st, id, from, PageEvents)
	if err != nil {
		return err
	}
	if c.Static {
		// No script fetches it in an exported page: it is part of it.
		d.Diag = diagnosisOf(c, id, d.From, d.To)
	} else {
		d.DiagURL = "/api/sessions/" + id + "/diagnosis?" + url.Values{"from": {strconv.FormatInt(d.From, 10)}, "to": {strconv.FormatInt(d.To, 10)}}.Encode()
	}
	ups, err := st.Ancestors(id)
	for _, l := range ups {
		d.Ancestors = append(d.Ancestors, lineageLink{ID: termsafe.String(l.Parent), Relation: string(l.Relation), Seq: l.Seq()})
	}
	if err != nil {
		d.LineageErr = strings.TrimSpace(d.LineageErr + " " + err.Error())
	}
	for i := range d.Ancestors {
		d.Ancestors[i].Href = c.Link("/sessions/"+d.Ancestors[i].ID, nil)
	}
	page := func(f int64) string {
		return c.Link("/sessions/"+id, url.Values{"from": {strconv.FormatInt(f, 10)}})
	}
	if d.From > 1 {
		d.Prev = page(max(1, d.From-PageEvents))
		d.First = page(1)
	}
	if d.To < d.Last {
		d.Next = page(d.To + 1)
		d.End = page(pageStart(d.Last))
	}
	d.Commands = commandsFor(id, d.S)
	d.Duration = formatDuration(time.Duration(d.S.Header.DurationMS) * time.Millisecond)
	d.Live = d.S.Summary.Status == session.StatusRunning
	if d.Live && !c.Static && d.To >= d.Last {
		d.EventsURL = "/api/sessions/" + id + "/events?after=" + strconv.FormatInt(d.Last, 10)
	}
	title := "Session " + id
	if d.S.Summary.Name != "" {
		title += " " + termsafe.String(d.S.Summary.Name)
	}
	return c.Render("session.html", title, d)
}

// diagnosisOf runs diagnose on session id (the log read once more for
// the compaction anchoring check) and finds its children; what fails is
// said in Error, not a failed page. A cited seq in [from, to], the page
// that shows the diagnosis, links within the page.
func diagnosisOf(c *Ctx, id string, from, to int64) *diagnosis {
	st := c.S.opts.Store
	ctx := c.R.Context()
	d := &diagnosis{Findings: []finding{}, Children: []lineageLink{}}
	var errs []string
	anchors := replaycheck.NewAnchorer(id, nil)
	if _, _, err := st.Stream(id, anchors.Add); err != nil && !errors.Is(err, recorder.ErrCorrupt) {
		errs = append(errs, err.Error())
	}
	err := c.S.WithDB(ctx, func(db *query.DB) error {
		rep, err := diagnose.Run(ctx, db, id, anchors.Report())
		if err != nil {
			return err
		}
		for _, f := range rep.Findings {
			fd := finding{Kind: termsafe.String(f.Kind), Text: termsafe.String(f.Text), Seqs: []seqLink{}}
			for _, q := range f.Seqs {
				href := seqHref(c, id, q)
				if q >= from && q <= to {
					href = "#e" + strconv.FormatInt(q, 10)
				}
				fd.Seqs = append(fd.Seqs, seqLink{Seq: q, Href: href})
			}
			d.Findings = append(d.Findings, fd)
		}
		kids, err := childrenOf(ctx, db, st, id)
		for i := range kids {
			kids[i].Href = c.Link("/sessions/"+kids[i].ID, nil)
		}
		d.Children = append(d.Children, kids...)
		return err
	})
	if err != nil {
		errs = append(errs, "diagnose could not run: "+err.Error())
	}
	d.Error = termsafe.String(strings.Join(errs, "; "))
	return d
}

// pageStart is the first seq of the page that holds seq.
func pageStart(seq int64) int64 { return (seq-1)/PageEvents*PageEvents + 1 }

// seqHref links to the event seq on the page that holds it.
func seqHref(c *Ctx, id string, seq int64) string {
	return c.Link("/sessions/"+id, url.Values{"from": {strconv.FormatInt(pageStart(seq), 10)}}) + "#e" + strconv.FormatInt(seq, 10)
}

// readSession reads session id's log once, a record at a time: the whole
// of it goes through view.Build's fold (which keeps two events), and the
// events with seq in [from, from+n) are kept and cleaned by view.Build
// for the timeline.
func readSession(st recorder.Store, id string, from int64, n int) (*sessionView, error) {
	var hdr session.Event
	var window []session.Event
	var last int64
	to := from + int64(n) - 1
	s, err := view.Build(view.Input{
		ID: id, Live: recorder.Live(st.SessionDir(id)), MaxEvents: 2,
		Stream: func(fn func(session.Event)) (recorder.Tail, error) {
			_, tail, err := st.Stream(id, func(e session.Event) {
				if e.Seq == 1 {
					hdr = e
				}
				if e.Seq >= from && e.Seq <= to {
					window = append(window, e)
				}
				last = e.Seq
				fn(e)
			})
			return tail, err
		},
	})
	if err != nil {
		return nil, err
	}
	d := &sessionView{ID: id, S: s, From: from, Last: last}
	rows, calls, err := cleanRows(id, hdr, window)
	if err != nil {
		return nil, err
	}
	d.Rows, d.Calls = rows, calls
	d.To = from - 1
	if len(window) > 0 {
		d.To = window[len(window)-1].Seq
	}
	return d, nil
}

// cleanRows makes the rows of evs (seqs in order) with view.Build's
// cleaning (termsafe, cut to its MaxText), the header first so times are
// the session's.
func cleanRows(id string, hdr session.Event, evs []session.Event) ([]row, []modelCall, error) {
	if len(evs) == 0 {
		return nil, nil, nil
	}
	in := evs
	skip := 0
	if evs[0].Seq != 1 && hdr.Kind != "" {
		in = append([]session.Event{hdr}, evs...)
		skip = 1
	}
	s, err := view.Build(view.Input{ID: id, Events: in, MaxEvents: len(in) + 1})
	if err != nil {
		return nil, nil, err
	}
	var rows []row
	var calls []modelCall
	for _, e := range s.Events[skip:] {
		rows = append(rows, rowOf(e))
		if e.Kind == string(session.KindModelCall) {
			calls = append(calls, modelCall{Seq: e.Seq, Model: e.Model, Purpose: e.Purpose, Finish: e.FinishReason,
				Err: strings.TrimSpace(e.ErrorType + " " + e.Error), In: e.In, Out: e.Out, CacheRead: e.CacheRead, Cost: e.Cost, LatencyMS: e.LatencyMS})
		}
	}
	return rows, calls, nil
}

// row is one event of the timeline, as the page's table and the live
// endpoint's JSON show it: what the event says, in two strings.
type row struct {
	Seq  int64  `json:"seq"`
	MS   int64  `json:"ms"`
	Kind string `json:"kind"`
	Lvl  string `json:"lvl,omitempty"`
	// What is the line: the text, the tool and its arguments, the
	// status; Detail is the long part (an output, a summary).
	What   string `json:"what"`
	Detail string `json:"detail,omitempty"`
}

// rowOf says what a cleaned event shows in one row.
func rowOf(e view.Event) row {
	r := row{Seq: e.Seq, MS: e.MS, Kind: e.Kind, Lvl: e.Lvl}
	var parts []string
	add := func(s ...string) {
		for _, x := range s {
			if x != "" {
				parts = append(parts, x)
			}
		}
	}
	switch session.Kind(e.Kind) {
	case session.KindSessionStarted:
		add(e.Name, e.Provider+"/"+e.Model)
		if e.ParentID != "" {
			add("parent " + e.ParentID)
		}
	case session.KindModelCall:
		add(e.Model, fmt.Sprintf("in %d out %d", e.In, e.Out), formatCost(e.Cost), fmt.Sprintf("%dms", e.LatencyMS), e.ErrorType, e.Error)
	case session.KindToolIntent, session.KindApprovalRequest:
		add(e.CallID, e.Tool+" "+e.Args, e.Reason)
	case session.KindToolResult:
		add(e.CallID, e.Tool, e.Status)
		r.Detail = e.Output
	case session.KindApprovalGranted, session.KindApprovalDenied:
		add(e.CallID, e.Tool, e.Scope, e.Reason)
	case session.KindCompaction:
		add(fmt.Sprintf("through seq %d", e.Through))
		r.Detail = e.Summary
	case session.KindSessionFinished:
		add(e.Status, e.Reason)
	default:
		add(e.Text, e.Refusal, e.Status, e.Outcome, e.Reason, e.Error, e.Evidence, e.Raw)
		if e.FinishReason != "" {
			add("finish " + e.FinishReason)
		}
		if e.Child != nil {
			add("child " + e.Child.ID)
		}
	}
	r.What = strings.Join(parts, " · ")
	return r
}

// childrenOf lists the sessions whose header names id as their parent
// (forks, replays, subagents), classified by their header as the lineage
// walk classifies them.
func childrenOf(ctx context.Context, db *query.DB, st recorder.Store, id string) ([]lineageLink, error) {
	res, err := db.Query(ctx, `SELECT session_id FROM events WHERE kind = 'session_started' AND seq = 1
		AND parent_session_id = '`+strings.ReplaceAll(id, "'", "''")+`' ORDER BY session_id LIMIT 1000`)
	if err != nil {
		return nil, fmt.Errorf("children of %s: %w", id, err)
	}
	var out []lineageLink
	var errs []error
	for _, r := range res.Rows {
		kid, _ := r[0].(string)
		hdr, err := st.Header(kid)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		l := recorder.HeaderLink(kid, hdr)
		out = append(out, lineageLink{ID: termsafe.String(kid), Relation: string(l.Relation), Seq: l.Seq()})
	}
	return out, errors.Join(errs...)
}

// commandsFor are the commands that replay, fork, bundle and verify the
// session, as a user types them.
func commandsFor(id string, s *view.Session) []command {
	// Before the end: forking at a session_finished continues nothing.
	at := s.Summary.Events
	if s.Summary.Status != session.StatusRunning {
		at--
	}
	at = max(at, 1)
	return []command{
		{ID: "cmd-verify", What: "check that the recording replays to the same events", Line: "agentctl replay verify " + id},
		{ID: "cmd-replay", What: "run the agent again against the recorded model answers", Line: "agentctl replay run " + id},
		{ID: "cmd-fork", What: "continue from a seq with the live model (pick the seq)", Line: fmt.Sprintf("agentctl replay fork %s --from %d", id, at)},
		{ID: "cmd-bundle", What: "pack the session into a debug bundle", Line: "agentctl bundle " + id},
		{ID: "cmd-show", What: "print every event", Line: "agentctl show " + id},
	}
}
