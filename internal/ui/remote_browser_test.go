package ui_test

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/remote/weedtest"
	"github.com/agentctl/agentctl/internal/testenv/browser"
	"github.com/agentctl/agentctl/internal/testenv/testcli"
)

// TestRunsRemoteUnion: two homes push their sessions to one bucket of a
// real SeaweedFS; a third, with a session of its own, serves `agentctl ui
// --remote` (the command as a user runs it), and its runs page lists the
// union, filters over it, and stays read-only (the bucket is unchanged).
func TestRunsRemoteUnion(t *testing.T) {
	srv := weedtest.Start(t)
	bucket := srv.Bucket(t, "runs", "agentctl")
	b := browser.New(t)

	homeA, homeB, report := newHome(t), newHome(t), newHome(t)
	runsSession{id: "aaaa000000000001", name: "on-a", model: "gpt-4o-mini", status: "done", text: "from runner a", started: day0}.write(t, homeA)
	runsSession{id: "aaaa000000000002", name: "on-a", model: "claude-sonnet-4-5", status: "failed", text: "from runner a", started: day0.Add(time.Hour)}.write(t, homeA)
	runsSession{id: "bbbb000000000001", name: "on-b", model: "gpt-4o-mini", status: "done", text: "from runner b", started: day0.Add(2 * time.Hour)}.write(t, homeB)
	runsSession{id: "cccc000000000001", name: "local", model: "llama-3", status: "done", text: "mine", started: day0.Add(3 * time.Hour)}.write(t, report)
	// What a run seals at its end, the runsSession sessions are sealed here.
	testcli.Must(t, homeA, "history", "seal")
	testcli.Must(t, homeB, "history", "seal")
	testcli.Must(t, homeA, "history", "push", "--remote", bucket)
	testcli.Must(t, homeB, "history", "push", "--remote", bucket)
	before, err := srv.Client(bucket)
	if err != nil {
		t.Fatal(err)
	}
	keys := func() []string {
		objs, err := before.List(context.Background(), "")
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, o := range objs {
			out = append(out, o.Key)
		}
		return out
	}
	pushed := keys()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	const token = "0123456789abcdef0123456789abcdef"
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan testcli.Result, 1)
	go func() {
		done <- testcli.RunContext(ctx, t, report, "ui", "--remote", bucket, "--listen", addr, "--token", token)
	}()
	defer func() {
		cancel()
		if r := <-done; r.Code != 0 {
			t.Errorf("agentctl ui --remote: exit %d: %s", r.Code, r.Stderr)
		}
	}()
	base := "http://" + addr
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get(base + "/assets/ui.css")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("agentctl ui --remote did not answer on %s", addr)
		}
	}
	own := func(u string) bool { return len(u) > len(base) && u[:len(base)+1] == base+"/" }
	open := func(q url.Values) *browser.Tab {
		if q == nil {
			q = url.Values{}
		}
		q.Set("token", token)
		return b.Open(t, base+"/runs?"+q.Encode(), "body[data-painted]")
	}
	tab := open(nil)
	want := []string{"cccc000000000001", "bbbb000000000001", "aaaa000000000002", "aaaa000000000001"}
	if got := rows(tab); !slices.Equal(got, want) {
		t.Errorf("ui --remote lists %v, want the home's and both runners' %v", got, want)
	}
	tab.Screenshot(shots, "runs-remote")
	tab.Clean(func(u string) bool { return own(u) || len(u) > 5 && u[:5] == "data:" })
	tab = open(url.Values{"model": {"gpt-4o-mini"}})
	if got := rows(tab); !slices.Equal(got, []string{"bbbb000000000001", "aaaa000000000001"}) {
		t.Errorf("filtered by model over the remote: %v", got)
	}
	tab = open(url.Values{"q": {"runner b"}})
	if got := rows(tab); !slices.Equal(got, []string{"bbbb000000000001"}) {
		t.Errorf("text search over the remote: %v", got)
	}
	// A pushed session the home does not have opens from the remote, as
	// `show --remote` reads it (404 before the page fetched it).
	tab.Eval(`document.body.setAttribute('data-old', ''), true`, nil)
	tab.Click(`tr[data-session="bbbb000000000001"] a`)
	tab.WaitFor("body[data-painted]:not([data-old])")
	if h := tab.Text("h1"); !strings.Contains(h, "bbbb000000000001") || !strings.Contains(h, "on-b") {
		t.Errorf("the remote session's page is titled %q", h)
	}
	tab.WaitFor("#figures[data-loaded]")
	if txt := tab.Text("#timeline"); !strings.Contains(txt, "from runner b") {
		t.Errorf("the remote session's timeline does not show its user message: %.300q", txt)
	}
	tab.Clean(func(u string) bool { return own(u) || len(u) > 5 && u[:5] == "data:" })
	// The home's session against two only the remote has: compared from
	// the remote's cache, as their pages read them.
	q := url.Values{"token": {token}, "s": {"cccc000000000001", "aaaa000000000002", "bbbb000000000001"}}
	tab = b.Open(t, base+"/compare?"+q.Encode(), "body[data-painted]")
	if txt := tab.Text("main"); !strings.Contains(txt, "aaaa000000000002") || !strings.Contains(txt, "bbbb000000000001") || !strings.Contains(txt, "claude-sonnet-4-5") {
		t.Errorf("compare of the home's session and the remote's: %.400q", txt)
	}
	tab.Clean(func(u string) bool { return own(u) || len(u) > 5 && u[:5] == "data:" })
	if after := keys(); !slices.Equal(after, pushed) {
		t.Errorf("serving the remote changed the bucket: %v, was %v", after, pushed)
	}
}
