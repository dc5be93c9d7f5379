package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMain(m *testing.M) {
	Init()
	if os.Getenv(envTestHarness) != "" {
		os.Exit(testHarness())
	}
	os.Exit(m.Run())
}

// envTestHarness switches the test binary into a stand-in for agentctl
// run: it starts one confined (or unconfined) tool as the tools package
// does, records it, and waits for a kill. The value is JSON testHarnessArgs.
const envTestHarness = "AGENTCTL_SANDBOX_TEST_HARNESS"

type testHarnessArgs struct {
	Config Config `json:"config"`
	WS     string `json:"ws"`
	Script string `json:"script"`
}

func testHarness() int {
	var a testHarnessArgs
	if err := json.Unmarshal([]byte(os.Getenv(envTestHarness)), &a); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + a.WS, "TMPDIR=/tmp"}
	l, err := a.Config.Prepare(a.WS, a.WS, []string{"bash", "-c", a.Script}, env)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	cmd := l.Command(context.Background())
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := l.Start(cmd); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	_ = cmd.Wait()
	return 0
}

// runIn runs a shell command confined by c in workspace ws and returns its
// combined output and error.
func runIn(t *testing.T, c Config, ws, script string, env ...string) (string, error) {
	t.Helper()
	env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + ws, "TMPDIR=/tmp"}, env...)
	l, err := c.Prepare(ws, ws, []string{"bash", "-c", script}, env)
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	defer l.Close()
	cmd := l.Command(context.Background())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := l.Start(cmd); err != nil {
		t.Fatalf("start: %v", err)
	}
	err = cmd.Wait()
	return out.String(), err
}

func TestSmoke(t *testing.T) {
	if err := Available(); err != nil {
		t.Skipf("sandbox unavailable: %v", err)
	}
	ws := t.TempDir()
	out, err := runIn(t, Config{}, ws, "echo hi > f.txt; cat f.txt; pwd; id -u; echo $$; ls /dev; grep Cap /proc/self/status; touch /etc/x; touch /usr/x; ls -la /root/.ssh; ls /tmp; ls /run; cat /proc/net/dev; ps ax")
	t.Logf("out:\n%s\nerr: %v", out, err)
	b, _ := os.ReadFile(filepath.Join(ws, "f.txt"))
	if !strings.Contains(string(b), "hi") {
		t.Errorf("workspace not writable")
	}
}
