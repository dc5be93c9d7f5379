// Package view writes `agentctl view`: one self-contained HTML file that
// shows a session as a timeline, or two sessions side by side, for people
// who would rather look than read. It opens from file:// on a laptop with
// no network: style, script and data are inline and nothing is fetched.
//
// # Example
//
//	s, err := view.Build(view.Input{ID: id, Events: evs, Findings: findings})
//	// or, a record at a time: view.Input{ID: id, Stream: read, ...}
//	...
//	err = view.Write(f, view.Page{Title: id, Session: s})
//
// # What a page shows
//
// A session's page has a header with the figures of `agentctl sessions
// --json` (Session.Summary is recorder.SummaryOf over the same fold, so
// they are equal), the pinned model, duration, exit path and source (run,
// import, fork); the diagnose findings, each seq they cite a link to its
// event; the pinned goal; a chart of cumulative tokens and cost over the
// seqs with a line at each compaction, error, interruption, crash and
// resume (Mark); and the timeline: one row per event, tool calls
// expandable to their arguments, approval, dispatch, result and
// reconciliation, long text collapsed, artifacts linked, problems
// highlighted (Event.Lvl). The fold is session.State's, added event by
// event (Build), so every call is the one the fold attributes an event to;
// the view computes no figure of its own. A comparison (CompareSessions)
// is replaycheck.Diff's turn alignment with the first difference marked.
//
// # Safety
//
// What is shown was recorded, so it was redacted at the recorder boundary
// and written by an agent or the programs it ran. Every string passes
// through termsafe (control and bidirectional characters become visible
// escapes) and is cut to MaxText bytes with a note. html/template writes
// the data as JSON into a <script type="application/json"> element, with
// "<", ">" and "&" escaped so no "</script>" can end it early; the page's
// script reads it with JSON.parse and puts strings in the page only as
// text nodes, and sets only the relative links the data carries (Go makes
// them, beginning "./" or "../"). The page's Content-Security-Policy runs
// only its own style and script, by hash, and forbids every fetch.
//
// # Format
//
// The embedded JSON is {"version": 1, "generator", "session": Session} or
// {"version": 1, "generator", "compare": Compare}, with the field names of
// the types' json tags. The page's script is its only reader and checks
// the version; it may change with the script.
//
// # Size
//
// The timeline is drawn 200 rows at a time as it scrolls into view (and up
// to an event a link jumps to), so a 10,000-event session opens in well
// under a second (bench/view). Strings longer than MaxText (8 KiB) are
// cut, and shorter, all to one length, when the page's text would pass
// MaxTotal (6 MiB), so a page stays a few megabytes whatever the outputs'
// size. A session of more than MaxEvents (20,000) events shows its first
// and last 10,000, with a note of the run left out (Header.Omitted); the
// fold and every figure still take every event, and only the calls and
// marks of the events shown are embedded. The events are not held: Build
// reads Input.Stream once, folding each event into a lean fold
// (session.NewLeanState: calls numbered by their place, only those of the
// events shown unpacked) and keeping only the events the page shows, in
// their log form (`agentctl view` reads the log a record at a time, once
// for diagnose.Stream and once for Build, and opens no DuckDB), and
// diagnose's work is linear in compactions, so a page costs its shown
// events and the fold: ~150 MB of peak RSS at a million events.
//
// # Concurrency
//
// Build, CompareSessions and Write keep no state between calls and may run
// concurrently.
package view
