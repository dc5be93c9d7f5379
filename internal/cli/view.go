package cli

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/internal/buildinfo"
	"github.com/agentctl/agentctl/internal/bundle"
	"github.com/agentctl/agentctl/internal/diagnose"
	"github.com/agentctl/agentctl/internal/leanmem"
	"github.com/agentctl/agentctl/internal/recorder"
	replaycheck "github.com/agentctl/agentctl/internal/replay/check"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/termsafe"
	"github.com/agentctl/agentctl/internal/vfs"
	"github.com/agentctl/agentctl/internal/view"
)

type viewOptions struct {
	Session string
	Bundle  string
	// Compare holds the two sessions of --compare.
	Compare []string
	Output  string
	Open    bool
}

func newViewCmd(f *Factory, runF func(context.Context, *viewOptions) error) *cobra.Command {
	opts := &viewOptions{}
	var compare bool
	cmd := &cobra.Command{
		Use:   "view SESSION | --bundle FILE | --compare A B",
		Short: "Write a session's timeline as one self-contained HTML file",
		Long: `Write one HTML file that shows a session: a header with the figures of
'agentctl sessions' (status, pinned model, duration, tokens, cost, exit path,
source), the 'diagnose' findings on top (each seq a link to its event), a
chart of cumulative tokens and cost with the compactions, errors, crashes and
resumes marked, and the timeline of every event: turns, tool calls with their
arguments and results, approvals and their scope, compactions with the
summary and the pinned goal, interruptions, reconciliations, refusals and
errors highlighted, child sessions and forks linked.

The file needs no network: style, script and data are inline, and it opens
from file://. Recorded strings were redacted when they were recorded and are
shown as text, never as markup; control characters show as escapes. Strings
longer than 8 KiB are cut in the page ('agentctl show --json' has them). A
session of more than 20,000 events shows its first and last 10,000, with a
note of the events left out; the figures count them all.

--bundle reads a debug bundle instead of the home; its artifacts are linked
where 'agentctl bundle open FILE' unpacks it, beside the bundle.
--compare A B shows two sessions side by side, aligned by turn as
'agentctl replay diff' aligns them (a fork and its parent, a replay and its
original), with the first difference marked; A and B are sessions of the
home or bundle files.

Exit status: 0 written; 1 an error; 7 the log is corrupt (the page is still
written, up to the damage).`,
		Example: `  agentctl view 3f2a --open
  agentctl view --bundle 3f2a.tar.zst -o /tmp/3f2a.html
  agentctl view --compare 3f2a 9c1e`,
		Args: cobra.RangeArgs(0, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case compare:
				if len(args) != 2 || opts.Bundle != "" {
					return usageError{fmt.Errorf("view --compare: give two sessions (or bundle files), A and B")}
				}
				opts.Compare = args
			case len(args) == 1 && opts.Bundle == "":
				opts.Session = args[0]
			case len(args) == 0 && opts.Bundle != "":
			default:
				return usageError{fmt.Errorf("view: give a SESSION, --bundle FILE or --compare A B")}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return viewRun(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Bundle, "bundle", "", "view the session of a debug bundle `FILE`")
	cmd.Flags().BoolVar(&compare, "compare", false, "compare two sessions, aligned by turn")
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "", "HTML `FILE` to write (default <session>.html, or <a>-vs-<b>.html)")
	cmd.Flags().BoolVar(&opts.Open, "open", false, "open the file in a browser ($BROWSER, else the system's opener)")
	return cmd
}

// viewSource is one session read for the view, from the home or a bundle.
type viewSource struct {
	in      view.Input
	loadErr error // a corrupt log: the page shows the events before it
}

func viewRun(ctx context.Context, f *Factory, opts *viewOptions) error {
	var page view.Page
	var loadErr error
	out := opts.Output
	gen := "agentctl " + buildinfo.Version
	if opts.Compare != nil {
		a, err := viewLoad(ctx, f, opts.Compare[0], isBundleFile(opts.Compare[0]), "", false)
		if err != nil {
			return err
		}
		b, err := viewLoad(ctx, f, opts.Compare[1], isBundleFile(opts.Compare[1]), "", false)
		if err != nil {
			return err
		}
		if out == "" {
			if err := fileNameID(a.in.ID); err != nil {
				return err
			}
			if err := fileNameID(b.in.ID); err != nil {
				return err
			}
			out = a.in.ID + "-vs-" + b.in.ID + ".html"
		}
		a.in.SessionHref, b.in.SessionHref = sessionHref, sessionHref
		c, err := view.CompareSessions(a.in, b.in)
		if err != nil {
			return err
		}
		page = view.Page{Title: "agentctl: " + a.in.ID + " vs " + b.in.ID, Compare: c, Generator: gen}
		loadErr = errors.Join(a.loadErr, b.loadErr)
	} else {
		// As bundle's (see bundleRun): a long session's view holds its
		// lean fold, diagnose's few words a call and the 20,000 events
		// the page shows, and no more garbage than a quarter of that.
		defer leanmem.Set()()
		ref := opts.Session
		if opts.Bundle != "" {
			ref = opts.Bundle
		}
		if out == "" {
			id, err := viewDefaultID(f, opts)
			if err != nil {
				return err
			}
			out = id + ".html"
		}
		src, err := viewLoad(ctx, f, ref, opts.Bundle != "", out, true)
		if err != nil {
			return err
		}
		s, err := view.Build(src.in)
		if err != nil {
			return err
		}
		title := "agentctl: " + s.Summary.SessionID
		if s.Summary.Name != "" {
			title += " " + s.Summary.Name
		}
		page = view.Page{Title: termsafe.String(title) + " (" + string(s.Summary.Status) + ")", Session: s, Generator: gen}
		loadErr = src.loadErr
	}
	n, err := writePage(out, page)
	if err != nil {
		return err
	}
	what := ""
	if page.Session != nil {
		what = fmt.Sprintf("session %s, %d events", page.Session.Summary.SessionID, len(page.Session.Events))
		if o := page.Session.Header.Omitted; o != nil {
			what = fmt.Sprintf("session %s, %d of %d events (seqs %d-%d left out)", page.Session.Summary.SessionID,
				len(page.Session.Events), len(page.Session.Events)+o.Count, o.FromSeq, o.ToSeq)
		}
	} else {
		what = fmt.Sprintf("%s vs %s, %d turns", page.Compare.A.Summary.SessionID, page.Compare.B.Summary.SessionID, len(page.Compare.Rows))
		if page.Compare.FirstDiff > 0 {
			what += fmt.Sprintf(", first difference at turn %d", page.Compare.FirstDiff)
		}
	}
	fmt.Fprintf(f.Out, "wrote %s: %s, %s\n", out, termsafe.String(what), humanBytes(n))
	if opts.Open {
		if err := openInBrowser(out); err != nil {
			return err
		}
	}
	return loadErr
}

// viewLoad reads ref, a session of the home or a bundle file. With full,
// it also runs diagnose and finds forks and artifacts, linked relative to
// the page at out, and the events are streamed, not held: read once here
// for diagnose's anchoring check, then again by view.Build, which keeps
// only the events the page shows. Without full (a side of --compare) they
// are read into Input.Events.
func viewLoad(ctx context.Context, f *Factory, ref string, isBundle bool, out string, full bool) (*viewSource, error) {
	src := &viewSource{}
	var rep *diagnose.Report
	var repErr error
	if isBundle {
		var m *bundle.Manifest
		var evs []session.Event
		var err error
		if full {
			var fold *diagnose.Fold
			anchors := replaycheck.NewAnchorer("", nil)
			m, err = bundle.StreamEvents(ctx, ref, func(e session.Event) {
				if fold == nil {
					fold = diagnose.NewFold(e.SessionID)
				}
				anchors.Add(e)
				fold.Add(e)
			})
			if err == nil && fold != nil {
				rep, repErr = fold.Report(false, false, anchors.Report())
			}
		} else {
			m, evs, err = bundle.ReadEvents(ctx, ref)
		}
		if err != nil {
			return nil, fmt.Errorf("view: %w", err)
		}
		src.in = view.Input{ID: m.SessionID, Events: evs, Origin: "bundle " + ref}
		if full {
			src.in.Stream = func(fn func(session.Event)) (recorder.Tail, error) {
				_, err := bundle.StreamEvents(ctx, ref, fn)
				return recorder.Tail{}, err
			}
		}
		base := strings.TrimSuffix(filepath.Base(ref), ".tar.zst")
		unpacked := filepath.Join(filepath.Dir(ref), base)
		members := map[string]bool{}
		for _, mm := range m.Members {
			members[mm.Name] = true
		}
		src.in.Artifact = func(rel string) (string, bool) {
			if !members[rel] {
				return "", false
			}
			return relHref(out, filepath.Join(unpacked, filepath.FromSlash(rel)))
		}
		src.in.ArtifactNote = fmt.Sprintf("Artifacts link into %s/, where 'agentctl bundle open %s' unpacks the bundle when run in its folder.", base, filepath.Base(ref))
	} else {
		st := f.Store()
		id, err := st.Resolve(ref)
		if err != nil {
			return nil, err
		}
		var evs []session.Event
		var tail recorder.Tail
		if full {
			rep, tail, err = diagnose.Stream(st, id)
			repErr = err
		} else {
			evs, tail, err = st.Load(id)
		}
		if tail.Torn {
			fmt.Fprintf(f.Err, "warning: session %s: log has a torn tail (%d bytes after the last whole event, from a crash mid-write); 'agentctl resume' cuts it\n",
				id, tail.FileSize-tail.GoodSize)
		}
		if err != nil && !errors.Is(err, recorder.ErrCorrupt) {
			return nil, err
		}
		src.loadErr = err
		dir := st.SessionDir(id)
		src.in = view.Input{ID: id, Events: evs, Live: recorder.Live(dir), Tail: tail, ReadErr: err, Origin: "home " + f.Home}
		if full {
			src.in.Stream = func(fn func(session.Event)) (recorder.Tail, error) {
				_, tail, err := st.Stream(id, fn)
				return tail, err
			}
		}
		src.in.Artifact = func(rel string) (string, bool) {
			p := filepath.Join(dir, filepath.FromSlash(rel))
			if _, err := os.Stat(p); err != nil {
				return "", false
			}
			return relHref(out, p)
		}
	}
	src.in.SessionHref = sessionHref
	if !full {
		return src, nil
	}
	// Diagnosis and forks come from the log and the store's headers, not
	// from DuckDB: its plan for one session of a million events held
	// ~1.6 GB, the page's goal is 150 MB (bench/README.md).
	switch {
	case rep != nil:
		for _, fd := range rep.Findings {
			src.in.Findings = append(src.in.Findings, view.Finding{Kind: fd.Kind, Text: fd.Text, Seqs: fd.Seqs})
		}
	case repErr != nil:
		fmt.Fprintf(f.Err, "warning: view: no diagnosis: %v\n", repErr)
		src.in.Findings = []view.Finding{{Kind: "note", Text: "diagnose could not run: " + repErr.Error(), Seqs: []int64{}}}
	}
	if !isBundle {
		var err error
		if src.in.Forks, err = forksOf(f.Store(), src.in.ID); err != nil {
			fmt.Fprintf(f.Err, "warning: view: forks of %s: %v\n", src.in.ID, err)
		}
	}
	return src, nil
}

// viewDefaultID is the session id the default output is named after: the
// resolved session, or the one a bundle's MANIFEST names.
func viewDefaultID(f *Factory, opts *viewOptions) (string, error) {
	if opts.Bundle == "" {
		return f.Store().Resolve(opts.Session)
	}
	base := strings.TrimSuffix(filepath.Base(opts.Bundle), ".tar.zst")
	if err := fileNameID(base); err != nil {
		return "", err
	}
	return base, nil
}

// fileNameID refuses an id that cannot name a file in the current folder
// (a bundle's MANIFEST was written by someone else).
func fileNameID(id string) error {
	if id == "" || strings.HasPrefix(id, ".") || strings.ContainsAny(id, `/\:`) || termsafe.String(id) != id {
		return usageError{fmt.Errorf("view: session id %q cannot name the output file; give -o FILE.html", id)}
	}
	return nil
}

// isBundleFile reports whether a --compare argument is a bundle file.
func isBundleFile(ref string) bool {
	if !strings.HasSuffix(ref, ".tar.zst") {
		return false
	}
	fi, err := os.Stat(ref)
	return err == nil && fi.Mode().IsRegular()
}

// forksOf lists the sessions whose header names id as their parent
// (forks, replays, subagents, side threads), by id, reading one record of
// each log. A log whose header cannot be read is not one.
func forksOf(st recorder.Store, id string) ([]view.Fork, error) {
	ids, err := st.IDs()
	if err != nil {
		return nil, err
	}
	var out []view.Fork
	for _, k := range ids {
		if hdr, err := st.Header(k); err == nil && hdr.Seq == 1 && hdr.ParentSessionID == id {
			out = append(out, view.Fork{ID: k, At: hdr.ForkedFrom})
		}
	}
	slices.SortFunc(out, func(a, b view.Fork) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// relHref is the link from the page at out to the file target: a
// relative URL that begins with "./" or "../", each segment escaped, so it
// can never read as a scheme ("javascript:").
func relHref(out, target string) (string, bool) {
	from, err := filepath.Abs(filepath.Dir(out))
	if err != nil {
		return "", false
	}
	to, err := filepath.Abs(target)
	if err != nil {
		return "", false
	}
	rel, err := filepath.Rel(from, to)
	if err != nil {
		return "", false
	}
	segs := strings.Split(filepath.ToSlash(rel), "/")
	for i, s := range segs {
		if s != ".." {
			segs[i] = url.PathEscape(s)
		}
	}
	href := path.Join(segs...)
	if !strings.HasPrefix(href, "../") {
		href = "./" + href
	}
	return href, true
}

// sessionHref links another session to the page `agentctl view ID`
// writes beside this one: "./ID.html", escaped.
func sessionHref(id string) string { return "./" + url.PathEscape(id) + ".html" }

// writePage writes the page to out (vfs.CreateOutput: a new file renamed
// into place, or a device or FIFO written into) and returns its size.
func writePage(out string, p view.Page) (int64, error) {
	tmp, err := vfs.CreateOutput(vfs.OS, out, 0o644, false)
	if err != nil {
		return 0, fmt.Errorf("view: %w", err)
	}
	defer tmp.Abort()
	w := &vfs.CountWriter{W: tmp}
	if err := view.Write(w, p); err != nil {
		return 0, err
	}
	if err := tmp.Commit(); err != nil {
		return 0, fmt.Errorf("view: %w", err)
	}
	return w.N, nil
}

// openInBrowser opens path with $BROWSER (its first entry) or the
// system's opener, without waiting for it.
func openInBrowser(p string) error {
	name, args := "xdg-open", []string{p}
	switch runtime.GOOS {
	case "darwin":
		name = "open"
	case "windows":
		name, args = "rundll32", []string{"url.dll,FileProtocolHandler", p}
	}
	if b := strings.Fields(strings.Split(os.Getenv("BROWSER"), string(os.PathListSeparator))[0]); len(b) > 0 {
		name, args = b[0], append(b[1:], p)
	}
	cmd := exec.Command(name, args...)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("view: open %s with %s: %w (the page is written; open it yourself)", p, name, err)
	}
	return cmd.Process.Release()
}
