package ui_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/testenv/redteam"
	"github.com/agentctl/agentctl/internal/ui"
)

// TestRunsBadFilters: a filter the page cannot read is a 400 that says
// why, not a 500 or an empty list; a good one is a 200.
func TestRunsBadFilters(t *testing.T) {
	home := filterHome(t)
	srv, err := ui.New(ui.Options{Store: recorder.Store{Root: home}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	h := srv.Handler()
	for _, tc := range []struct {
		query string
		code  int
		says  string
	}{
		{"q=typo&model=gpt-4o-mini", 200, "f000000000000001"},
		{"q=it%27s", 200, "0 sessions"},
		{"since=yesterday", 400, "want a date"},
		{"cost=lots", 400, "want a number"},
		{"cost=inf", 400, "want a number"},
		{"cost=NaN", 400, "want a number"},
		{"after=zzz", 400, "cursor"},
		{"model=" + strings.Repeat("x", 600), 400, "at most 500"},
	} {
		req, _ := http.NewRequest("GET", "/runs?"+tc.query, nil)
		req.Header.Set("Authorization", "Bearer "+srv.Token())
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		body, _ := io.ReadAll(w.Result().Body)
		if w.Code != tc.code || !strings.Contains(string(body), tc.says) {
			t.Errorf("GET /runs?%.40s: %d, want %d saying %q\n%.3000s", tc.query, w.Code, tc.code, tc.says, body)
		}
	}
}

// TestBigHistoryReopensInBackground: when a big history changed, a page
// does not wait for it to be read again (a second at 100,000 sessions):
// it answers from the history as it was, and the new session is listed
// once the opening in the background is done. (Here a history of one
// session counts as big.)
func TestBigHistoryReopensInBackground(t *testing.T) {
	home := filterHome(t)
	srv, err := ui.New(ui.Options{Store: recorder.Store{Root: home}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ui.SetBigHistory(srv, 1)
	h := srv.Handler()
	rows := func() int {
		req, _ := http.NewRequest("GET", "/runs", nil)
		req.Header.Set("Authorization", "Bearer "+srv.Token())
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != 200 {
			t.Fatalf("GET /runs: %d %s", w.Code, w.Body)
		}
		return strings.Count(w.Body.String(), "<tr data-session=")
	}
	if n := rows(); n != 5 {
		t.Fatalf("the runs page lists %d sessions, want 5", n)
	}
	runsSession{id: "f000000000000009", name: "late", model: "m", status: "done", text: "x", started: day0.AddDate(0, 1, 0)}.write(t, home)
	if n := rows(); n != 5 {
		t.Errorf("the first page after the change lists %d sessions: it waited for the history to be read again, want the 5 it had", n)
	}
	deadline := time.Now().Add(30 * time.Second)
	for rows() != 6 {
		if time.Now().After(deadline) {
			t.Fatal("the new session is not listed 30 s after the change")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestControlsShownAsEscapes: a bidirectional override or an escape
// sequence in recorded text reaches no page as it is (the override would
// turn the rest of its cell around): each shows as the escape the
// terminal output uses, in the runs page and a session's page alike.
func TestControlsShownAsEscapes(t *testing.T) {
	home := filterHome(t)
	runsSession{id: "bad0000000000001", name: redteam.Text("name"), model: "m", status: "failed", reason: redteam.Text("reason"),
		text: redteam.Text("user"), started: day0.AddDate(0, 0, 9)}.write(t, home)
	srv, err := ui.New(ui.Options{Store: recorder.Store{Root: home}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	h := srv.Handler()
	for _, path := range []string{"/runs", "/sessions/bad0000000000001"} {
		req, _ := http.NewRequest("GET", path, nil)
		req.Header.Set("Authorization", "Bearer "+srv.Token())
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		page := w.Body.String()
		if w.Code != 200 {
			t.Fatalf("GET %s: %d", path, w.Code)
		}
		if strings.ContainsAny(page, "\u202e\x1b") {
			t.Errorf("GET %s: the page holds a raw bidirectional override or escape character", path)
		}
		if !strings.Contains(page, `\u202eevil`) || !strings.Contains(page, `\x1b[31mred`) {
			t.Errorf("GET %s: the controls are not shown as escapes", path)
		}
	}
	// What the pages' scripts read and write with textContent: every
	// string the JSON decodes to is shown text too.
	for _, path := range []string{"/api/sessions/bad0000000000001/figures", "/api/sessions/bad0000000000001/diagnosis", "/api/sessions/bad0000000000001/events"} {
		req, _ := http.NewRequest("GET", path, nil)
		req.Header.Set("Authorization", "Bearer "+srv.Token())
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != 200 {
			t.Fatalf("GET %s: %d\n%s", path, w.Code, w.Body)
		}
		body := w.Body.String()
		var docs []string
		if strings.HasSuffix(path, "/events") {
			for _, line := range strings.Split(body, "\n") {
				if d, ok := strings.CutPrefix(line, "data: "); ok {
					docs = append(docs, d)
				}
			}
		} else {
			docs = []string{body}
		}
		shown := 0
		for _, d := range docs {
			var v any
			if err := json.Unmarshal([]byte(d), &v); err != nil {
				t.Fatalf("GET %s: %v\n%s", path, err, d)
			}
			walkStrings(v, func(s string) {
				if strings.ContainsAny(s, "\u202e\x1b") {
					t.Errorf("GET %s: a string the script shows holds a raw control: %q", path, s)
				}
				if strings.Contains(s, `\u202eevil`) {
					shown++
				}
			})
		}
		t.Logf("GET %s: %d strings show the escapes", path, shown)
	}
}

// walkStrings calls f with every string of a decoded JSON value.
func walkStrings(v any, f func(string)) {
	switch v := v.(type) {
	case string:
		f(v)
	case []any:
		for _, e := range v {
			walkStrings(e, f)
		}
	case map[string]any:
		for k, e := range v {
			f(k)
			walkStrings(e, f)
		}
	}
}
