package ui_test

import (
	"context"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/testenv/browser"
	"github.com/agentctl/agentctl/internal/testenv/logcheck"
	"github.com/agentctl/agentctl/internal/testenv/testcli"
	"github.com/agentctl/agentctl/internal/ui"
)

// shots is where the browser tests keep their screenshots.
var shots = filepath.Join("testdata", "out")

// newHome is a home for one test, checked by the shared log check when the
// test ends.
func newHome(t *testing.T) string {
	t.Helper()
	home := filepath.Join(t.TempDir(), "home")
	t.Cleanup(func() {
		if err := logcheck.Home(recorder.Store{Root: home}); err != nil {
			t.Errorf("log check: %v", err)
		}
	})
	return home
}

// runDefault records one run of the embedded default agent in home and
// returns its session id.
func runDefault(t *testing.T, home string, args ...string) string {
	t.Helper()
	r := testcli.Must(t, home, append([]string{"run", "--json"}, args...)...)
	_ = r
	ids, err := recorder.Store{Root: home}.IDs()
	if err != nil || len(ids) == 0 {
		t.Fatalf("no session after run: %v", err)
	}
	latest, err := recorder.Store{Root: home}.Resolve("latest")
	if err != nil {
		t.Fatal(err)
	}
	return latest
}

// served is a running ui server over a home.
type served struct {
	srv  *ui.Server
	base string // http://127.0.0.1:PORT
	url  string // base with the token, as printed
}

// serve starts the app over home on a loopback port until the test ends.
func serve(t *testing.T, home string) *served {
	t.Helper()
	srv, err := ui.New(ui.Options{Store: recorder.Store{Root: home}, Generator: "agentctl test"})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && err != http.ErrServerClosed {
			t.Errorf("serve: %v", err)
		}
	})
	return &served{srv: srv, base: "http://" + ln.Addr().String(), url: srv.URL(ln)}
}

// page is the URL of an app path with the token (the first page a browser
// opens; the cookie carries it afterwards).
func (s *served) page(path string, q url.Values) string {
	if q == nil {
		q = url.Values{}
	}
	q.Set("token", s.srv.Token())
	return s.base + path + "?" + q.Encode()
}

// ownOnly allows the requests of a page to its own server only.
func (s *served) ownOnly(u string) bool { return strings.HasPrefix(u, s.base+"/") }

// open loads an app page in a fresh tab of b and waits for it to paint.
func (s *served) open(t *testing.T, b *browser.Browser, path string, q url.Values) *browser.Tab {
	t.Helper()
	return b.Open(t, s.page(path, q), "body[data-painted]")
}
