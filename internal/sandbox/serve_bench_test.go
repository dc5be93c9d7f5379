package sandbox

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"testing"
	"time"
)

// benchServe starts one `curl` under c that makes calls requests to
// ServeAddr (one keep-alive connection), the harness serving them on the
// listener Launch hands over: an external agent's start plus its
// model-boundary round trips. The difference between calls=200 and
// calls=1, over 199, is the cost of one round trip.
func benchServe(b *testing.B, c Config, calls int) {
	if err := Available(); err != nil && !c.Unconfined {
		b.Skipf("sandbox unavailable: %v", err)
	}
	if _, err := exec.LookPath("curl"); err != nil {
		b.Skip("no curl")
	}
	ws := b.TempDir()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })}
	script := fmt.Sprintf(`u="http://$SERVE_ADDR/v1/x"; set --; i=0; while [ $i -lt %d ]; do`, calls) + ` set -- "$@" "$u"; i=$((i+1)); done; curl -sf -o /dev/null "$@"`
	for b.Loop() {
		l, err := c.Prepare(ws, ws, []string{"sh", "-c", script}, []string{"PATH=/usr/bin:/bin"})
		if err != nil {
			b.Fatal(err)
		}
		cmd := l.Command(context.Background())
		cmd.Env = append(l.Env, "SERVE_ADDR="+l.ServeAddr)
		if err := l.Start(cmd); err != nil {
			b.Fatal(err)
		}
		ln, err := l.Listener(10 * time.Second)
		if err != nil {
			b.Fatal(err)
		}
		go srv.Serve(ln)
		if err := cmd.Wait(); err != nil {
			b.Fatalf("agent: %v", err)
		}
		l.Close()
	}
	b.ReportMetric(float64(calls), "calls/op")
}

// BenchmarkServeSandboxed: an agent in the sandbox, the proxy's listener
// made inside its network namespace and handed over.
func BenchmarkServeSandboxed(b *testing.B) { benchCalls(b, Config{Serve: "127.0.0.1:0"}) }

// BenchmarkServeUnconfined: the same agent on the host, the listener on
// the host's loopback: the reference.
func BenchmarkServeUnconfined(b *testing.B) {
	benchCalls(b, Config{Serve: "127.0.0.1:0", Unconfined: true})
}

func benchCalls(b *testing.B, c Config) {
	for _, n := range []int{1, 200} {
		b.Run(fmt.Sprintf("calls=%d", n), func(b *testing.B) { benchServe(b, c, n) })
	}
}
