package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentctl/agentctl/internal/recorder/otlp"
	"github.com/agentctl/agentctl/internal/termsafe"
)

type traceOptions struct {
	Session string
	JSON    bool
}

func newTraceCmd(f *Factory, runF func(context.Context, *traceOptions) error) *cobra.Command {
	opts := &traceOptions{}
	cmd := &cobra.Command{
		Use:   "trace SESSION",
		Short: "Show a session's spans, or write them as OTLP JSON",
		Long: `Build the spans of a session from its log, the same spans 'agentctl
export otlp' sends and 'agentctl run' exports live, and show them as a
tree (span name, duration, status). With --json, write them as one OTLP/JSON
ExportTraceServiceRequest: the body an OTLP collector accepts on POST
/v1/traces with Content-Type application/json.

OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES and
OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT apply as for export.`,
		Example: `  agentctl trace 3f2a
  agentctl trace 3f2a --json > trace.json
  curl -H 'Content-Type: application/json' --data-binary @trace.json http://localhost:4318/v1/traces`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Session = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return traceRun(f, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "write the spans as OTLP/JSON")
	return cmd
}

func traceRun(f *Factory, opts *traceOptions) error {
	id, evs, err := loadSession(f, opts.Session)
	if err != nil {
		return err
	}
	cfg, err := otlp.ConfigFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	spans := cfg.SessionSpans(id, evs)
	if opts.JSON {
		return otlp.WriteJSON(f.Out, spans)
	}
	w := bufio.NewWriter(f.Out)
	fmt.Fprintf(w, "trace %s (session %s, %d spans)\n", otlp.TraceID(id), termsafe.Line(id), len(spans))
	writeSpanTree(w, spans)
	return w.Flush()
}

// writeSpanTree prints spans under their parents, children by start time.
func writeSpanTree(w io.Writer, spans tracetest.SpanStubs) {
	children := map[trace.SpanID][]int{}
	known := map[trace.SpanID]bool{}
	for _, s := range spans {
		known[s.SpanContext.SpanID()] = true
	}
	var roots []int
	for i, s := range spans {
		p := s.Parent.SpanID()
		if p.IsValid() && known[p] {
			children[p] = append(children[p], i)
		} else {
			roots = append(roots, i)
		}
	}
	byStart := func(ix []int) {
		sort.SliceStable(ix, func(a, b int) bool { return spans[ix[a]].StartTime.Before(spans[ix[b]].StartTime) })
	}
	var walk func(i, depth int)
	walk = func(i, depth int) {
		s := spans[i]
		status := ""
		if s.Status.Code == codes.Error {
			status = "  error: " + termsafe.Line(excerpt(s.Status.Description, 100))
		}
		// A span's name and status come from the session (a tool's name,
		// an error): escaped, on one line.
		fmt.Fprintf(w, "%s%s  %s%s\n", strings.Repeat("  ", depth), termsafe.Line(s.Name),
			s.EndTime.Sub(s.StartTime).Round(time.Millisecond), status)
		ix := children[s.SpanContext.SpanID()]
		byStart(ix)
		for _, c := range ix {
			walk(c, depth+1)
		}
	}
	byStart(roots)
	for _, r := range roots {
		walk(r, 1)
	}
}
