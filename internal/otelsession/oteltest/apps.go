package oteltest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/testenv"
)

// NPMEnv names the folder .ci/run installs fixtures/otel/npm's packages
// into (its node_modules is what the apps import).
const NPMEnv = "AGENTCTL_NPM_OTEL"

// Emitter is one app of fixtures/otel: a real instrumentation around the
// same tool-using agent.
type Emitter struct {
	// Name is the capture folder's name (testdata/otel/<Name>).
	Name string
	// Script is the app's file in fixtures/otel.
	Script string
	// Packages are the npm packages whose telemetry it is, for the
	// capture's README (their installed versions are read from the lock).
	Packages []string
	// Convention says what the telemetry looks like, for the README.
	Convention string
}

// Emitters are the apps, one per instrumentation.
var Emitters = []Emitter{
	{Name: "otel-openai", Script: "openai-otel.mjs", Packages: []string{"@opentelemetry/instrumentation-openai", "openai"},
		Convention: "OpenTelemetry GenAI semconv (spans) with content as log records gen_ai.*.message / gen_ai.choice"},
	{Name: "openinference", Script: "openinference.mjs", Packages: []string{"@arizeai/openinference-instrumentation-openai", "@arizeai/openinference-core", "openai"},
		Convention: "OpenInference (llm.input_messages.N.*, openinference.span.kind, session.id, an app's TOOL span)"},
	{Name: "openllmetry", Script: "openllmetry.mjs", Packages: []string{"@traceloop/instrumentation-openai", "openai"},
		Convention: "OpenLLMetry (Traceloop): gen_ai.* on spans"},
	{Name: "vercel-genai", Script: "vercel-genai.mjs", Packages: []string{"ai", "@ai-sdk/openai", "@ai-sdk/otel"},
		Convention: "Vercel AI SDK, @ai-sdk/otel OpenTelemetry: current GenAI semconv (invoke_agent, chat, execute_tool)"},
	{Name: "vercel-legacy", Script: "vercel-legacy.mjs", Packages: []string{"ai", "@ai-sdk/openai", "@ai-sdk/otel"},
		Convention: "Vercel AI SDK, @ai-sdk/otel LegacyOpenTelemetry: ai.generateText*, ai.toolCall, ai.prompt.messages"},
}

// LangChain is LangChain.js's own agent loop (createAgent) traced by
// OpenInference's LangChain instrumentation. It is not one of Emitters:
// it runs TwoOrdersScript (two tool calls in one answer), the case its
// telemetry gets wrong (tool calls without ids, results as serialized
// ToolMessages), and is captured once, over HTTP/JSON
// (testdata/otel/langchain).
var LangChain = Emitter{Name: "langchain", Script: "langchain-agent.mjs",
	Packages:   []string{"langchain", "@langchain/core", "@langchain/openai", "@arizeai/openinference-instrumentation-langchain"},
	Convention: "OpenInference for LangChain.js (LLM spans whose tool calls have no tool_call.id, TOOL spans whose output is a serialized ToolMessage, CHAIN spans)"}

// TwoOrdersTask is the task LangChain is run with.
const TwoOrdersTask = "Where are my orders A-1042 and A-1043?"

// TwoOrdersScript is the scripted model LangChain talks to: two
// lookup_order calls in one answer, then the answer.
func TwoOrdersScript() string { return testenv.Fixture("otel", "model-two-orders.yaml") }

// EmitterNamed is the emitter called name.
func EmitterNamed(name string) (Emitter, bool) {
	for _, e := range Emitters {
		if e.Name == name {
			return e, true
		}
	}
	return Emitter{}, false
}

// ModelScript is the scripted model the apps' conversation is written
// for (served by `agentctl proxy --script`).
func ModelScript() string { return testenv.Fixture("otel", "model.yaml") }

// NPMDir is $AGENTCTL_NPM_OTEL: it skips t when the variable is unset and
// fails it when it is set but the packages are not installed there (CI
// sets it: a broken install must not pass as a skip).
func NPMDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv(NPMEnv)
	if dir == "" {
		t.Skipf("%s is not set: the OpenTelemetry emitters are not installed (.ci/run installs them)", NPMEnv)
	}
	for _, p := range []string{"openai", "ai", "@opentelemetry/sdk-node"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", p, "package.json")); err != nil {
			t.Fatalf("%s=%s but %s is not installed there (run .ci/run's npm-otel step): %v", NPMEnv, dir, p, err)
		}
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("%s is set but node is not on PATH: %v", NPMEnv, err)
	}
	return dir
}

// PrepareApps copies fixtures/otel's apps into a temporary folder with a
// node_modules link to $AGENTCTL_NPM_OTEL's, and returns the folder; run
// an app as `node DIR/<Emitter.Script>`.
func PrepareApps(t testing.TB) string {
	t.Helper()
	npm := NPMDir(t)
	dst := filepath.Join(t.TempDir(), "apps")
	src := testenv.Fixture("otel")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			if rel == "npm" || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !strings.HasSuffix(p, ".mjs") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatalf("copy the otel apps: %v", err)
	}
	if err := os.Symlink(filepath.Join(npm, "node_modules"), filepath.Join(dst, "node_modules")); err != nil {
		t.Fatal(err)
	}
	return dst
}

// ExportEnv is the environment that points an app's OTel SDK at endpoint
// over p, traces and logs, with short batch delays so a short run's
// telemetry leaves promptly.
func ExportEnv(endpoint string, p Protocol) []string {
	return []string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + endpoint,
		"OTEL_EXPORTER_OTLP_PROTOCOL=" + string(p),
		"OTEL_TRACES_EXPORTER=otlp",
		"OTEL_LOGS_EXPORTER=otlp",
		"OTEL_METRICS_EXPORTER=none",
		"OTEL_BSP_SCHEDULE_DELAY=200",
		"OTEL_BLRP_SCHEDULE_DELAY=200",
	}
}

// Command is the command line that runs e's app from dir (PrepareApps).
func Command(dir string, e Emitter) []string { return []string{"node", filepath.Join(dir, e.Script)} }

// Run runs the app of e from dir (PrepareApps) with the model at
// baseURL (an OpenAI base URL, ".../v1") and env added (ExportEnv), and
// returns its stdout: the agent's final answer and a newline.
func Run(ctx context.Context, t testing.TB, dir string, e Emitter, baseURL string, env ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join(dir, e.Script))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "OPENAI_BASE_URL="+baseURL, "OPENAI_API_KEY=sk-fake-for-tests")
	cmd.Env = append(cmd.Env, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("node %s: %v\nstdout:\n%s\nstderr:\n%s", e.Script, err, out.String(), errb.String())
	}
	return out.String()
}

// Versions are the installed versions of pkgs, read from the npm lock
// of fixtures/otel/npm ("name@version").
func Versions(pkgs []string) ([]string, error) {
	b, err := os.ReadFile(testenv.Fixture("otel", "npm", "package-lock.json"))
	if err != nil {
		return nil, fmt.Errorf("read the otel npm lock: %w", err)
	}
	var lock struct {
		Packages map[string]struct {
			Version string `json:"version"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(b, &lock); err != nil {
		return nil, fmt.Errorf("parse the otel npm lock: %w", err)
	}
	var out []string
	for _, p := range pkgs {
		v := lock.Packages["node_modules/"+p].Version
		if v == "" {
			return nil, fmt.Errorf("the otel npm lock has no %s", p)
		}
		out = append(out, p+"@"+v)
	}
	return out, nil
}
