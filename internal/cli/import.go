package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/termsafe"
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

` + formatsHelp() + `
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
			fm, err := transcript.LookupOrAuto(opts.Format)
			if err != nil {
				return usageError{err}
			}
			if fm.Name != transcript.FormatAuto && fm.Import == nil {
				return importOTLPRun(cmd.Context(), f, opts)
			}
			return importRun(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print one JSON report per imported session")
	cmd.Flags().BoolVarP(&opts.Quiet, "quiet", "q", false, "print only the session ids")
	return cmd
}

// formatsHelp lists the registered formats for the command's help.
func formatsHelp() string {
	var b strings.Builder
	for _, fm := range transcript.Formats() {
		for i, line := range strings.Split(fm.Doc, "\n") {
			name := ""
			if i == 0 {
				name = fm.Name
			}
			fmt.Fprintf(&b, "  %-12s %s\n", name, line)
		}
	}
	fmt.Fprintf(&b, "  %-12s %s\n", transcript.FormatAuto, "tell each file's format from its content: the one format whose\n               signature claims it (none or two: the file is named, not imported)")
	return b.String()
}

// importRun imports the files of a transcript format, or of auto: there a
// file whose format imports itself (otlp) goes to that format's import.
func importRun(ctx context.Context, f *Factory, opts *importOptions) error {
	files, subs, passed, err := importFiles(opts.Format, opts.Paths)
	if err != nil {
		return err
	}
	// Auto: each file's format, told once; a file of a format that imports
	// itself (otlp, whose spans join sessions in the home) goes to that
	// import, a file no format claims (or two do) is named, not imported.
	formatOf := map[string]string{}
	otlpIncomplete := false
	if opts.Format == transcript.FormatAuto {
		var own, rest []string
		for _, file := range files {
			name, err := transcript.Detect(file)
			if err != nil {
				passed = append(passed, transcript.Report{Format: opts.Format, File: file, Error: err.Error()})
				continue
			}
			if fm, _ := transcript.Lookup(name); fm.Import == nil {
				own = append(own, file)
				continue
			}
			formatOf[file] = name
			rest = append(rest, file)
		}
		files = rest
		if len(own) > 0 {
			o := *opts
			o.Paths = own
			if err := importOTLPRun(ctx, f, &o); err != nil {
				if codeOf(err) != ExitIncomplete {
					return err
				}
				otlpIncomplete = true
			}
		}
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
				fmt.Fprintf(f.Err, "agentctl: skipped %s: %s\n", termsafe.Line(r.File), termsafe.Line(r.Error))
			}
		case r.Ignored:
			fmt.Fprintf(f.Out, "ignored %s: %s\n", termsafe.Line(r.File), termsafe.Line(r.Error))
		default:
			fmt.Fprintf(f.Out, "skipped %s: %s\n", termsafe.Line(r.File), termsafe.Line(r.Error))
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
		format := opts.Format
		if got, ok := formatOf[file]; ok {
			format = got
		}
		ss, err := transcript.Import(format, file)
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
				return fmt.Errorf("import %s: %w: import it again once that is fixed", file, err)
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
				fmt.Fprintln(f.Out, termsafe.Line(s.ID()))
			default:
				writeImport(f, s)
			}
		}
	}
	for _, sub := range subs {
		if abs, err := filepath.Abs(sub); err == nil && !imported[abs] {
			skipped = append(skipped, transcript.Report{Format: opts.Format, File: sub,
				Error: whyCompanion(opts.Format, sub) + " whose session file is not among those imported; import that session's file, which brings it in"})
		}
	}
	for _, r := range append(ignored, skipped...) {
		if err := report(r); err != nil {
			return err
		}
	}
	if len(skipped) > 0 || lost > 0 || otlpIncomplete {
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
	fmt.Fprintf(f.Out, "%s %s%s as %s: %d events (%d turns, %d tool calls)%s\n", what, termsafe.Line(r.File), termsafe.Line(part), termsafe.Line(r.SessionID), r.Events,
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
				fmt.Fprintf(f.Out, "  [%s] %s%s\n", termsafe.Line(n.Code), loc, termsafe.Line(n.Detail))
			}
		}
	}
	if n := codes[transcript.CodeSkipped] + codes[transcript.CodeKeptInAttrs]; n > 0 {
		fmt.Fprintf(f.Out, "  %d records skipped or kept in attrs (--json lists them by line)\n", n)
	}
	if len(r.NotRecorded) > 0 {
		fmt.Fprintf(f.Out, "  the source does not record: %s\n", termsafe.Line(strings.Join(r.NotRecorded, "; ")))
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
			switch why, companion := readsFile(format, path); {
			case why == "":
				found = append(found, path)
			case companion:
				subs = append(subs, path)
			default:
				r := transcript.Report{Format: format, File: path, Error: why}
				// A named format's folder holds other files too (a run's
				// logs and patches): they are named, not lost.
				// (A named format refuses a file for its extension only.)
				// A SQLite database's own journal beside it is read with
				// the database: nothing of it is lost either.
				r.Ignored = format != transcript.FormatAuto || transcript.SQLiteSidecar(path) != ""
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

// readsFile says why the format does not read the file at path (a file
// another file's import brings in: companion), or "" when it does.
func readsFile(format, path string) (why string, companion bool) {
	fm, _ := transcript.Lookup(format)
	if db := transcript.SQLiteSidecar(path); db != "" {
		return fmt.Sprintf("the journal of the SQLite database %s, read with it", filepath.Base(db)), false
	}
	if format == transcript.FormatAuto {
		if !regularFile(path) {
			return "not a regular file", false
		}
		got, err := transcript.Detect(path)
		if err != nil {
			return "its format cannot be told from its content (name the format to import it as one)", false
		}
		fm, _ = transcript.Lookup(got)
	}
	if fm.Companion != nil {
		if why := fm.Companion(path); why != "" {
			return why, true
		}
	}
	if format == transcript.FormatAuto || len(fm.Exts) == 0 {
		return "", false
	}
	ext := filepath.Ext(path)
	if !slices.Contains(fm.Exts, ext) {
		return fmt.Sprintf("not a %s file (%s files are read as %s)", format, strings.Join(fm.Exts, " and "), format), false
	}
	return "", false
}

// regularFile: Detect opens the file, and a named pipe in a folder would
// block that open.
func regularFile(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode().IsRegular()
}

// whyCompanion is why a companion file was left to another file's import.
func whyCompanion(format, path string) string {
	if format == transcript.FormatAuto {
		if got, err := transcript.Detect(path); err == nil {
			format = got
		}
	}
	if fm, ok := transcript.Lookup(format); ok && fm.Companion != nil {
		return fm.Companion(path)
	}
	return "a file another file's import brings in"
}
