package ui

import (
	"net/http"

	"github.com/agentctl/agentctl/internal/query"
)

func init() {
	register(route{pattern: "GET /{$}", handle: func(c *Ctx) error {
		http.Redirect(c.W, c.R, "/runs", http.StatusSeeOther)
		return nil
	}})
	register(route{pattern: "GET /runs", nav: "Runs", navPath: "/runs", order: 10, handle: runsPage})
}

// runsPage lists every session, newest first.
func runsPage(c *Ctx) error {
	var list []query.Session
	err := c.S.WithDB(c.R.Context(), func(db *query.DB) error {
		var err error
		list, err = db.Sessions(c.R.Context(), query.Filter{})
		return err
	})
	if err != nil {
		return err
	}
	return c.Render("runs.html", "Runs", map[string]any{"Sessions": list})
}
