package view_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/termsafe"
	"github.com/agentctl/agentctl/internal/view"
)

// fixtureHomes hold sessions recorded by the real binary (their READMEs
// give the recipes).
var fixtureHomes = []string{"../../fixtures/home", "../../fixtures/diagnose/home", "../../fixtures/replay/home"}

func build(t *testing.T, home, id string, maxText int) (*view.Session, []session.Event) {
	t.Helper()
	st := recorder.Store{Root: home}
	evs, tail, err := st.Load(id)
	s, berr := view.Build(view.Input{ID: id, Events: evs, Live: recorder.Live(st.SessionDir(id)), Tail: tail, ReadErr: err, MaxText: maxText})
	if berr != nil {
		t.Fatal(berr)
	}
	return s, evs
}

// TestBuildAgreesWithFold: the page's figures are the fold's, as
// `agentctl sessions` reads it (recorder.Store.Summary), and every tool
// event belongs to the call session.State attributes it to.
func TestBuildAgreesWithFold(t *testing.T) {
	n := 0
	for _, home := range fixtureHomes {
		st := recorder.Store{Root: home}
		ids, err := st.IDs()
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			t.Run(filepath.Base(filepath.Dir(home))+"/"+id, func(t *testing.T) {
				s, evs := build(t, home, id, 0)
				if got, want := s.Summary, st.Summary(id); got != want {
					t.Errorf("summary = %+v\nstore says %+v", got, want)
				}
				fold, _, _ := st.Fold(id)
				if len(s.Calls) != len(fold.Calls) || len(s.Events) != len(evs) {
					t.Fatalf("%d calls and %d events, the fold has %d and %d", len(s.Calls), len(s.Events), len(fold.Calls), len(evs))
				}
				for i, e := range s.Events {
					if e.Call == 0 {
						if evs[i].CallID != "" && evs[i].Kind != session.KindAssistantMessage {
							t.Errorf("seq %d (%s, call %s) belongs to no call", e.Seq, e.Kind, evs[i].CallID)
						}
						continue
					}
					if c := s.Calls[e.Call-1]; c.ID != termsafe.String(evs[i].CallID) {
						t.Errorf("seq %d names call %s, attributed to %s", e.Seq, evs[i].CallID, c.ID)
					}
				}
				for i, c := range fold.Calls {
					want := c.Outcome()
					if want == "pending" && c.Denied {
						want = "denied"
					} else if want == "pending" && c.AwaitingApproval() {
						want = "awaiting_approval"
					}
					if s.Calls[i].Outcome != want || s.Calls[i].Result != c.ResultSeq || s.Calls[i].Intent != c.IntentSeq {
						t.Errorf("call %d = %+v, the fold has %+v", i, s.Calls[i], *c)
					}
				}
				n++
			})
		}
	}
	if n < 10 {
		t.Fatalf("compared %d sessions", n)
	}
}

// TestMarks: crashes, resumes, compactions, errors and interruptions as
// the log's shape shows them, for recorded sessions of every kind.
func TestMarks(t *testing.T) {
	for _, tt := range []struct{ home, id, want string }{
		{"../../fixtures/diagnose/home", "d1a9000000000001", "error@6 error@10 error@14 error@17"}, // failed calls, then a budget stop
		{"../../fixtures/diagnose/home", "d1a9000000000003", "crash@9"},                            // killed in a tool, not resumed
		{"../../fixtures/diagnose/home", "d1a9000000000004", "crash@5 resume@6"},                   // killed in a tool; resume reconciles (needs_human)
		{"../../fixtures/diagnose/home", "d1a9000000000005", "resume@12 resume@19"},                // approve and deny between invocations are not resumes
		{"../../fixtures/diagnose/home", "d1a9000000000006", "compaction@8 compaction@14 compaction@36 compaction@54 compaction@68 compaction@78"},
		{"../../fixtures/home", "1a1e000000000003", "interrupted@7"},
		{"../../fixtures/home", "70a0000000000004", "crash@4"}, // a torn tail
		{"../../fixtures/home", "5e55100000000001", ""},
	} {
		t.Run(tt.id, func(t *testing.T) {
			s, _ := build(t, tt.home, tt.id, 0)
			var got []string
			for _, m := range s.Marks {
				got = append(got, fmt.Sprintf("%s@%d", m.Kind, m.Seq))
			}
			if g := strings.Join(got, " "); g != tt.want {
				t.Errorf("marks = %q, want %q", g, tt.want)
			}
		})
	}
}

