package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/transcript"
)

type importOptions struct {
	Format string
	Paths  []string
	JSON   bool
	Quiet  bool
}

// newImportCmd is `agentctl import`, and under use "import" of replay its
// older name `agentctl replay import`.
func newImportCmd(f *Factory, runF func(context.Context, *importOptions) error) *cobra.Command {
	opts := &importOptions{}
	cmd := &cobra.Command{
		Use:   "import FORMAT FILE|DIR...",
		Short: "Import other tools' transcripts as sessions",
		Long: `Turn other tools' transcripts into sessions under --home, so show, query,
bundle, diagnose, trace and replay read them like sessions agentctl ran.
FORMAT is one of:

  claude-code  Claude Code session JSONL (~/.claude/projects/<dir>/<id>.jsonl);
               its sub-agent files beside it become child sessions
  codex        Codex CLI rollout JSONL (~/.codex/sessions/…/rollout-*.jsonl)
  swe-agent    SWE-agent trajectory (*.traj)
  openhands    OpenHands event stream / trajectory (a JSON array)
  inspect      Inspect AI eval log (.eval or .json): one session per sample
  atif         ATIF trajectory (trajectory.json), with its sub-agents
  otlp         OpenTelemetry traces and logs (GenAI semconv, OpenInference,
               OpenLLMetry, Vercel AI SDK): the Collector's file exporter
               output (JSON lines or protobuf), OTLP protobuf files, or its
               S3 exporter's objects: 'import otlp PATH|s3://bucket/prefix'
               (see 'agentctl import otlp --help')
  auto         tell each file's format from its content

A DIR imports every file in it (recursively, hidden folders left out)
that the format reads. A file that cannot be imported does not stop the
others: each file and record not imported is named (text: a "skipped"
line; --json: a report with "error", or notes coded torn_line, bad_line,
unknown_record, not_imported), and the exit status is then 8 (import
incomplete) once the rest is imported; 0 means everything was. The
same file imported twice gives the same session id and is not written
again. The header names the source (imported_from, source_file,
source_sha256, source_status: the source's end state, not_recorded: what
the format does not carry). What does not map to a field is kept in
attrs; what is skipped is listed by line (--json: one report per session,
with notes coded torn_line, bad_line, unknown_record, skipped,
kept_in_attrs, orphan_result, no_result, fork, subagent, not_imported).

Imported sessions have status "imported" and no spec: 'replay verify'
checks their structure only, 'replay run' replays them with the recorded
results standing in for the tools (--spec FILE re-runs the tools), and
'replay fork' continues them against a model with no tools (or the
tools of --spec FILE); 'resume' does not apply.`,
		Example: `  agentctl import claude-code ~/.claude/projects/-work-app/0b5e….jsonl
  agentctl import auto runs/ --json | jq -c '{session_id, notes: (.notes | length)}'
  agentctl import inspect logs/2025-05-12T20-27-36-04-00_browser.eval`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Format, opts.Paths = args[0], args[1:]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			if opts.Format == formatOTLP {
				return importOTLPRun(cmd.Context(), f, opts)
			}
			return importRun(f, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print one JSON report per imported session")
	cmd.Flags().BoolVarP(&opts.Quiet, "quiet", "q", false, "print only the session ids")
	return cmd
}

func importRun(f *Factory, opts *importOptions) error {
	if opts.Format != transcript.FormatAuto && !contains(transcript.Formats, opts.Format) {
		return usageError{fmt.Errorf("import: format %q is not one this agentctl knows (%s, or auto)", opts.Format, strings.Join(transcript.Formats, ", "))}
	}
	files, subs, passed, err := importFiles(opts.Format, opts.Paths)
	if err != nil {
		return err
	}
	st := f.Store()
	done := map[string]bool{}
	enc := json.NewEncoder(f.Out)
	var skipped []transcript.Report // files not imported, each with why
	lost := 0                       // records not imported, in the reports' notes
	report := func(r transcript.Report) error {
		r.Counts, r.NotRecorded, r.Notes = map[string]int{}, []string{}, []transcript.Note{}
		switch {
		case opts.JSON:
			return enc.Encode(r)
		case opts.Quiet:
			if !r.Ignored {
				fmt.Fprintf(f.Err, "agentctl: skipped %s: %s\n", r.File, r.Error)
			}
		case r.Ignored:
			fmt.Fprintf(f.Out, "ignored %s: %s\n", r.File, r.Error)
		default:
			fmt.Fprintf(f.Out, "skipped %s: %s\n", r.File, r.Error)
		}
		return nil
	}
	var ignored []transcript.Report // files of another format, met in a folder
	for _, r := range passed {
		if r.Ignored {
			ignored = append(ignored, r)
		} else {
			skipped = append(skipped, r)
		}
	}
	imported := map[string]bool{} // source files that came in (sub-agents too)
	printed := map[string]bool{}
	for _, file := range files {
		ss, err := transcript.Import(opts.Format, file)
		if err != nil {
			// One file that cannot be imported does not stop the others.
			skipped = append(skipped, transcript.Report{Format: opts.Format, File: file, Error: err.Error()})
			continue
		}
		// The whole tree is written before any of it is sealed: a parent's
		// seal covers its sub-agents, whose logs must be there by then.
		var written []string
		all := transcript.All(ss)
		for _, s := range all {
			imported[s.Report.File] = true
			if done[s.ID()] {
				continue // a sub-agent file also named on its own
			}
			done[s.ID()] = true
			if _, err := os.Stat(st.LogPath(s.ID())); err == nil {
				s.Report.Existing = true
			} else if err := record(st, s.Events); err != nil {
				return fmt.Errorf("import %s: %w", file, err)
			} else {
				written = append(written, s.ID())
			}
		}
		sealIDs(f, written...)
		for _, s := range all {
			if printed[s.ID()] {
				continue
			}
			printed[s.ID()] = true
			lost += transcript.Lost(s.Report)
			switch {
			case opts.JSON:
				if err := enc.Encode(s.Report); err != nil {
					return err
				}
			case opts.Quiet:
				fmt.Fprintln(f.Out, s.ID())
			default:
				writeImport(f, s)
			}
		}
	}
	for _, sub := range subs {
		if abs, err := filepath.Abs(sub); err == nil && !imported[abs] {
			skipped = append(skipped, transcript.Report{Format: opts.Format, File: sub,
				Error: readsFile(opts.Format, sub) + " whose session file is not among those imported; import that session's file, which brings it in"})
		}
	}
	for _, r := range append(ignored, skipped...) {
		if err := report(r); err != nil {
			return err
		}
	}
	if len(skipped) > 0 || lost > 0 {
		return withCode(ExitIncomplete, fmt.Errorf("import: %d files and %d records not imported (listed above); the rest was imported", len(skipped), lost))
	}
	return nil
}

func writeImport(f *Factory, s *transcript.Session) {
	r := s.Report
	what := "imported"
	if r.Existing {
		what = "already imported"
	}
	part := ""
	if r.Part != "" {
		part = " (" + r.Part + ")"
	}
	child := ""
	if r.ParentSessionID != "" {
		child = ", a sub-agent of " + r.ParentSessionID
	}
	fmt.Fprintf(f.Out, "%s %s%s as %s: %d events (%d turns, %d tool calls)%s\n", what, r.File, part, r.SessionID, r.Events,
		r.Counts[string(session.KindAssistantMessage)], r.Counts[string(session.KindToolIntent)], child)
	codes := map[string]int{}
	for _, n := range r.Notes {
		codes[n.Code]++
	}
	var keys []string
	for k := range codes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k == transcript.CodeSkipped || k == transcript.CodeSubagent || k == transcript.CodeKeptInAttrs {
			continue
		}
		for _, n := range r.Notes {
			if n.Code == k {
				loc := ""
				if n.Line > 0 {
					loc = fmt.Sprintf("line %d: ", n.Line)
				}
				fmt.Fprintf(f.Out, "  [%s] %s%s\n", n.Code, loc, n.Detail)
			}
		}
	}
	if n := codes[transcript.CodeSkipped] + codes[transcript.CodeKeptInAttrs]; n > 0 {
		fmt.Fprintf(f.Out, "  %d records skipped or kept in attrs (--json lists them by line)\n", n)
	}
	if len(r.NotRecorded) > 0 {
		fmt.Fprintf(f.Out, "  the source does not record: %s\n", strings.Join(r.NotRecorded, "; "))
	}
}

// record writes an imported session through the recorder (which redacts
// every string, as for a run).
func record(st recorder.Store, evs []session.Event) error {
	_, err := st.WriteSession(evs, recorder.Options{})
	return err
}

// importFiles expands the paths: a file as is, a folder to the files in it
// the format reads (by extension; auto: those whose format Detect tells),
// sorted. Claude Code sub-agent files in a folder are left to their
// session's file, which brings them in; they are returned apart (subs) so
// that one no session brought in is named. Every other file in a folder
// that is not read is returned in passed, with why. Hidden folders (.git)
// are not walked.
func importFiles(format string, paths []string) (files, subs []string, passed []transcript.Report, err error) {
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("import: %w", err)
		}
		if !fi.IsDir() {
			files = append(files, p)
			continue
		}
		var found []string
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if path != p && strings.HasPrefix(d.Name(), ".") {
					return filepath.SkipDir
				}
				return nil
			}
			switch why := readsFile(format, path); why {
			case "":
				found = append(found, path)
			case whySubagent, whyGeminiSubagent:
				subs = append(subs, path)
			default:
				r := transcript.Report{Format: format, File: path, Error: why}
				// A named format's folder holds other files too (a run's
				// logs and patches): they are named, not lost.
				// (A named format refuses a file for its extension only.)
				r.Ignored = format != transcript.FormatAuto
				passed = append(passed, r)
			}
			return nil
		})
		if err != nil {
			return nil, nil, nil, fmt.Errorf("import: %w", err)
		}
		if len(found) == 0 {
			return nil, nil, nil, fmt.Errorf("import: %s holds no %s file", p, format)
		}
		sort.Strings(found)
		files = append(files, found...)
	}
	return files, subs, passed, nil
}

