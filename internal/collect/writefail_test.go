package collect

import (
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentctl/agentctl/internal/otelsession"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/vfs"
)

// fullDisk is the real filesystem, except that while full is set every
// write fails with ENOSPC, as a full disk fails it.
type fullDisk struct {
	vfs.FS
	full *atomic.Bool
}

func (d fullDisk) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	f, err := d.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return fullFile{f, d.full}, nil
}

type fullFile struct {
	vfs.File
	full *atomic.Bool
}

func (f fullFile) Write(b []byte) (int, error) {
	if f.full.Load() {
		return 0, &fs.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
	}
	return f.File.Write(b)
}

// logLines is an Options.Logf that keeps what it is told.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *logLines) has(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, x := range l.lines {
		if strings.Contains(x, s) {
			return true
		}
	}
	return false
}

// keyed are stubs of a conversation named by session.id.
func keyed(seed byte, n int, conv string) tracetest.SpanStubs {
	ss := stubs(seed, n)
	for i := range ss {
		ss[i].Attributes = append(ss[i].Attributes, attribute.String("session.id", conv))
	}
	return ss
}

func collector(t *testing.T, home string, opts otelsession.Options) (*otelsession.Ingester, *Server, string, *logLines) {
	t.Helper()
	logs := &logLines{}
	opts.Source, opts.NoBackground, opts.Logf = "collect", true, logs.logf
	in, err := otelsession.NewIngester(recorder.Store{Root: home}, opts)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { in.Close() })
	srv := newServer(t, Config{Sink: in})
	httpAddr, _ := start(t, srv)
	return in, srv, httpAddr, logs
}

func send(t *testing.T, httpAddr string, ss tracetest.SpanStubs) *http2Result {
	t.Helper()
	resp, out := post(t, "http://"+httpAddr+"/v1/traces", ctProtobuf, "", exportBody(t, ss), nil)
	return &http2Result{resp.StatusCode, resp.Header.Get("Retry-After"), string(out)}
}

type http2Result struct {
	code  int
	retry string
	body  string
}

// TestDiskFullThenFreed: while the disk is full, the trace that cannot
// be written is set aside, stderr says so, and new exports are answered
// 503 with Retry-After (the spool does not grow past what the disk gives
// back); once space is freed, the writer is reopened and everything
// acknowledged lands, once.
func TestDiskFullThenFreed(t *testing.T) {
	home := t.TempDir()
	var full atomic.Bool
	in, _, httpAddr, logs := collector(t, home, otelsession.Options{Recorder: recorder.Options{FS: fullDisk{vfs.OS, &full}}})
	first := keyed(31, 3, "conv-a")
	if r := send(t, httpAddr, first); r.code != 200 {
		t.Fatalf("first export: %d %s", r.code, r.body)
	}
	if err := in.Flush(); err != nil {
		t.Fatal(err)
	}
	full.Store(true)
	second := keyed(32, 3, "conv-a")
	if r := send(t, httpAddr, second); r.code != 200 {
		t.Fatalf("export before the disk fills: %d %s", r.code, r.body)
	}
	if err := in.Flush(); err == nil {
		t.Fatalf("a write on a full disk succeeded")
	}
	if !logs.has("set aside") {
		t.Errorf("nothing said of the failed write: %q", logs.lines)
	}
	third := keyed(33, 3, "conv-b")
	if r := send(t, httpAddr, third); r.code != 503 || r.retry == "" {
		t.Errorf("export while writes fail: %d Retry-After %q %s; want 503 with Retry-After", r.code, r.retry, r.body)
	}
	full.Store(false)
	if err := in.Flush(); err != nil {
		t.Fatalf("write once space is freed: %v", err)
	}
	if !logs.has("writing sessions again") {
		t.Errorf("nothing said of writing again: %q", logs.lines)
	}
	if r := send(t, httpAddr, third); r.code != 200 {
		t.Fatalf("export after space was freed: %d %s", r.code, r.body)
	}
	if err := in.Flush(); err != nil {
		t.Fatal(err)
	}
	st := recorder.Store{Root: home}
	for _, ss := range []tracetest.SpanStubs{first, second, third} {
		checkAll(t, "after the disk was freed", st, ss)
	}
}

// TestSessionHeldElsewhere: a trace for a session another process holds
// is set aside while the others are written and acknowledged as usual;
// once the lease is released it lands, once. A damaged collected session
// does not stop collect from starting, nor the traces of others.
func TestSessionHeldElsewhere(t *testing.T) {
	home := t.TempDir()
	st := recorder.Store{Root: home}
	in, _, httpAddr, _ := collector(t, home, otelsession.Options{})
	held, damaged := keyed(41, 3, "conv-held"), keyed(42, 3, "conv-damaged")
	for _, ss := range []tracetest.SpanStubs{held, damaged} {
		if r := send(t, httpAddr, ss); r.code != 200 {
			t.Fatalf("export: %d %s", r.code, r.body)
		}
	}
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	idOf := func(ss tracetest.SpanStubs) string {
		ids, _ := st.IDs()
		for _, id := range ids {
			evs, _, _ := st.Load(id)
			for _, e := range evs {
				if strings.Contains(string(e.Attrs), ss[0].SpanContext.SpanID().String()) {
					return id
				}
			}
		}
		t.Fatalf("no session holds %s", key(ss[0]))
		return ""
	}
	heldID, damagedID := idOf(held), idOf(damaged)
	lease, err := recorder.AcquireLease(st.SessionDir(heldID))
	if err != nil {
		t.Fatal(err)
	}
	logPath := st.LogPath(damagedID)
	orig, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	bad := append([]byte(nil), orig...)
	bad[len(bad)/3] ^= 0xff
	if err := os.WriteFile(logPath, bad, 0o644); err != nil {
		t.Fatal(err)
	}

	in, _, httpAddr, logs := collector(t, home, otelsession.Options{})
	if !logs.has(damagedID) {
		t.Errorf("nothing said of the damaged session %s: %q", damagedID, logs.lines)
	}
	more, again, other := keyed(43, 2, "conv-held"), keyed(44, 2, "conv-damaged"), keyed(45, 2, "conv-free")
	for _, ss := range []tracetest.SpanStubs{more, again, other} {
		if r := send(t, httpAddr, ss); r.code != 200 {
			t.Fatalf("export: %d %s", r.code, r.body)
		}
	}
	if err := in.Flush(); err == nil {
		t.Errorf("writing into a held and a damaged session succeeded")
	}
	checkAll(t, "beside the held session", st, other, damagedID)
	if r := send(t, httpAddr, keyed(46, 1, "conv-free")); r.code != 200 {
		t.Errorf("export while one session is held: %d %s; want 200 (the others are written)", r.code, r.body)
	}
	lease.Release()
	if err := os.WriteFile(logPath, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := in.Flush(); err != nil {
		t.Fatalf("write once the lease is released and the log repaired: %v", err)
	}
	for _, ss := range []tracetest.SpanStubs{held, damaged, more, again, other} {
		checkAll(t, "after the lease was released", st, ss)
	}
}
