package ui

import (
	"errors"
	"net/http"
	"net/url"
	"os"
	"strconv"

	"github.com/agentctl/agentctl/internal/approval"
	"github.com/agentctl/agentctl/internal/query"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/termsafe"
)

func init() {
	register(route{pattern: "GET /approvals", nav: "Approvals", navPath: "/approvals", order: 20, serverOnly: true, handle: approvalsPage})
	register(route{pattern: "POST /approvals", serverOnly: true, handle: decide})
}

// maxApprovalSessions bounds the sessions the page looks into.
const maxApprovalSessions = 200

// waitingCall is one row of the approvals page.
type waitingCall struct {
	SessionID, SessionHref, Name string
	CallID, Tool                 string
	Preview                      approval.Preview
	// AskedSeq is the approval_request's seq; AskedHref links to it.
	AskedSeq  int64
	AskedHref string
}

// approvalsPage lists every call waiting for a human, across the home's
// sessions: the query database names the sessions that may have one (a
// stop for approval, or a run, crash or interruption since the database
// was read), and a fresh fold of each says which calls wait now.
func approvalsPage(c *Ctx) error {
	st := c.S.opts.Store
	var ids []string
	err := c.S.WithDB(c.R.Context(), func(db *query.DB) error {
		res, err := db.Query(c.R.Context(), `SELECT session_id FROM sessions
			WHERE status IN ('awaiting_approval', 'running', 'crashed', 'interrupted')
			ORDER BY started DESC LIMIT `+strconv.Itoa(maxApprovalSessions))
		if err != nil {
			return err
		}
		for _, r := range res.Rows {
			if id, ok := r[0].(string); ok {
				ids = append(ids, id)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	var rows []waitingCall
	var problems []string
	for _, id := range ids {
		if _, err := os.Stat(st.LogPath(id)); err != nil {
			continue // a remote's session: read-only here
		}
		fold, _, err := st.Fold(id)
		if err != nil {
			problems = append(problems, termsafe.String(err.Error()))
			continue
		}
		for _, call := range fold.AwaitingApproval() {
			p := approval.PreviewOf(st, id, call)
			p.Command = termsafe.String(p.Command)
			for i := range p.Diff {
				p.Diff[i].Text = termsafe.String(p.Diff[i].Text)
			}
			rows = append(rows, waitingCall{
				SessionID: id, SessionHref: c.Link("/sessions/"+id, nil), Name: termsafe.String(fold.Name),
				CallID: termsafe.String(call.ID), Tool: termsafe.String(call.Tool), Preview: p,
				AskedSeq: call.ApprovalSeq, AskedHref: seqHref(c, id, call.ApprovalSeq),
			})
		}
	}
	q := c.R.URL.Query()
	data := map[string]any{
		"Calls": rows, "Problems": problems, "CSRF": c.CSRF(),
		"Done": termsafe.String(q.Get("done")), "Session": termsafe.String(q.Get("session")),
	}
	return c.Render("approvals.html", "Approvals", data)
}

// decide records the decision a form posts, with the code `agentctl
// approve`/`deny` run, then shows the list again with what was done.
func decide(c *Ctx) error {
	f := c.R.PostForm
	id, call := f.Get("session"), f.Get("call")
	if id == "" || call == "" {
		return badRequest("the form names no session or call")
	}
	var d session.Decision
	switch f.Get("verb") {
	case "approve":
		d = session.Decision{Verb: session.DecideApprove, Scope: f.Get("scope")}
	case "deny":
		d = session.Decision{Verb: session.DecideDeny, Reason: f.Get("reason")}
	default:
		return badRequest("verb %q: approve or deny", f.Get("verb"))
	}
	res, err := approval.Decide(c.S.opts.Store, id, call, d)
	var amb *approval.AmbiguousError
	if errors.As(err, &amb) {
		return badRequest("%v", err)
	}
	if err != nil {
		return &httpError{http.StatusConflict, err}
	}
	done := "approved"
	if d.Verb == session.DecideDeny {
		done = "denied"
	} else if d.Scope == session.ScopeSession {
		done = "approved for the session"
	}
	done += " " + res.Call.Tool + " [" + res.Call.ID + "]"
	http.Redirect(c.W, c.R, c.Link("/approvals", url.Values{"done": {done}, "session": {res.SessionID}}), http.StatusSeeOther)
	return nil
}
