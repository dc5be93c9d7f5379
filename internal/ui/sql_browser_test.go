package ui_test

import (
	"encoding/csv"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/testenv/browser"
	"github.com/agentctl/agentctl/internal/testenv/testcli"
	"github.com/agentctl/agentctl/internal/ui"
)

// TestSQLPage: a query's rows are the rows of `agentctl query`, a label
// and a number are drawn as a chart, and the hostile strings a query
// returns stay text.
func TestSQLPage(t *testing.T) {
	b := browser.New(t)
	home := newHome(t)
	runDefault(t, home)
	runDefault(t, home)
	writeHostile(t, home)
	s := serve(t, home)

	q := "SELECT session_id, name, status, tokens, cost_usd, ended FROM sessions ORDER BY session_id"
	tab := s.open(t, b, "/sql", url.Values{"q": {q}})
	var page [][]string
	tab.Eval(`Array.from(document.querySelectorAll('#sql-result tr')).map(r => Array.from(r.children).map(c => c.hasAttribute('data-null') ? '' : c.textContent))`, &page)
	out := testcli.Must(t, home, "query", q, "--format", "csv").Stdout
	want, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(page) != 4 || len(page) != len(want) {
		t.Fatalf("page rows %q, agentctl query %q", page, want)
	}
	for i := range want {
		for j := range want[i] {
			want[i][j] = ui.Shown(want[i][j]) // as the page shows recorded text
		}
		if strings.Join(page[i], "\x00") != strings.Join(want[i], "\x00") {
			t.Errorf("row %d: page %q, agentctl query %q", i, page[i], want[i])
		}
	}
	assertPageInert(t, tab, true)
	tab.Clean(s.ownOnly)

	chart := s.open(t, b, "/sql", url.Values{"q": {"SELECT name, sum(tokens) AS tokens FROM sessions GROUP BY name ORDER BY name"}})
	if n := chart.Count("#sql-chart g.bar"); n != 2 {
		t.Errorf("the two-column result has %d bars, want 2", n)
	}
	chart.Screenshot(shots, "sql")
	chart.Clean(s.ownOnly)
}

// TestSQLPageConfined: SQL that reads a file, writes one, attaches a
// database, installs or loads an extension, or changes a setting is
// refused with a message, and nothing is written; more rows than the cap
// are cut and the page says so.
func TestSQLPageConfined(t *testing.T) {
	home := newHome(t)
	writeHostile(t, home)
	testcli.Must(t, home, "history", "seal")
	s := serve(t, home)
	out := filepath.Join(home, "history", "stolen.csv")
	for _, tt := range []struct{ name, q, want string }{
		{"read a file", "SELECT * FROM read_csv('/etc/passwd')", "Permission Error"},
		{"read text", "SELECT content FROM read_text('/etc/passwd')", "Permission Error"},
		{"replacement scan", "SELECT * FROM '/etc/passwd'", "/etc/passwd does not exist"},
		{"copy", "COPY (SELECT * FROM sessions) TO '" + out + "'", `refused: the SQL page runs one SELECT over the views, read-only; "COPY" is not a SELECT`},
		{"attach", "ATTACH '" + filepath.Join(home, "x.db") + "'", `"ATTACH" is not a SELECT`},
		{"install", "INSTALL httpfs", `"INSTALL" is not a SELECT`},
		{"load", "LOAD httpfs", `"LOAD" is not a SELECT`},
		{"set", "SET enable_external_access = true", `"SET" is not a SELECT`},
		{"two statements", "SELECT 1; SELECT 2", "give one SELECT, not 2 statements"},
		{"syntax", "SELEC 1", "syntax error"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, body := s.get(t, "/sql", url.Values{"q": {tt.q}})
			i := strings.Index(body, `id="sql-error">`)
			if i < 0 {
				t.Fatalf("no error shown for %s:\n%s", tt.q, body)
			}
			msg := body[i:]
			msg = msg[:strings.Index(msg, "</p>")]
			if !strings.Contains(msg, htmlEscape(tt.want)) {
				t.Errorf("%s: %s, want %q", tt.q, msg, tt.want)
			}
			if strings.Contains(body, "root:x:0:0") {
				t.Errorf("%s: the page shows /etc/passwd", tt.q)
			}
		})
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("COPY wrote %s", out)
	}
	_, body := s.get(t, "/sql", url.Values{"q": {"SELECT * FROM range(5000)"}})
	if n := strings.Count(body, "<tr><td"); n != 1000 || !strings.Contains(body, "the first 1000, the query returned more") {
		t.Errorf("range(5000): %d rows shown, want 1000 and a note", n)
	}
}

func htmlEscape(s string) string {
	return strings.NewReplacer(`"`, "&#34;", "'", "&#39;", "<", "&lt;", ">", "&gt;", "&", "&amp;").Replace(s)
}
