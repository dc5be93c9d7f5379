package ui

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/agentctl/agentctl/internal/clip"
	"github.com/agentctl/agentctl/internal/diagnose"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/termsafe"
	"github.com/agentctl/agentctl/internal/vfs"
	"github.com/agentctl/agentctl/internal/view"
)

func init() {
	register(route{pattern: "GET /sessions/{id}", handle: sessionPage})
	register(route{pattern: "GET /api/sessions/{id}/figures", handle: func(c *Ctx) error {
		id, err := c.resolve(c.R.PathValue("id"))
		if err != nil {
			return err
		}
		from, _ := strconv.ParseInt(c.R.URL.Query().Get("from"), 10, 64)
		release, err := c.S.readWhole(c.R.Context())
		if err != nil {
			return err
		}
		defer release()
		f, err := figuresOf(c, id, from)
		if err != nil {
			return err
		}
		return c.JSON(f)
	}})
	register(route{pattern: "GET /api/sessions/{id}/diagnosis", handle: func(c *Ctx) error {
		id, err := c.resolve(c.R.PathValue("id"))
		if err != nil {
			return err
		}
		q := c.R.URL.Query()
		from, _ := strconv.ParseInt(q.Get("from"), 10, 64)
		to, _ := strconv.ParseInt(q.Get("to"), 10, 64)
		release, err := c.S.readWhole(c.R.Context())
		if err != nil {
			return err
		}
		defer release()
		return c.JSON(diagnosisOf(c, id, from, to))
	}})
}

// PageEvents is how many events one page of a session's timeline shows.
// A page is a seq range (?from=SEQ): the log is read a record at a time
// up to the range's end and only its events are kept, so the first page
// of a session of any length paints in the time of its 500 events. The
// figures need the whole log folded: a served page fetches them after it
// painted (/api/sessions/ID/figures), an exported one holds them.
const PageEvents = 500

// sessionView is the data of the session page.
type sessionView struct {
	ID string
	// Name, Model, Started, SpecPath and Goal are the header's and the
	// first user message's: the top of the log, read for any page.
	Name, Model, Started, SpecPath, Goal string
	// Fig is the fold's figures: set in an exported page; a served one
	// fetches them from FigURL after it painted.
	Fig    *sessionFigures
	FigURL string
	// Diag is the diagnosis and the children, which need the query
	// database and another read of the log: set in an exported page, a
	// served one fetches them from DiagURL.
	Diag    *diagnosis
	DiagURL string
	Rows    []row
	Calls   []modelCall
	// From and To bound the seqs shown; More is set when the log goes on
	// after To. Prev, Next and First link the pages around.
	From, To          int64
	More              bool
	Prev, Next, First string
	// ReadErr is what stopped the read before the page's end (damage).
	ReadErr    string
	Ancestors  []lineageLink
	LineageErr string
	Commands   []command
	// EventsURL is the live endpoint; empty when nothing will come.
	EventsURL string
}

