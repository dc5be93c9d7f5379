package ui

import (
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// ExportOptions select the sessions an export holds.
type ExportOptions struct {
	// Sessions are the ids to export; none selects every session (that
	// Since leaves).
	Sessions []string
	// Since keeps the sessions started at or after it (a date or an
	// RFC 3339 time, as the runs page's filter).
	Since string
}

// ExportResult says what Export wrote.
type ExportResult struct {
	Dir      string
	Pages    int
	Sessions int
}

// Export writes the app's pages as files under dir, for a CI artifact that
// opens from file:// with no server: index.html is the runs page of the
// selected sessions, each page of the navigation that does not need the
// server is a file of its own (evals.html, cost.html, ...), each selected
// session's page is sessions-ID.html, and assets/ holds the style and
// script. They are the served pages, rendered by the same handlers with
// Ctx.Static set: links between them go to the files (Ctx.Link), and a
// link to a page not exported goes nowhere.
//
// Which routes are pages is read from the registry: a GET route that is
// not serverOnly and either is in the navigation or serves one session
// (a pattern under /sessions/ ending in its one wildcard), or has one
// wildcard whose values the route lists (route.values: the eval suites).
// Other routes with a wildcard and the /api/ endpoints are left out.
func (s *Server) Export(ctx context.Context, dir string, opts ExportOptions) (ExportResult, error) {
	res := ExportResult{Dir: dir}
	sel := url.Values{}
	for _, id := range opts.Sessions {
		sel.Add("id", id)
	}
	if opts.Since != "" {
		sel.Set("since", opts.Since)
	}
	ids, err := s.selectSessions(ctx, sel)
	if err != nil {
		return res, err
	}
	if missing := missingIDs(opts.Sessions, ids); len(missing) > 0 {
		return res, fmt.Errorf("ui: export: no session %s in the history (give ids as 'agentctl sessions' lists them)", strings.Join(missing, ", "))
	}
	res.Sessions = len(ids)

	// The plan: every app path exported, and its file.
	type item struct {
		r     route
		path  string
		query url.Values
	}
	var plan []item
	files := map[string]string{}
	for _, r := range exportRoutes() {
		path := r.path()
		switch {
		case strings.HasSuffix(path, "}") && r.values != nil:
			prefix := path[:strings.LastIndexByte(path, '{')]
			vals, err := r.values(ctx, s)
			if err != nil {
				return res, fmt.Errorf("ui: export %s: %w", path, err)
			}
			for _, v := range vals {
				plan = append(plan, item{r: r, path: prefix + url.PathEscape(v)})
			}
		case strings.HasSuffix(path, "}"):
			prefix := path[:strings.LastIndexByte(path, '{')]
			for _, id := range ids {
				plan = append(plan, item{r: r, path: prefix + id})
			}
		case path == "/runs":
			plan = append(plan, item{r: r, path: path, query: sel})
		default:
			plan = append(plan, item{r: r, path: path})
		}
	}
	for _, it := range plan {
		files[it.path] = exportFile(it.path)
	}
	link := func(path string, _ url.Values) string {
		if f, ok := files[path]; ok {
			return f
		}
		return "#"
	}

	if err := os.MkdirAll(filepath.Join(dir, "assets"), 0o755); err != nil {
		return res, fmt.Errorf("ui: export: %w", err)
	}
	for _, it := range plan {
		mux := http.NewServeMux()
		var herr error
		mux.HandleFunc(it.r.pattern, func(w http.ResponseWriter, req *http.Request) {
			c := &Ctx{W: w, R: req, S: s, Static: true, link: link}
			if err := it.r.handle(c); err != nil {
				herr = err
			}
		})
		u := it.path
		if len(it.query) > 0 {
			u += "?" + it.query.Encode()
		}
		req := httptest.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		if herr != nil {
			return res, fmt.Errorf("ui: export %s: %w", it.path, herr)
		}
		if rec.Code != http.StatusOK {
			return res, fmt.Errorf("ui: export %s: the page answered %d", it.path, rec.Code)
		}
		if err := os.WriteFile(filepath.Join(dir, files[it.path]), rec.Body.Bytes(), 0o644); err != nil {
			return res, fmt.Errorf("ui: export: %w", err)
		}
		res.Pages++
	}
	if err := copyAssets(filepath.Join(dir, "assets")); err != nil {
		return res, fmt.Errorf("ui: export: %w", err)
	}
	return res, nil
}

// path is the route's path without the method.
func (r route) path() string {
	_, p, ok := strings.Cut(r.pattern, " ")
	if !ok {
		return r.pattern
	}
	return p
}

// exportRoutes are the routes Export writes, in a fixed order.
func exportRoutes() []route {
	var out []route
	for _, r := range routes {
		p := r.path()
		if !strings.HasPrefix(r.pattern, "GET ") || r.serverOnly || strings.HasPrefix(p, "/api/") {
			continue
		}
		wild := strings.Count(p, "{")
		switch {
		case wild == 0 && r.nav != "":
		case wild == 1 && strings.HasPrefix(p, "/sessions/") && strings.HasSuffix(p, "}") && !strings.HasSuffix(p, "...}") &&
			strings.Count(p, "/") == 2:
		case wild == 1 && r.values != nil && strings.HasSuffix(p, "}") && !strings.HasSuffix(p, "...}"):
		default:
			continue
		}
		out = append(out, r)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].pattern < out[j].pattern })
	return out
}

// exportFile is the file that holds an app path: index.html for the runs
// page, else the path's segments joined by '-' (all files side by side,
// so that every page's relative links and assets/ resolve alike).
func exportFile(path string) string {
	if path == "/runs" {
		return "index.html"
	}
	name := strings.Map(func(r rune) rune {
		switch {
		case r == '/':
			return '-'
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, strings.Trim(path, "/"))
	return name + ".html"
}

// selectSessions returns the ids the runs page lists for the filter q,
// newest first.
func (s *Server) selectSessions(ctx context.Context, q url.Values) ([]string, error) {
	f, err := parseRunsFilter(q)
	if err != nil {
		return nil, err
	}
	x, sel, err := s.selectRuns(ctx, f, runsPageReq{})
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(sel.Rows))
	for i, r := range sel.Rows {
		ids[i] = x.id(r)
	}
	return ids, nil
}

func missingIDs(want, have []string) []string {
	got := map[string]bool{}
	for _, id := range have {
		got[id] = true
	}
	var out []string
	for _, id := range want {
		if !got[id] {
			out = append(out, id)
		}
	}
	return out
}

// copyAssets writes the embedded assets/ under dir.
func copyAssets(dir string) error {
	return fs.WalkDir(files, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(p, "assets/")))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
}
