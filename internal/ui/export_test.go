package ui

// StubSessionPage registers a stand-in session page when no page serves
// /sessions/{id} yet (the session page is another file's), so the
// export's one file per session is tested on its own; the returned
// function removes it. With the real page registered it does nothing.
func StubSessionPage() func() {
	for _, r := range routes {
		if r.path() == "/sessions/{id}" {
			return func() {}
		}
	}
	n := len(routes)
	register(route{pattern: "GET /sessions/{id}", handle: func(c *Ctx) error {
		return c.Render("error.html", "Session", map[string]any{"Code": 200, "Message": "session " + c.R.PathValue("id")})
	}})
	return func() { routes = routes[:n] }
}

// SetBigHistory makes s take a history of n sessions or more as big: one
// opened again in the background when it changed.
func SetBigHistory(s *Server, n int) { s.bigHistory = n }

// Shown is recorded text s as a page shows it: its control characters as
// visible escapes (inertControls).
func Shown(s string) string { return string(inertControls([]byte(s))) }
