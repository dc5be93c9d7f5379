package ui

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentctl/agentctl/internal/clip"

	"github.com/agentctl/agentctl/internal/query"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/termsafe"
)

//go:embed assets templates
var files embed.FS

func assetHandler() http.Handler {
	sub, _ := fs.Sub(files, "assets")
	return http.FileServerFS(sub)
}

// Ctx is one request to a page.
type Ctx struct {
	W http.ResponseWriter
	R *http.Request
	S *Server
	// Static is set while exporting: links go to files, and nothing on
	// the page may need the server (no forms, no live updates).
	Static bool
	// link maps an app path to the exported file that holds it; set
	// only when Static.
	link func(path string, q url.Values) string
	// st is the store the request's session was found in (resolve):
	// the home's, or the remote's cache for a session only pushed there.
	st *recorder.Store
}

// store is the store of the session the request resolved, else the home's.
func (c *Ctx) store() recorder.Store {
	if c.st != nil {
		return *c.st
	}
	return c.S.opts.Store
}

// resolve finds session ref in the home, or, with --remote, fetches it
// from the remote; later calls of store read from where it was found. Not
// found anywhere is a 404 with the CLI's message.
func (c *Ctx) resolve(ref string) (string, error) {
	st, id, err := c.find(ref)
	if err == nil && st.Root != c.S.opts.Store.Root {
		c.st = &st
	}
	return id, err
}

// find is resolve for a page of several sessions (compare): the store
// session ref was found in, the home's or the remote's cache.
func (c *Ctx) find(ref string) (recorder.Store, string, error) {
	home := c.S.opts.Store
	id, err := home.Resolve(ref)
	if err == nil {
		return home, id, nil
	}
	if c.S.opts.Fetch != nil && errors.Is(err, recorder.ErrNoSession) {
		st, rid, ferr := c.S.opts.Fetch(c.R.Context(), ref)
		if ferr == nil || errors.Is(ferr, recorder.ErrCorrupt) {
			return st, rid, nil
		}
		return home, "", notFound("%v; nor has the remote: %v", err, ferr)
	}
	return home, "", notFound("%v", err)
}

// Link is the href of an app path with its query: the path itself when
// served, the exported file's relative name when Static.
func (c *Ctx) Link(path string, q url.Values) string {
	if c.Static && c.link != nil {
		return c.link(path, q)
	}
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}

// CSRF is the field a page's form carries for a write.
func (c *Ctx) CSRF() string { return c.S.csrf }

// layout is what every page's template gets.
type layout struct {
	Title     string
	Nav       []navItem
	Generator string
	Static    bool
	CSRF      string
	// Page is the page's own data.
	Page any
}

// Asset is the href of a file in assets/: a page that needs its own
// script names it in its "scripts" block as <script defer src="{{.Asset
// "x.js"}}">, since the policy runs no inline script.
func (l layout) Asset(name string) string {
	if l.Static {
		return "assets/" + name
	}
	return "/assets/" + name
}

// StaticCSP is the policy an exported page carries in a meta element (a
// file has no headers): CSP's, less what a meta element cannot say.
func (l layout) StaticCSP() string {
	return "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'"
}

type navItem struct {
	Name, Href string
	Current    bool
}

var (
	tmplMu sync.Mutex
	tmpls  = map[string]*template.Template{}
)

// funcs are the helpers every template may call.
var funcs = template.FuncMap{
	"tokens":   formatTokens,
	"cost":     formatCost,
	"duration": formatDuration,
	"time":     formatTime,
	"clip":     clip.Runes,
	"model":    session.ModelName,
	"json": func(v any) (string, error) {
		b, err := json.Marshal(v)
		return string(b), err
	},
}

// page parses the layout with one page's template (each page defines
// "content", so each is its own set) and the partials every page may use
// (templates/partial-*.html: the chart).
func page(name string) (*template.Template, error) {
	tmplMu.Lock()
	defer tmplMu.Unlock()
	if t, ok := tmpls[name]; ok {
		return t, nil
	}
	t, err := template.New("layout.html").Funcs(funcs).ParseFS(files, "templates/layout.html", "templates/partial-*.html", "templates/"+name)
	if err != nil {
		return nil, err
	}
	tmpls[name] = t
	return t, nil
}