// sessionFigures are the figures of the whole session, from view.Build's
// fold (the one `agentctl sessions` and `view` show), formatted as the
// page shows them.
type sessionFigures struct {
	Status    string `json:"status"`
	Exit      string `json:"exit"`
	Source    string `json:"source"`
	In        string `json:"in"`
	Out       string `json:"out"`
	Cost      string `json:"cost"`
	Duration  string `json:"duration"`
	Turns     int    `json:"turns"`
	ToolCalls int64  `json:"tool_calls"`
	Events    int64  `json:"events"`
	// LastHref links the session's last page; Fork is the fork command
	// (it names the seq to fork at).
	LastHref string `json:"last_href,omitempty"`
	Fork     string `json:"fork"`
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
	id, err := c.resolve(c.R.PathValue("id"))
	if err != nil {
		return err
	}
	st := c.store()
	from := int64(1)
	if f := c.R.URL.Query().Get("from"); f != "" {
		if from, err = strconv.ParseInt(f, 10, 64); err != nil || from < 1 {
			return badRequest("from=%q: give the seq a page starts at (1 or more)", f)
		}
	}
	d, last, err := readWindow(st, id, from, PageEvents)
	if err != nil {
		return err
	}
	span := url.Values{"from": {strconv.FormatInt(d.From, 10)}, "to": {strconv.FormatInt(d.To, 10)}}.Encode()
	if c.Static {
		// No script fetches them in an exported page: they are part of it.
		if d.Fig, err = figuresOf(c, id, d.From); err != nil {
			return err
		}
		d.Diag = diagnosisOf(c, id, d.From, d.To)
	} else {
		d.FigURL = "/api/sessions/" + id + "/figures?" + span
		d.DiagURL = "/api/sessions/" + id + "/diagnosis?" + span
	}
	ups, err := st.Ancestors(id)
	for _, l := range ups {
		d.Ancestors = append(d.Ancestors, lineageLink{ID: termsafe.String(l.Parent), Relation: string(l.Relation), Seq: l.Seq()})
	}
	if err != nil {
		d.LineageErr = err.Error()
	}
	for i := range d.Ancestors {
		d.Ancestors[i].Href = c.Link("/sessions/"+d.Ancestors[i].ID, nil)
	}
	if d.From > 1 {
		d.Prev = pageHref(c, id, max(1, d.From-PageEvents))
		d.First = pageHref(c, id, 1)
	}
	if d.More {
		d.Next = pageHref(c, id, d.To+1)
	}
	d.Commands = commandsFor(id)
	if d.Fig != nil {
		d.Commands[2].Line = d.Fig.Fork
	}
	if !d.More && !c.Static && recorder.Live(st.SessionDir(id)) {
		d.EventsURL = "/api/sessions/" + id + "/events?after=" + strconv.FormatInt(last, 10)
	}
	title := "Session " + id
	if d.Name != "" {
		title += " " + d.Name
	}
	return c.Render("session.html", title, d)
}

func pageHref(c *Ctx, id string, from int64) string {
	return c.Link("/sessions/"+id, url.Values{"from": {strconv.FormatInt(from, 10)}})
}

// readWindow reads session id's log a record at a time from the start
// and stops after seq from+n-1: the page's events, cleaned by view.Build
// as `view` cleans them, and the header and first user message. last is
// the last seq read.
func readWindow(st recorder.Store, id string, from int64, n int) (*sessionView, int64, error) {
	f, err := vfs.OpenRegular(st.LogPath(id))
	if err != nil {
		return nil, 0, notFound("session %s has no log to read: %v", id, err)
	}
	defer f.Close()
	d := &sessionView{ID: id, From: from, To: from - 1}
	rd := recorder.NewReader(f)
	to := from + int64(n) - 1
	var hdr session.Event
	var window []session.Event
	var last int64
	for {
		e, err := rd.Next()
		if errors.Is(err, io.EOF) || errors.Is(err, recorder.ErrTornTail) {
			break
		}
		if err != nil {
			d.ReadErr = termsafe.String(err.Error())
			break
		}
		if e.Seq > to {
			d.More = true
			break
		}
		last = e.Seq
		switch {
		case e.Seq == 1:
			hdr = e
		case e.Kind == session.KindUserMessage && d.Goal == "":
			d.Goal = clip.Runes(termsafe.String(e.Text), 200)
		}
		if e.Seq >= from {
			window = append(window, e)
		}
	}
	if hdr.Kind == "" {
		return nil, 0, notFound("session %s: its log holds no header to read", id)
	}
	d.Name, d.Model, d.SpecPath = termsafe.String(hdr.Name), termsafe.String(session.ModelName(hdr.Provider, hdr.Model)), termsafe.String(hdr.SpecPath)
	d.Started = formatTime(hdr.TS)
	if d.Goal == "" {
		d.Goal = clip.Runes(termsafe.String(hdr.Text), 200)
	}
	rows, calls, err := cleanRows(id, hdr, window)
	if err != nil {
		return nil, 0, err
	}
	d.Rows, d.Calls = rows, calls
	if len(window) > 0 {
		d.To = window[len(window)-1].Seq
	}
	return d, last, nil
}

