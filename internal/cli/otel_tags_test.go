package cli_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/otelsession/oteltest"
)

// A real app traced by OpenInference (fixtures/otel/openinference.mjs)
// that says who the conversation is for and labels it, as OpenInference's
// docs show (setUser, setTags, setMetadata): the session collect writes
// carries the user and the tags, the sessions view has them, and
// 'agentctl sessions' finds it by them.
func TestCollectedSessionUserAndTags(t *testing.T) {
	dir := oteltest.PrepareApps(t) // skips without AGENTCTL_NPM_OTEL
	e, _ := oteltest.EmitterNamed("openinference")
	chome, mhome := t.TempDir(), t.TempDir()
	c := startCollector(t, chome)
	env := append(oteltest.ExportEnv(c.http, oteltest.HTTPProtobuf),
		"AGENT_USER_ID=alice@example.com", "AGENT_TAGS=support,env=prod,Tier=Gold,bad tag",
		`AGENT_METADATA={"customer":"A-1042","attempt":2,"nested":{"x":1}}`)
	if out, stderr, err := runUnderProxy(t, mhome, []string{"--script", oteltest.ModelScript(), "--session", "truth"}, dir, e, env...); err != nil {
		t.Fatalf("the app under the scripted model: %v\n%s\n%s", err, out, stderr)
	}
	c.stop(t)

	var rows []struct {
		SessionID string            `json:"session_id"`
		Origin    string            `json:"origin"`
		UserID    string            `json:"user_id"`
		Tags      map[string]string `json:"tags"`
	}
	if err := json.Unmarshal([]byte(agentctlOut(t, chome, "sessions", "--json", "--user", "alice@example.com", "--tag", "env=prod")), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 {
		t.Fatalf("sessions --user alice@example.com --tag env=prod = %+v, want the collected session", rows)
	}
	r := rows[0]
	// "bad tag" has no key a tag can have: left out, and counted.
	want := "collect alice@example.com map[env:prod metadata.attempt:2 metadata.customer:A-1042 support: tier:Gold]"
	if got := fmt.Sprint(r.Origin, " ", r.UserID, " ", r.Tags); got != want {
		t.Errorf("session = %s\nwant      %s", got, want)
	}
	if out := agentctlOut(t, chome, "show", r.SessionID); !strings.Contains(out, "(user alice@example.com; tags env=prod, metadata.attempt=2, metadata.customer=A-1042, support=, tier=Gold)") {
		t.Errorf("show's header line does not name the user and tags:\n%s", out)
	}
	out := agentctlOut(t, chome, "query", "--format", "csv", "SELECT json_extract(attrs, '$.tags_dropped') AS dropped FROM events WHERE kind = 'session_started'")
	if out != "dropped\n1\n" {
		t.Errorf("tags_dropped = %q, want 1", out)
	}
}
