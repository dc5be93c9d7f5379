package cli

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentctl/agentctl/internal/otelimport"
	"github.com/agentctl/agentctl/internal/otelsession"
	"github.com/agentctl/agentctl/internal/termsafe"
)

// formatOTLP is `agentctl import otlp`: OpenTelemetry at rest, through
// the mapping collect uses (package otelsession), read by otelimport.
const formatOTLP = otelsession.FormatOTLP

// importOTLPRun imports each PATH (a file, a folder, s3://bucket/prefix)
// and seals the sessions it wrote. Text: a line per file read (what it
// gave, or why not), then the sessions; --json: one otelimport.Report per
// source; --quiet: the session ids. Exit 8 (import incomplete) when a
// file or a span was not imported.
func importOTLPRun(ctx context.Context, f *Factory, opts *importOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	st := f.Store()
	enc := json.NewEncoder(f.Out)
	incomplete := 0
	for _, src := range opts.Paths {
		rep, err := otelimport.Import(ctx, st, src, otelimport.Options{})
		if rep != nil {
			sealIDs(f, rep.Sessions...)
		}
		if err != nil {
			return err
		}
		if rep.Incomplete() {
			incomplete++
		}
		switch {
		case opts.JSON:
			if err := enc.Encode(rep); err != nil {
				return err
			}
		case opts.Quiet:
			for _, id := range rep.Sessions {
				fmt.Fprintln(f.Out, termsafe.Line(id))
			}
		default:
			writeOTLPImport(f, rep)
		}
	}
	if incomplete > 0 {
		return withCode(ExitIncomplete, fmt.Errorf("import otlp: some files or spans were not imported (listed above); the rest was imported"))
	}
	return nil
}

func writeOTLPImport(f *Factory, rep *otelimport.Report) {
	for _, fr := range rep.Files {
		switch {
		case fr.Error != "":
			fmt.Fprintf(f.Out, "skipped %s: %s\n", termsafe.Line(fr.Name), termsafe.Line(fr.Error))
		case fr.Signal == "metrics":
			fmt.Fprintf(f.Out, "ignored %s: metrics (sessions come from traces and logs)\n", termsafe.Line(fr.Name))
		default:
			fmt.Fprintf(f.Out, "read %s: %d %s messages, %d spans or log records\n", termsafe.Line(fr.Name), fr.Messages, fr.Signal, fr.Accepted)
		}
		for _, r := range fr.Rejected {
			fmt.Fprintf(f.Out, "  rejected span %s/%s: %s\n", termsafe.Line(r.TraceID), termsafe.Line(r.SpanID), termsafe.Line(r.Reason))
		}
	}
	if rep.Skipped > 0 {
		fmt.Fprintf(f.Out, "%d files already imported, unchanged: not read again\n", rep.Skipped)
	}
	for _, id := range rep.Sessions {
		fmt.Fprintf(f.Out, "imported %s as %s\n", termsafe.Line(rep.Source), termsafe.Line(id))
	}
	if len(rep.Sessions) == 0 {
		fmt.Fprintf(f.Out, "imported %s: no new spans\n", termsafe.Line(rep.Source))
	}
}