// figuresOf folds the whole of session id's log, a record at a time,
// through view.Build (which keeps two of its events): the figures `view`
// and `agentctl sessions` show. from is the page asking, whose last page
// link it makes.
func figuresOf(c *Ctx, id string, from int64) (*sessionFigures, error) {
	st := c.store()
	var last int64
	s, err := view.Build(view.Input{
		ID: id, Live: recorder.Live(st.SessionDir(id)), MaxEvents: 2,
		Stream: func(fn func(session.Event)) (recorder.Tail, error) {
			_, tail, err := st.Stream(id, func(e session.Event) { last = e.Seq; fn(e) })
			return tail, err
		},
	})
	if err != nil {
		return nil, err
	}
	sum, h := s.Summary, s.Header
	f := &sessionFigures{
		Status: termsafe.String(string(sum.Status)), Exit: h.Exit, Source: h.Source,
		In: formatTokens(sum.InputTokens), Out: formatTokens(sum.OutputTokens), Cost: formatCost(sum.CostUSD),
		Duration: formatDuration(time.Duration(h.DurationMS) * time.Millisecond),
		Turns:    h.Turns, ToolCalls: sum.ToolCalls, Events: sum.Events,
	}
	// An import's source may record no tokens or times: said, not zeros.
	if h.NoUsage {
		f.In, f.Out, f.Cost = "not recorded", "not recorded", "not recorded"
	}
	if h.NoTimes {
		f.Duration = "not recorded"
	}
	if p := pageStart(last); p > from {
		f.LastHref = pageHref(c, id, p)
	}
	// Before the end: forking at a session_finished continues nothing.
	at := last
	if sum.Status != session.StatusRunning {
		at--
	}
	f.Fork = fmt.Sprintf("agentctl replay fork %s --from %d", id, max(at, 1))
	return f, nil
}

// diagnosisOf diagnoses session id from its log (diagnose.Stream, the
// path `view` and `diagnose ID` take: no DuckDB, so a long session costs
// the server the memory of a lean fold, not of the events view) and finds
// its children from the home's headers; what fails is said in Error, not a
// failed page. A cited seq in [from, to], the page that shows the
// diagnosis, links within the page.
func diagnosisOf(c *Ctx, id string, from, to int64) *diagnosis {
	st := c.store()
	d := &diagnosis{Findings: []finding{}, Children: []lineageLink{}}
	var errs []string
	rep, _, err := diagnose.Stream(st, id)
	if err != nil {
		errs = append(errs, "diagnose: "+err.Error())
	}
	if rep != nil {
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
	}
	kids, err := childrenOf(st, id)
	if err != nil {
		errs = append(errs, err.Error())
	}
	for i := range kids {
		kids[i].Href = c.Link("/sessions/"+kids[i].ID, nil)
	}
	d.Children = append(d.Children, kids...)
	d.Error = termsafe.String(strings.Join(errs, "; "))
	return d
}

// pageStart is the first seq of the page that holds seq.
func pageStart(seq int64) int64 { return (seq-1)/PageEvents*PageEvents + 1 }

// seqHref links to the event seq on the page that holds it.
func seqHref(c *Ctx, id string, seq int64) string {
	return c.Link("/sessions/"+id, url.Values{"from": {strconv.FormatInt(pageStart(seq), 10)}}) + "#e" + strconv.FormatInt(seq, 10)
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
		add(e.Name, session.ModelName(e.Provider, e.Model))
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

// childrenOf lists the subagents, forks and replays of id from the home's
// headers (recorder.Lineage: a subagent counts when its parent's log
// confirms it), at most 1,000.
func childrenOf(st recorder.Store, id string) ([]lineageLink, error) {
	l, err := st.Lineage()
	if err != nil {
		return nil, fmt.Errorf("children of %s: %w", id, err)
	}
	var out []lineageLink
	for _, kid := range l.Children(id) {
		if len(out) == 1000 {
			break
		}
		ln := l.LinkOf(kid)
		out = append(out, lineageLink{ID: termsafe.String(kid), Relation: string(ln.Relation), Seq: ln.Seq()})
	}
	return out, nil
}

// commandsFor are the commands that replay, fork, bundle and verify the
// session, as a user types them. The fork's seq is the figures' (the
// page's script sets it when they come).
func commandsFor(id string) []command {
	return []command{
		{ID: "cmd-verify", What: "check that the recording replays to the same events", Line: "agentctl replay verify " + id},
		{ID: "cmd-replay", What: "run the agent again against the recorded model answers", Line: "agentctl replay run " + id},
		{ID: "cmd-fork", What: "continue from a seq with the live model (pick the seq)", Line: "agentctl replay fork " + id + " --from SEQ"},
		{ID: "cmd-bundle", What: "pack the session into a debug bundle", Line: "agentctl bundle " + id},
		{ID: "cmd-show", What: "print every event", Line: "agentctl show " + id},
	}
}
