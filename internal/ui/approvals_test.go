package ui_test

import (
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/testenv/testcli"
)

// TestApprovalsDecisions posts each decision the page offers and finds in
// the log the event the CLI records for the same decision on a twin run.
func TestApprovalsDecisions(t *testing.T) {
	tests := []struct {
		name string
		form url.Values
		cli  []string
	}{
		{"approve once", url.Values{"verb": {"approve"}, "scope": {"once"}}, []string{"approve"}},
		{"approve for the session", url.Values{"verb": {"approve"}, "scope": {"session"}}, []string{"approve", "--scope", "session"}},
		{"deny with a reason", url.Values{"verb": {"deny"}, "reason": {"migrations are frozen"}}, []string{"deny", "--reason", "migrations are frozen"}},
	}
	home := newHome(t)
	s := serve(t, home)
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			page, cli := "a99000000000010"+string(rune('a'+i)), "a99000000000020"+string(rune('a'+i))
			for _, id := range []string{page, cli} {
				if r := testcli.Run(t, home, "run", migration, "-q", "--session-id", id); r.Code != 3 {
					t.Fatalf("run %s: exit %d: %s", id, r.Code, r.Stderr)
				}
			}
			testcli.Must(t, home, append([]string{tc.cli[0], cli}, tc.cli[1:]...)...)
			f := url.Values{"csrf": {s.csrf(t)}, "session": {page}, "call": {"call_2_0"}}
			for k, v := range tc.form {
				f[k] = v
			}
			req, _ := http.NewRequest("POST", s.base+"/approvals", strings.NewReader(f.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Origin", s.base)
			req.Header.Set("Authorization", "Bearer "+s.srv.Token())
			resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusSeeOther {
				t.Fatalf("POST: %s", resp.Status)
			}
			a, b := lastEvent(t, home, cli), lastEvent(t, home, page)
			if a.Kind != b.Kind || a.CallID != b.CallID || a.Tool != b.Tool || a.Scope != b.Scope || a.Reason != b.Reason {
				t.Errorf("the page recorded %+v, the CLI %+v", b, a)
			}
			// A second decision on the same call is refused.
			req, _ = http.NewRequest("POST", s.base+"/approvals", strings.NewReader(f.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Origin", s.base)
			req.Header.Set("Authorization", "Bearer "+s.srv.Token())
			if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusConflict {
				t.Errorf("a second decision: %v %v, want 409", resp.Status, err)
			}
		})
	}
}

func lastEvent(t *testing.T, home, id string) session.Event {
	t.Helper()
	evs, _, err := recorder.Store{Root: home}.Load(id)
	if err != nil || len(evs) == 0 {
		t.Fatalf("load %s: %v", id, err)
	}
	return evs[len(evs)-1]
}

var csrfAttr = regexp.MustCompile(`data-csrf="([0-9a-f]+)"`)

// csrf is the form field the server's pages carry.
func (s *served) csrf(t *testing.T) string {
	t.Helper()
	req, _ := http.NewRequest("GET", s.base+"/approvals", nil)
	req.Header.Set("Authorization", "Bearer "+s.srv.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := csrfAttr.FindSubmatch(b)
	if m == nil {
		t.Fatalf("no csrf in the page: %s", b)
	}
	return string(m[1])
}
