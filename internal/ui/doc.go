// Package ui serves agentctl's web app: a home's history (and a remote's,
// read-only) as pages in the user's own browser, from the binary alone.
//
// Every page is rendered on the server by html/template, so a recorded
// string reaches the browser as escaped text by construction; the one
// script (assets/ui.js) only enhances what the HTML already shows (live
// rows, copy buttons) and writes recorded text with textContent. Agent
// content is hostile and the browser is the user's: the server answers only
// requests that carry its token, name it by a host it listens as (DNS
// rebinding) and, for the few writes (approvals), come from its own pages
// (Origin and a CSRF field). The Content-Security-Policy allows the page's
// own style and script and nothing else.
//
// Pages register themselves (register, from each page file's init) with the
// route they serve and their place in the navigation; the server knows none
// of them by name. The same handlers write the static export (Export), so an
// exported page is the served page with file links.
//
// Pages read the history through the query package's views, on one
// database the server opens again when the home changed (Server.WithDB).
// The runs page does not query per request: it reads the sessions view
// once per opening into an index in memory (runIndex; textIndex for the
// text search, on the first search), never changed once made, and a
// request looks at the rows its filter selects, not at every session: its
// time does not grow with the history. A big history is opened again in
// the background when it changed (bigHistory), so no page waits the
// second that takes at 100,000 sessions.
package ui
