package cli_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/otelsession/oteltest"
)

// TestOTelAppsReplayOffline is issue 39 item 3 for the apps of
// fixtures/otel: each app's conversation, collected from its telemetry by
// a real `agentctl collect` (no proxy recorded it), is replayed offline
// to the same app run from a fresh copy of the apps in another folder,
// which must finish with the recorded answer; the same app asked about
// another order (AGENT_TASK), and then with one changed tool result (its
// lookup_order says UPS, not DHL), must exit 6 naming turn 1 and turn 2.
//
// Needs the emitters .ci/run installs (AGENTCTL_NPM_OTEL; unset: skipped).
func TestOTelAppsReplayOffline(t *testing.T) {
	t.Parallel() // long, and self-contained: it overlaps the scripts' tail
	recorded := oteltest.PrepareApps(t)
	for _, e := range oteltest.Emitters {
		t.Run(e.Name, func(t *testing.T) {
			chome, mhome := t.TempDir(), t.TempDir()
			c := startCollector(t, chome)
			out, code, stderr := runAppIn(t, mhome, []string{"--script", oteltest.ModelScript(), "--session", "truth"}, recorded, e,
				oteltest.ExportEnv(c.http, oteltest.HTTPProtobuf)...)
			if code != 0 {
				t.Fatalf("the app under the scripted model: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
			}
			answer := strings.TrimSpace(out)
			c.stop(t)
			ids := sessionIDs(t, chome)
			if len(ids) != 1 {
				t.Fatalf("collect wrote %d sessions (%v), want the one conversation", len(ids), ids)
			}
			off := []string{"OTEL_TRACES_EXPORTER=none", "OTEL_LOGS_EXPORTER=none", "OTEL_METRICS_EXPORTER=none"}

			// The same app from another folder, offline.
			again := oteltest.PrepareApps(t)
			out, code, stderr = runAppIn(t, chome, []string{"--replay", ids[0], "--session", "again"}, again, e, off...)
			if code != 0 || strings.TrimSpace(out) != answer || strings.Contains(stderr, "DIVERGED") {
				t.Errorf("replayed from %s: exit %d, answered %q (want 0 and %q)\nstderr:\n%s", again, code, strings.TrimSpace(out), answer, stderr)
			}

			// Another question: turn 1.
			_, code, stderr = runAppIn(t, chome, []string{"--replay", ids[0], "--session", "prompt"}, again, e,
				append(off, "AGENT_TASK=Where is my order A-1043?")...)
			if code != 6 || !regexp.MustCompile(`DIVERGED: .*turn 1\b.*A-1043`).MatchString(stderr) {
				t.Errorf("asked about another order: exit %d, want 6 and a divergence at turn 1 naming A-1043\nstderr:\n%s", code, stderr)
			}

			// Another tool result: turn 2.
			changed := oteltest.PrepareApps(t)
			lib := filepath.Join(changed, "lib", "order.mjs")
			src, err := os.ReadFile(lib)
			if err != nil {
				t.Fatal(err)
			}
			ups := strings.Replace(string(src), "carrier: 'DHL'", "carrier: 'UPS'", 1)
			if ups == string(src) {
				t.Fatalf("fixtures/otel/lib/order.mjs changed shape: no carrier: 'DHL'")
			}
			if err := os.WriteFile(lib, []byte(ups), 0o644); err != nil {
				t.Fatal(err)
			}
			_, code, stderr = runAppIn(t, chome, []string{"--replay", ids[0], "--session", "tool"}, changed, e, off...)
			if code != 6 || !regexp.MustCompile(`DIVERGED: .*turn 2\b.*UPS`).MatchString(stderr) {
				t.Errorf("with another tool result: exit %d, want 6 and a divergence at turn 2 naming UPS\nstderr:\n%s", code, stderr)
			}
		})
	}
}

// runAppIn runs `agentctl --home HOME proxy ARGS -- node APP` from
// dir (the apps' folder) with env added, and returns the app's stdout,
// the exit code and the proxy's stderr.
func runAppIn(t *testing.T, home string, args []string, dir string, e oteltest.Emitter, env ...string) (string, int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	full := append(append([]string{"--home", home, "proxy"}, args...), "--")
	cmd := exec.CommandContext(ctx, "agentctl", append(full, oteltest.Command(dir, e)...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out.String(), 0, errb.String()
	case errors.As(err, &ee):
		return out.String(), ee.ExitCode(), errb.String()
	}
	t.Fatalf("agentctl %s: %v", strings.Join(full, " "), err)
	return "", 0, ""
}
