package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/testenv"
)

// collectRun end to end in this process: the listening line, progress
// lines on stderr while spans arrive, and after the cancel (SIGTERM in
// the binary) the drain, the seal and the summary on stdout.
func TestCollectRunProgressAndSummary(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	out, errb := &testenv.Buffer{}, &testenv.Buffer{}
	f := &Factory{Streams: Streams{Out: out, Err: errb}, Home: home}
	opts := &collectOptions{Listen: "127.0.0.1:0", GRPC: "off", DrainTimeout: 10 * time.Second, ProgressEvery: 50 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- collectRun(ctx, f, opts) }()
	var addr string
	for deadline := time.Now().Add(10 * time.Second); addr == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m := regexp.MustCompile(`OTLP/HTTP on (\S+):`).FindStringSubmatch(errb.String()); m != nil {
			addr = m[1]
		}
	}
	if addr == "" {
		t.Fatalf("no listening line: %s", errb.String())
	}
	// The OTLP specification's JSON example, a real request.
	body := []byte(`{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"my.service"}}]},"scopeSpans":[{"scope":{"name":"my.library","version":"1.0.0"},"spans":[{"traceId":"5B8EFFF798038103D269B633813FC60C","spanId":"EEE19B7EC3C1B174","parentSpanId":"EEE19B7EC3C1B173","name":"I'm a server span","startTimeUnixNano":1544712660000000000,"endTimeUnixNano":1544712661000000000,"kind":2}]}]}]}`)
	resp, err := http.Post("http://"+addr+"/v1/traces", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("export: %s", resp.Status)
	}
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(errb.String(), "1 spans"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no progress line with the span: %s", errb.String())
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("collectRun after cancel: %v", err)
	}
	if !regexp.MustCompile(`collect: \d+ sessions, 1 spans \(\d+/s\), 0 log records, 0 rejected, 0 pushed back`).MatchString(errb.String()) {
		t.Errorf("progress lines: %q", errb.String())
	}
	if got := out.String(); !strings.HasPrefix(got, "collected 1 spans and 0 log records into 1 sessions in ") {
		t.Errorf("summary %q, want the spans and the one session", got)
	}

	// --json: the listening line, then the summary.
	out2 := &testenv.Buffer{}
	f2 := &Factory{Streams: Streams{Out: out2, Err: &testenv.Buffer{}}, Home: home}
	ctx2, cancel2 := context.WithCancel(context.Background())
	go func() { time.Sleep(300 * time.Millisecond); cancel2() }()
	if err := collectRun(ctx2, f2, &collectOptions{Listen: "127.0.0.1:0", GRPC: "127.0.0.1:0", JSON: true, DrainTimeout: time.Second}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out2.String()), "\n")
	var first collectListening
	var last collectSummary
	if len(lines) != 2 || json.Unmarshal([]byte(lines[0]), &first) != nil || json.Unmarshal([]byte(lines[1]), &last) != nil ||
		first.Kind != "listening" || first.HTTP == "" || first.GRPC == "" || last.Kind != "finished" || last.Sessions != 0 {
		t.Errorf("--json lines %q, want listening (both addresses) then finished with no new session", lines)
	}
}
