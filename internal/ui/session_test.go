package ui_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/ui"
)

// get answers path from a server over home, with the token as a bearer.
func get(t *testing.T, home, path string) (int, string) {
	t.Helper()
	srv, err := ui.New(ui.Options{Store: recorder.Store{Root: home}, Token: "0123456789abcdef0123"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	req := httptest.NewRequest("GET", path, nil)
	req.Header.Set("Authorization", "Bearer 0123456789abcdef0123")
	w := httptest.NewRecorder()
	srv.Handler().ServeHTTP(w, req)
	b, _ := io.ReadAll(w.Result().Body)
	return w.Code, string(b)
}

var rowSeq = regexp.MustCompile(`<tr id="e(\d+)"`)

// TestSessionPagePaged: the timeline shows one seq range a page, the
// figures count the whole log, and the pager links the next range.
func TestSessionPagePaged(t *testing.T) {
	home := newHome(t)
	id := crafted(t, home, "5e55000000000001", 300, false) // 1,203 events
	tests := []struct {
		from        string
		first, last string
		rows, calls int
		next, prev  bool
	}{
		{"", "1", "500", 500, 125, true, false},
		{"501", "501", "1000", 500, 125, true, true},
		{"1001", "1001", "1203", 203, 50, false, true},
	}
	for _, tc := range tests {
		q := url.Values{}
		if tc.from != "" {
			q.Set("from", tc.from)
		}
		code, body := get(t, home, "/sessions/5e55?"+q.Encode())
		if code != http.StatusOK {
			t.Fatalf("from=%s: %d %s", tc.from, code, body)
		}
		seqs := rowSeq.FindAllStringSubmatch(body, -1)
		if len(seqs) != tc.rows || seqs[0][1] != tc.first || seqs[len(seqs)-1][1] != tc.last {
			t.Errorf("from=%s: %d rows, want %d from %s to %s", tc.from, len(seqs), tc.rows, tc.first, tc.last)
		}
		calls := strings.Count(body[strings.Index(body, `id="model-calls"`):strings.Index(body, `id="timeline"`)], `<tr data-seq=`)
		if calls != tc.calls {
			t.Errorf("from=%s: %d model call rows, want %d", tc.from, calls, tc.calls)
		}
		if got := strings.Contains(body, `id="page-next"`); got != tc.next {
			t.Errorf("from=%s: next link %v, want %v", tc.from, got, tc.next)
		}
		if got := strings.Contains(body, `id="page-prev"`); got != tc.prev {
			t.Errorf("from=%s: previous link %v, want %v", tc.from, got, tc.prev)
		}
		for _, want := range []string{"replay verify " + id, "replay fork " + id + " --from ", "bundle " + id} {
			if !strings.Contains(body, want) {
				t.Errorf("from=%s: page lacks %q", tc.from, want)
			}
		}
		// The figures are the whole session's whatever the page.
		f := tc.from
		if f == "" {
			f = "1"
		}
		code, body = get(t, home, "/api/sessions/5e55/figures?from="+f)
		var fig map[string]any
		if err := json.Unmarshal([]byte(body), &fig); code != http.StatusOK || err != nil {
			t.Fatalf("figures: %d %v %s", code, err, body)
		}
		if fig["events"] != 1203.0 || fig["turns"] != 300.0 || fig["tool_calls"] != 300.0 || fig["status"] != "done" ||
			fig["fork"] != "agentctl replay fork "+id+" --from 1202" {
			t.Errorf("from=%s: figures %v", tc.from, fig)
		}
		if got, want := fig["last_href"], map[bool]any{true: "/sessions/" + id + "?from=1001", false: nil}[tc.next]; got != want {
			t.Errorf("from=%s: last page link %v, want %v", tc.from, got, want)
		}
	}
	if code, _ := get(t, home, "/sessions/5e55?from=0"); code != http.StatusBadRequest {
		t.Errorf("from=0: %d, want 400", code)
	}
	if code, _ := get(t, home, "/sessions/ffff"); code != http.StatusNotFound {
		t.Errorf("unknown session: %d, want 404", code)
	}
}

// TestImportedFiguresNotRecorded: a session imported from a source that
// records no tokens and no times (a Cursor transcript) shows its tokens,
// cost and duration as not recorded, not as measured zeros, on its page
// and on the runs page.
func TestImportedFiguresNotRecorded(t *testing.T) {
	home := newHome(t)
	st := recorder.Store{Root: home}
	evs := []session.Event{
		{SessionID: "1e00000000000001", Kind: session.KindSessionStarted, Provider: "cursor",
			Attrs: json.RawMessage(`{"imported_from":"cursor","not_recorded":["timestamps","usage"]}`)},
		{Kind: session.KindUserMessage, Text: "go"},
		{Kind: session.KindAssistantMessage, Text: "done"},
		{Kind: session.KindModelCall},
	}
	if _, err := st.WriteSession(evs, recorder.Options{NoSync: true}); err != nil {
		t.Fatal(err)
	}
	// The runs page: its row's tokens and cost are unknown, not 0.
	code, body := get(t, home, "/runs")
	if code != http.StatusOK {
		t.Fatalf("runs page: %d %s", code, body)
	}
	row := regexp.MustCompile(`(?s)<tr data-session="1e00000000000001">.*?</tr>`).FindString(body)
	if strings.Count(row, `title="not recorded by the source">-</td>`) != 2 || strings.Contains(row, "$0.0000") {
		t.Errorf("runs page row: %s", row)
	}
	// The page paints, then fetches its figures.
	code, body = get(t, home, "/api/sessions/1e00000000000001/figures")
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	var f map[string]any
	if err := json.Unmarshal([]byte(body), &f); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"in", "out", "cost", "duration"} {
		if f[k] != "not recorded" {
			t.Errorf("figure %s = %v, want not recorded", k, f[k])
		}
	}
}
