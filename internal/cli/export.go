package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/internal/recorder/otlp"
	"github.com/agentctl/agentctl/internal/runner"
	"github.com/agentctl/agentctl/internal/session"
)

type exportOTLPOptions struct {
	Sessions []string
	JSON     bool
}

func newExportCmd(f *Factory, runF func(context.Context, *exportOTLPOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Send recorded sessions to other systems",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageError{fmt.Errorf("export needs a target, e.g. 'agentctl export otlp SESSION' or 'agentctl export atif SESSION'")}
		},
	}
	opts := &exportOTLPOptions{}
	otlpCmd := &cobra.Command{
		Use:   "otlp SESSION...",
		Short: "Send sessions' traces to an OpenTelemetry collector (OTLP)",
		Long: `Rebuild the trace of each session from its log and send it over OTLP:
an invoke_agent span per run, a chat span per model call and an
execute_tool span per tool call, with the GenAI semantic conventions'
gen_ai.* attributes and the recorded timestamps. Trace and span ids
derive from the session id and event seq, so exporting a session twice
sends the same spans (backends such as Jaeger deduplicate them).

The collector is configured only by the standard variables:
OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT),
OTEL_EXPORTER_OTLP_PROTOCOL (grpc or http/protobuf, the default),
OTEL_EXPORTER_OTLP_HEADERS, OTEL_EXPORTER_OTLP_TIMEOUT, OTEL_SERVICE_NAME,
OTEL_RESOURCE_ATTRIBUTES. Message content (prompts, replies, tool
arguments and output) is included only with
OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true.
Metrics are exported live by 'run' and 'resume' only.`,
		Example: `  OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 agentctl export otlp 3f2a
  OTEL_EXPORTER_OTLP_PROTOCOL=grpc OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4317 agentctl export otlp 3f2a 9b01`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Sessions = args
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return exportOTLPRun(cmd.Context(), f, opts)
		},
	}
	otlpCmd.Flags().BoolVar(&opts.JSON, "json", false, "print one JSON object per exported session")
	cmd.AddCommand(otlpCmd, newExportATIFCmd(f, nil))
	return cmd
}

// exportOTLPOutput is the --json line per session. Its fields only grow.
type exportOTLPOutput struct {
	SessionID string `json:"session_id"`
	TraceID   string `json:"trace_id"`
	Spans     int    `json:"spans"`
	Endpoint  string `json:"endpoint"`
}

func exportOTLPRun(ctx context.Context, f *Factory, opts *exportOTLPOptions) error {
	cfg, err := otlp.ConfigFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	if !cfg.Traces {
		return fmt.Errorf("export: %w", otlp.ErrNotConfigured)
	}
	for _, ref := range opts.Sessions {
		id, evs, err := loadSession(f, ref)
		if err != nil {
			return fmt.Errorf("export otlp %s: %w", ref, err)
		}
		spans := cfg.SessionSpans(id, evs)
		if err := otlp.Export(ctx, cfg, spans); err != nil {
			return fmt.Errorf("export otlp %s: %w", id, err)
		}
		out := exportOTLPOutput{SessionID: id, TraceID: otlp.TraceID(id).String(), Spans: len(spans), Endpoint: cfg.Endpoint}
		if opts.JSON {
			if err := json.NewEncoder(f.Out).Encode(out); err != nil {
				return err
			}
			continue
		}
		fmt.Fprintf(f.Out, "session %s: %d spans exported as trace %s\n", out.SessionID, out.Spans, out.TraceID)
	}
	return nil
}

// The live exporter of run and resume (and any other command that drives
// the runner): composed with the live view in runConfig, told about prior
// events on resume, flushed after the run.

// observers fans one runner observer call out to several, in order.
type observers []runner.Observer

func (o observers) Event(e session.Event) {
	for _, x := range o {
		x.Event(e)
	}
}

func (o observers) Text(d string) {
	for _, x := range o {
		x.Text(d)
	}
}

// withTelemetry adds the live OTLP exporter to view when the OTEL_*
// variables ask for one. Without them it returns view as is: no exporter
// is built and nothing costs anything. A bad setting is a warning, never a
// failed run.
func withTelemetry(f *Factory, view runner.Observer) runner.Observer {
	cfg, err := otlp.ConfigFromEnv(os.Getenv)
	if err == nil && !cfg.Enabled() {
		return view
	}
	var live *otlp.Live
	if err == nil {
		live, err = otlp.NewLive(context.Background(), cfg)
	}
	if err != nil {
		fmt.Fprintf(f.Err, "warning: %v; nothing is exported\n", err)
		return view
	}
	if view == nil {
		return observers{live} // observers can give a subagent its exporter
	}
	return observers{view, live}
}

func liveTelemetry(obs runner.Observer) *otlp.Live {
	switch o := obs.(type) {
	case *otlp.Live:
		return o
	case observers:
		for _, x := range o {
			if l := liveTelemetry(x); l != nil {
				return l
			}
		}
	}
	return nil
}

// resumeTelemetry tells the live exporter which session it continues and
// what the log held before, so span ids match an export of the whole log.
func resumeTelemetry(obs runner.Observer, id string, prior []session.Event) {
	if l := liveTelemetry(obs); l != nil {
		l.Resume(id, prior)
	}
}

// flushTelemetry sends what is still queued (bounded by otlp.FlushTimeout)
// and prints one warning line if spans or metrics did not get through.
func flushTelemetry(f *Factory, obs runner.Observer) {
	l := liveTelemetry(obs)
	if l == nil {
		return
	}
	if w := l.Shutdown(context.Background()).Warning(); w != "" {
		fmt.Fprintf(f.Err, "warning: %s\n", w)
	}
}