// Render writes the page template name (a file in templates/) with data
// inside the layout. It renders to a buffer first so a template error is
// an error page, not half a page.
func (c *Ctx) Render(name, title string, data any) error {
	t, err := page(name)
	if err != nil {
		return fmt.Errorf("ui: template %s: %w", name, err)
	}
	l := layout{Title: title, Generator: c.S.opts.Generator, Static: c.Static, CSRF: c.S.csrf, Page: data}
	for _, r := range navRoutes() {
		if c.Static && r.serverOnly {
			continue
		}
		l.Nav = append(l.Nav, navItem{Name: r.nav, Href: c.Link(r.navPath, nil), Current: strings.HasPrefix(c.R.URL.Path, r.navPath)})
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, l); err != nil {
		return fmt.Errorf("ui: render %s: %w", name, err)
	}
	c.W.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, err = c.W.Write(inertControls(buf.Bytes()))
	return err
}

// inertControls shows the control characters of a rendered page as the
// visible escapes the terminal output uses (termsafe: \x1b, \u202e):
// html/template makes recorded markup text, but a bidirectional override
// in a session's name would still turn the rest of its cell around, and
// an escape sequence would show as a box. The templates write no such
// character, so every one is recorded text. Script elements are left as
// they are (their JSON escapes are the script's to read); carriage
// returns are kept.
func inertControls(page []byte) []byte {
	var out []byte
	plain := 0 // page[plain:i] is copied as it is
	for i := 0; i < len(page); {
		if page[i] == '<' && len(page)-i >= 7 && bytes.EqualFold(page[i:i+7], []byte("<script")) {
			end := bytes.Index(bytes.ToLower(page[i:]), []byte("</script"))
			if end < 0 {
				break
			}
			i += end + len("</script")
			continue
		}
		r, size := utf8.DecodeRune(page[i:])
		if r == '\r' || !termsafe.Unsafe(r) {
			i += size
			continue
		}
		if out == nil {
			out = make([]byte, 0, len(page)+64)
		}
		out = append(out, page[plain:i]...)
		out = append(out, termsafe.Rune(r)...)
		i += size
		plain = i
	}
	if out == nil {
		return page
	}
	return append(out, page[plain:]...)
}

// JSON writes v as the answer of an endpoint the page's script reads.
func (c *Ctx) JSON(v any) error {
	c.W.Header().Set("Content-Type", "application/json")
	return json.NewEncoder(c.W).Encode(v)
}

// httpError is an error with the status it answers.
type httpError struct {
	code int
	err  error
}

func (e *httpError) Error() string { return e.err.Error() }
func (e *httpError) Unwrap() error { return e.err }

// notFound and badRequest make errors a handler returns.
func notFound(format string, args ...any) error {
	return &httpError{http.StatusNotFound, fmt.Errorf(format, args...)}
}

func badRequest(format string, args ...any) error {
	return &httpError{http.StatusBadRequest, fmt.Errorf(format, args...)}
}

// fail answers an error as a page (or as JSON to a script), the message
// as text: it may quote a session's strings.
func (c *Ctx) fail(err error) {
	code := http.StatusInternalServerError
	var he *httpError
	var qe *query.SQLError
	switch {
	case errors.As(err, &he):
		code = he.code
	case errors.As(err, &qe):
		code = http.StatusBadRequest
	}
	if strings.HasPrefix(c.R.URL.Path, "/api/") {
		c.W.Header().Set("Content-Type", "application/json")
		c.W.WriteHeader(code)
		json.NewEncoder(c.W).Encode(map[string]any{"error": err.Error()})
		return
	}
	c.W.WriteHeader(code)
	if rerr := c.Render("error.html", "Error", map[string]any{"Code": code, "Message": err.Error()}); rerr != nil {
		fmt.Fprintf(c.W, "agentctl ui: %s", template.HTMLEscapeString(err.Error()))
	}
}

func formatTokens(n int64) string {
	switch {
	case n >= 10_000_000:
		return fmt.Sprintf("%.0fM", float64(n)/1e6)
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 10_000:
		return fmt.Sprintf("%.0fk", float64(n)/1e3)
	case n >= 1_000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

func formatCost(usd float64) string {
	switch {
	case usd == 0:
		return "$0"
	case usd < 0.01:
		return fmt.Sprintf("$%.4f", usd)
	}
	return fmt.Sprintf("$%.2f", usd)
}

func formatDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "-"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}