const (
	whySubagent       = "a Claude Code sub-agent file"
	whyGeminiSubagent = "a Gemini CLI sub-agent file"
)

// geminiSubagent: Gemini CLI names a main session session-*.json(l) and a
// sub-agent's file by its id, in the folder named by its session's id.
func geminiSubagent(name string) bool { return !strings.HasPrefix(name, "session-") }

// readsFile says why the format does not read the file at path, or ""
// when it does.
func readsFile(format, path string) string {
	name := filepath.Base(path)
	ext := filepath.Ext(name)
	subagent := strings.HasPrefix(name, "agent-") || filepath.Base(filepath.Dir(path)) == "subagents"
	want := ""
	switch format {
	case transcript.FormatClaudeCode:
		if ext == ".jsonl" && subagent {
			return whySubagent
		}
		want = ".jsonl"
	case transcript.FormatCodex, transcript.FormatCopilot:
		want = ".jsonl"
	case transcript.FormatGeminiCLI:
		if (ext == ".jsonl" || ext == ".json") && geminiSubagent(name) {
			return whyGeminiSubagent
		}
		if ext == ".json" {
			return ""
		}
		want = ".jsonl"
	case transcript.FormatSWEAgent:
		want = ".traj"
	case transcript.FormatOpenHands, transcript.FormatATIF:
		want = ".json"
	case transcript.FormatInspect:
		if ext == ".eval" {
			return ""
		}
		want = ".json"
	default:
		if !regularFile(path) {
			return "not a regular file"
		}
		got, err := transcript.Detect(path)
		switch {
		case err != nil:
			return "its format cannot be told from its content (name the format to import it as one)"
		case got == transcript.FormatClaudeCode && subagent:
			return whySubagent
		case got == transcript.FormatGeminiCLI && geminiSubagent(name):
			return whyGeminiSubagent
		}
		return ""
	}
	if ext != want {
		return fmt.Sprintf("not a %s file (%s files are read as %s)", format, want, format)
	}
	return ""
}

// regularFile: Detect opens the file, and a named pipe in a folder would
// block that open.
func regularFile(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode().IsRegular()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
