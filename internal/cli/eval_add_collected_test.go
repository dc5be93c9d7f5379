package cli_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/otelsession/oteltest"
)

// TestEvalAddCollectedSuite is issue 39's "production case runs the
// program", end to end: a real OpenTelemetry-instrumented app
// (fixtures/otel, the OpenTelemetry project's OpenAI instrumentation)
// answers two customers in production, its telemetry collected by a real
// `agentctl collect`; a suite made ONLY with `eval add` (a new file,
// --from-query over the collected sessions, --command naming the app)
// passes against the unchanged app, run offline behind a replay of the
// recorded model traffic, and fails, naming the turn, once one line of the
// app's prompt changed.
//
// Needs the emitters .ci/run installs (AGENTCTL_NPM_OTEL; unset: skipped),
// and the matcher that compares a collected session's requests (issue 39
// item 1): without it the changed app passes.
func TestEvalAddCollectedSuite(t *testing.T) {
	t.Parallel() // long, and self-contained: it overlaps the scripts' tail
	apps := oteltest.PrepareApps(t)
	npm := oteltest.NPMDir(t)
	e, _ := oteltest.EmitterNamed("otel-openai")
	chome, mhome, ehome := t.TempDir(), t.TempDir(), t.TempDir()

	// Production: two conversations of the app, exported to collect.
	c := startCollector(t, chome)
	for _, s := range []string{"c1", "c2"} {
		out, stderr, err := runUnderProxy(t, mhome, []string{"--script", oteltest.ModelScript(), "--session", s}, apps, e, oteltest.ExportEnv(c.http, oteltest.HTTPProtobuf)...)
		if err != nil {
			t.Fatalf("the app under the scripted model: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr)
		}
	}
	c.stop(t)
	if ids := sessionIDs(t, chome); len(ids) != 2 {
		t.Fatalf("collect wrote sessions %v, want the two conversations\ncollect stderr:\n%s", ids, c.stderr.String())
	}

	// The suite, made only with eval add: the file does not exist yet.
	suite := filepath.Join(t.TempDir(), "ci", "production.yaml")
	out := agentctlOut(t, chome, "eval", "add", suite,
		"--from-query", "SELECT session_id FROM sessions WHERE status = 'imported' ORDER BY started",
		"--command", "node "+e.Script, "--workspace-from", apps, "--read-only", npm,
		"--env", "OTEL_TRACES_EXPORTER", "--env", "OTEL_LOGS_EXPORTER", "--env", "OTEL_METRICS_EXPORTER")
	if !strings.Contains(out, "2 added, 0 skipped") {
		t.Fatalf("eval add --from-query printed:\n%s\nwant 2 added, 0 skipped", out)
	}
	if again := agentctlOut(t, chome, "eval", "add", suite, "--from-query", "SELECT session_id FROM sessions", "--command", "node "+e.Script); !strings.Contains(again, "0 added, 2 skipped") {
		t.Fatalf("eval add --from-query again printed:\n%s\nwant 0 added, 2 skipped", again)
	}

	// CI, offline (telemetry off, the model server gone): the unchanged
	// app passes.
	if code, out := evalExit(t, ehome, suite); code != 0 {
		t.Fatalf("eval of the unchanged app exited %d, want 0:\n%s", code, out)
	}

	// One line of the app's prompt changed: the suite fails, naming the turn.
	lib := filepath.Join(apps, "lib", "order.mjs")
	b, err := os.ReadFile(lib)
	if err != nil {
		t.Fatal(err)
	}
	const old = "answer in one sentence."
	if !bytes.Contains(b, []byte(old)) {
		t.Fatalf("%s no longer has the line %q this test changes", lib, old)
	}
	if err := os.WriteFile(lib, bytes.Replace(b, []byte(old), []byte("answer in two sentences."), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out := evalExit(t, ehome, suite)
	if code != 6 {
		t.Fatalf("eval of the changed app exited %d, want 6:\n%s", code, out)
	}
	t.Logf("the changed app's eval:\n%s", out)
	if !strings.Contains(out, "turn 1 diverged") || !strings.Contains(out, "two sentences") {
		t.Errorf("the failure does not name turn 1 and the changed text:\n%s", out)
	}
}

// evalExit runs `agentctl eval suite` in home with the app's telemetry
// off, and returns its exit status and stdout.
func evalExit(t *testing.T, home, suite string) (int, string) {
	t.Helper()
	cmd := exec.Command("agentctl", "--home", home, "eval", suite)
	cmd.Env = append(os.Environ(), "OTEL_TRACES_EXPORTER=none", "OTEL_LOGS_EXPORTER=none", "OTEL_METRICS_EXPORTER=none")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), out.String() + errb.String()
}
