package ui_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/recorder"
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
