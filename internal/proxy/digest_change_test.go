package proxy

import (
	"testing"

	"github.com/agentctl/agentctl/internal/replay/check"
)

// TestVerifyAfterSystemOrToolsChange: Claude Code (2.1.328), answered a
// 400 (a replay's divergence), sends the same messages again with another
// system text and more tools; the log records the system text and tools
// once, in its header, so the digest of such a request cannot be
// projected from it. The proxy records no digest for it (saying why), and
// replay verify of the recording passes instead of reporting a faithful
// log as diverged; the calls before the change are still checked.
func TestVerifyAfterSystemOrToolsChange(t *testing.T) {
	script := loadScript(t, `
turns:
  - text: "one"
  - text: "two"
  - text: "three"
`)
	srv, mem, base := startProxy(t, Config{Backend: NewScripted(script, "")})
	u := func(s string) any { return map[string]any{"role": "user", "content": s} }
	a := func(s string) any { return map[string]any{"role": "assistant", "content": s} }
	tool := func(name string) any {
		return map[string]any{"name": name, "input_schema": map[string]any{"type": "object"}}
	}
	req := func(system string, tools []any, msgs ...any) string {
		return string(marshal(map[string]any{"model": "claude-opus-5-5", "max_tokens": 1024, "system": system, "tools": tools, "messages": msgs}))
	}
	url := base + "/s/cc/v1/messages"
	post(t, url, req("You are Claude Code.", []any{tool("Read")}, u("hi")))
	post(t, url, req("You are Claude Code.", []any{tool("Read")}, u("hi"), a("one"), u("more")))
	post(t, url, req("You are Claude Code, again.", []any{tool("Read"), tool("Grep")}, u("hi"), a("one"), u("more"), a("two"), u("and more")))
	evs := only(t, srv, mem)
	rep := check.Verify("cc", evs, check.VerifyOptions{})
	if rep.Status != check.StatusOK || rep.Checked != 2 || rep.Skipped != 1 {
		t.Errorf("replay verify: %s", rep.Text())
	}
}