// TestClip: strings beyond MaxText are cut on a rune boundary with a note
// of what is left out, and counted in the header.
func TestClip(t *testing.T) {
	const max = 64
	s, evs := build(t, "../../fixtures/diagnose/home", "d1a9000000000006", max)
	cut := 0
	for i, e := range s.Events {
		for _, f := range []struct{ got, was string }{{e.Summary, evs[i].Summary}, {e.Output, evs[i].Output}, {e.Text, evs[i].Text}} {
			if !utf8.ValidString(f.got) {
				t.Errorf("seq %d: invalid UTF-8 after the cut: %q", e.Seq, f.got)
			}
			if len(f.was) <= max {
				if f.got != termsafe.String(f.was) {
					t.Errorf("seq %d: a short string changed: %q -> %q", e.Seq, f.was, f.got)
				}
				continue
			}
			cut++
			head, note, ok := strings.Cut(f.got, "\n… [")
			if !ok || len(head) > max || !strings.HasPrefix(f.was, head) || !strings.Contains(note, fmt.Sprintf("%d more bytes", len(f.was)-len(head))) {
				t.Errorf("seq %d: %d bytes cut to %q", e.Seq, len(f.was), f.got)
			}
		}
	}
	if cut == 0 || s.Header.Clipped < cut {
		t.Errorf("%d strings cut, header counts %d", cut, s.Header.Clipped)
	}
}

// TestPageText checks the HTML of every recorded session's page as text,
// so it holds where no browser is installed: the data cannot end its
// script element, recorded markup is not markup, the secret is not there,
// and the policy forbids fetching.
func TestPageText(t *testing.T) {
	if testing.Short() {
		t.Skip("records sessions")
	}
	h := recorded(t)
	for _, id := range []string{idRich, idFork, idCompact, idApproval, idCrash, idInterrupt} {
		t.Run(id, func(t *testing.T) {
			st := recorder.Store{Root: h.dir}
			evs, tail, err := st.Load(id)
			if err != nil {
				t.Fatal(err)
			}
			s, err := view.Build(view.Input{ID: id, Events: evs, Tail: tail})
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := view.Write(&b, view.Page{Title: "<b>" + id, Session: s}); err != nil {
				t.Fatal(err)
			}
			html := b.String()
			for _, bad := range []string{"<script>window.__pwned", "<img", "</pre></div>", secret, "<b>"} {
				if strings.Contains(html, bad) {
					t.Errorf("page holds %q", bad)
				}
			}
			if n := strings.Count(strings.ToLower(html), "<script"); n != 2 {
				t.Errorf("%d script elements, want 2", n)
			}
			if !strings.Contains(html, `content="default-src &#39;none&#39;; style-src &#39;sha256-`) {
				t.Error("no content security policy that forbids fetching")
			}
		})
	}
}

// TestMaxTotal: when the strings cut to MaxText would pass MaxTotal, they
// are all cut to one shorter length, the longest that fits.
func TestMaxTotal(t *testing.T) {
	st := recorder.Store{Root: "../../fixtures/diagnose/home"}
	evs, _, err := st.Load("d1a9000000000006")
	if err != nil {
		t.Fatal(err)
	}
	whole := 0 // the long strings (over 256 bytes), cut to MaxText
	for _, e := range evs {
		for _, n := range []int{len(e.Text), len(e.Output), len(e.Summary), len(e.Args), len(e.Error), len(e.Evidence)} {
			if n > 256 {
				whole += min(n, view.DefaultMaxText)
			}
		}
	}
	for _, tt := range []struct{ maxTotal, wantMax int }{
		{0, view.DefaultMaxText},
		{whole, view.DefaultMaxText},
		{whole / 2, 0}, // some cut between 256 and 8 KiB
		{1, 256},       // never under 256 bytes
	} {
		s, err := view.Build(view.Input{ID: "d1a9000000000006", Events: evs, MaxTotal: tt.maxTotal})
		if err != nil {
			t.Fatal(err)
		}
		c := s.Header.MaxText
		if tt.wantMax != 0 && c != tt.wantMax || tt.wantMax == 0 && (c <= 256 || c >= view.DefaultMaxText) {
			t.Errorf("MaxTotal %d: strings cut to %d bytes", tt.maxTotal, c)
		}
		long := 0
		for i, e := range s.Events {
			for _, f := range []struct{ got, was string }{{e.Summary, evs[i].Summary}, {e.Output, evs[i].Output}, {e.Text, evs[i].Text}} {
				head, _, _ := strings.Cut(f.got, "\n… [")
				if len(head) > c {
					t.Errorf("MaxTotal %d: seq %d keeps %d bytes, over the cut of %d", tt.maxTotal, e.Seq, len(head), c)
				}
				if len(f.was) > 256 {
					long += min(len(f.was), c)
				}
			}
		}
		if tt.maxTotal > 1 && long > tt.maxTotal {
			t.Errorf("MaxTotal %d: %d bytes of long strings kept", tt.maxTotal, long)
		}
	}
}
