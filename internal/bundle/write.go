package bundle

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/agentctl/agentctl/internal/buildinfo"
	"github.com/agentctl/agentctl/internal/failpoint"
	"github.com/agentctl/agentctl/internal/history"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/redact"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/vfs"
)

// Format and Version name the bundle format in its MANIFEST.
const (
	Format  = "agentctl-bundle"
	Version = 1
)

// ManifestName is the name of the last member.
const ManifestName = "MANIFEST"

// Manifest lists every member of a bundle but itself. Its JSON form is the
// MANIFEST member; it only grows.
type Manifest struct {
	Format    string    `json:"format"`
	Version   int       `json:"version"`
	SessionID string    `json:"session_id"`
	Children  []string  `json:"children,omitempty"`
	Created   time.Time `json:"created"`
	Members   []Member  `json:"members"`
}

// Member is one file of a bundle.
type Member struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Tracer writes the OTLP/JSON trace of a session's events to w, as each
// hands them over one at a time (otlp.Config.WriteSessionJSON).
type Tracer func(w io.Writer, sessionID string, each func(func(session.Event))) error

// Options tune Write. The zero value is usable.
type Options struct {
	// WithChildren also bundles the session's descendants (its subagents,
	// forks and replays, recursively: recorder.Lineage's rule) under
	// children/<id>/, in the order of show --tree. One the lineage leaves
	// out (a forged header, a missing log) is a warning, not a failure.
	WithChildren bool
	// Trace writes trace.json; nil leaves it out.
	Trace Tracer
	// Level is the zstd level (default zstd.SpeedDefault, about zstd -3).
	Level zstd.EncoderLevel
	// Concurrency is the number of goroutines that read and compress the
	// workspace, each holding about 5 MiB (default min(GOMAXPROCS, 4)).
	Concurrency int
	// TempDir holds intermediate files (default os.TempDir()).
	TempDir string
	// FS is where the intermediate files and WriteFile's output are
	// written: vfs.OS if nil. Tests inject faults through it. What is
	// bundled (logs, workspace, artifacts) is read from the real
	// filesystem.
	FS vfs.FS
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Warn receives warnings (a torn tail, an unreadable workspace).
	Warn io.Writer
	// Workspace is the bundled session's workspace when it is not the
	// session's own folder (a spec's workspace.path), as the user names
	// it. The header alone never chooses the folder that is archived (see
	// recorder.Store.Workspace); children use their own folders.
	Workspace string
}

// Progress files are copied from the workspace root into progress/.
var progressFiles = []string{
	"PROGRESS.md", "progress.md", "PROGRESS.txt", "progress.txt", "claude-progress.txt",
	"feature_list.json", "features.json", "feature-list.json", "FEATURES.md", "TODO.md", "PLAN.md", "NOTES.md",
}

// Write bundles session id of the store to w. It returns the manifest it
// wrote as the last member. Memory stays bounded: every member is streamed
// from a file, generated ones through temporary files under TempDir.
func Write(ctx context.Context, w io.Writer, st recorder.Store, id string, opts Options) (*Manifest, error) {
	if opts.Level == 0 {
		opts.Level = zstd.SpeedDefault
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = min(runtime.GOMAXPROCS(0), 4)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Warn == nil {
		opts.Warn = io.Discard
	}
	opts.FS = vfs.Or(opts.FS)
	tmp, err := vfs.MkdirTemp(opts.FS, opts.TempDir, tempPrefix(tempDirPrefix))
	if err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	defer opts.FS.RemoveAll(tmp)
	// Locked while in use (a folder can be flocked); the folders of killed
	// bundles, which nothing holds, go (see removeStale).
	if d, err := os.Open(tmp); err == nil {
		lockFd(d.Fd())
		defer d.Close()
	}
	removeStale(opts.FS, filepath.Dir(tmp), tempDirPrefix, true)
	now := opts.Now()
	a, err := newArchive(w, opts.Level, now)
	if err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	b := &builder{a: a, st: st, opts: opts, tmp: tmp}
	m := &Manifest{Format: Format, Version: Version, SessionID: id, Created: now.UTC()}
	if err := b.session(ctx, id, ""); err != nil {
		return nil, err
	}
	if opts.WithChildren {
		lin, err := st.Lineage()
		if err != nil {
			return nil, fmt.Errorf("bundle: children of %s: %w", id, err)
		}
		kids, skips := lin.Descendants(id)
		// A child the lineage leaves out (a header its parent's log does
		// not confirm, a subagent whose log is gone) is not a reason to
		// refuse the bundle of the rest.
		for _, sk := range skips {
			fmt.Fprintf(opts.Warn, "agentctl: warning: not bundled: session %s\n", sk)
		}
		for _, k := range kids {
			if err := b.session(ctx, k, "children/"+k+"/"); err != nil {
				return nil, err
			}
			m.Children = append(m.Children, k)
		}
	}
	failpoint.Hit(FailpointEnv, FailMembersWritten)
	m.Members = a.members
	mb, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	if err := a.addBytes(ManifestName, append(mb, '\n')); err != nil {
		return nil, err
	}
	if err := a.close(); err != nil {
		return nil, err
	}
	return m, nil
}

type builder struct {
	a    *archive
	st   recorder.Store
	opts Options
	tmp  string
	n    int
	encs []*zstd.Encoder // the workspace's: the archive's, then more
}

// encoders returns opts.Concurrency encoders for a workspace, the first
// being the archive's own (idle while the workspace is written).
func (b *builder) encoders() ([]*zstd.Encoder, error) {
	if b.encs == nil {
		b.encs = []*zstd.Encoder{b.a.enc}
	}
	for len(b.encs) < b.opts.Concurrency {
		enc, err := newEncoder(b.opts.Level)
		if err != nil {
			return nil, fmt.Errorf("bundle: %w", err)
		}
		b.encs = append(b.encs, enc)
	}
	return b.encs, nil
}

// tempFileError is a failure of a temporary file itself (its create,
// write or close), as opposed to one of what fills it.
type tempFileError struct{ error }

func (e tempFileError) Unwrap() error { return e.error }

// errWriter keeps the first error of the writer it wraps.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	n, err := e.w.Write(p)
	if err != nil && e.err == nil {
		e.err = err
	}
	return n, err
}

// temp writes a member through a temporary file, then adds it. A failure
// of the file itself is a tempFileError.
func (b *builder) temp(name string, fill func(w io.Writer) error) error {
	p, err := b.tempFile(name, fill)
	if err != nil {
		return err
	}
	defer b.opts.FS.Remove(p)
	return b.a.addFile(name, p, false)
}

// tempFile writes member name to a temp file, fill writing it, for the
// caller to add (addFile) and remove: a member made before its turn in the
// archive.
func (b *builder) tempFile(name string, fill func(w io.Writer) error) (string, error) {
	b.n++
	p := filepath.Join(b.tmp, strconv.Itoa(b.n))
	f, err := vfs.Create(b.opts.FS, p)
	if err != nil {
		return "", tempFileError{fmt.Errorf("bundle: %s: %w", name, err)}
	}
	ew := &errWriter{w: f}
	bw := bufio.NewWriterSize(ew, 256<<10)
	err = fill(bw)
	if err == nil {
		err = bw.Flush()
	}
	cerr := f.Close()
	if err == nil {
		err = cerr
	}
	if err != nil {
		b.opts.FS.Remove(p)
		err = fmt.Errorf("bundle: %s: %w", name, err)
		if ew.err != nil || cerr != nil {
			err = tempFileError{err}
		}
		return "", err
	}
	return p, nil
}

// eventBatch is how many rows events.parquet is written with at a time: a
// multiple of 64, so the file is the one all rows at once would make
// (history.WriteRowsEachFS).
const eventBatch = 4096

// session adds the members of one session under prefix. Its log is read a
// record at a time, once for each member made from its events, and never
// held: a bundle of a session of a million events holds a batch, or its
// fold (a lean one: settled calls packed) and the projection, not the
// events. The fold is made in the events.jsonl pass, not beside
// events.parquet's buffered row group, and let go once last_state.json and
// tool_calls.csv are written, before trace.json's spans.
func (b *builder) session(ctx context.Context, id, prefix string) error {
	// The first read: how many events there are (each member is made of
	// these, however the log grows meanwhile), and what is needed before
	// redacting them (the header, which names the workspace).
	var hdr session.Event
	n, tail, err := b.st.Stream(id, func(e session.Event) {
		if hdr.Kind == "" {
			hdr = e
		}
	})
	if err != nil && !errors.Is(err, recorder.ErrCorrupt) {
		return fmt.Errorf("bundle: %w", err)
	}
	loadErr := err
	if err != nil {
		fmt.Fprintf(b.opts.Warn, "agentctl: warning: session %s: %v; bundling the %d events before it\n", id, err, n)
	}
	if tail.Torn {
		fmt.Fprintf(b.opts.Warn, "agentctl: warning: session %s: log has a torn tail; bundling the %d whole events\n", id, n)
	}
	if n == 0 {
		return fmt.Errorf("bundle: session %s has no events", id)
	}
	dir := b.st.SessionDir(id)
	want := ""
	if prefix == "" {
		want = b.opts.Workspace
	}
	ws, err := b.st.Workspace(id, hdr, want)
	switch {
	case prefix != "" && hdr.ParentSeq > 0:
		ws = "" // a subagent works in its parent's workspace, bundled with the parent
	case err != nil:
		fmt.Fprintf(b.opts.Warn, "agentctl: warning: the bundle has no workspace: %v\n", err)
		ws = ""
	}
	wsOK := false
	if ws != "" {
		if fi, err := os.Stat(ws); err == nil && fi.IsDir() {
			wsOK = true
		} else {
			fmt.Fprintf(b.opts.Warn, "agentctl: warning: session %s: workspace %s is gone; the bundle has none\n", id, ws)
		}
	}
	red := b.redactor(id, ws, wsOK)
	// each hands over the n events, each redacted again with what is
	// known now (the log was redacted when it was written, by this
	// agentctl; an older one redacted tool output only), for every member
	// made from them. A read that fails now fails the bundle: the first
	// read found n events.
	each := func(fn func(session.Event)) error {
		i := 0
		_, _, err := b.st.Stream(id, func(e session.Event) {
			if i++; i > n {
				return
			}
			e.MapStrings(red.String)
			fn(e)
		})
		if i < n {
			if err == nil {
				err = fmt.Errorf("the log has %d events, %d when first read", i, n)
			}
			return fmt.Errorf("bundle: session %s: %w", id, err)
		}
		return nil
	}
	hdr.MapStrings(red.String)

	// events.parquet: the history's own writer and schema. The same read
	// finds what env.txt and workspace.diff name.
	var changes []session.Event // model_changed
	base := ""                  // the first git_sha: the run's initializer commit
	b.n++
	pq := filepath.Join(b.tmp, strconv.Itoa(b.n)+".parquet")
	_, err = history.WriteRowsEachFS(b.opts.FS, pq, func(write func([]history.Row) error) error {
		rows := make([]history.Row, 0, eventBatch)
		var werr error
		if err := each(func(e session.Event) {
			if e.Kind == session.KindModelChanged {
				changes = append(changes, e)
			}
			if base == "" && e.GitSHA != "" {
				base = e.GitSHA
			}
			if werr != nil {
				return
			}
			r, err := history.FromEvent(id, e)
			if err != nil {
				werr = err
				return
			}
			if rows = append(rows, r); len(rows) == eventBatch {
				werr = write(rows)
				rows = rows[:0]
			}
		}); err != nil {
			return err
		}
		if werr != nil {
			return werr
		}
		return write(rows)
	}, true)
	if err != nil {
		return fmt.Errorf("bundle: %w", err)
	}
	err = b.a.addFile(prefix+"events.parquet", pq, false)
	b.opts.FS.Remove(pq)
	if err != nil {
		return err
	}

	// events.jsonl; the same read folds the events (last_state.json,
	// tool_calls.csv).
	fold := newFolder()
	if err := b.temp(prefix+EventsMember, func(w io.Writer) error {
		var werr error
		if err := each(func(e session.Event) {
			fold.add(e)
			if werr != nil {
				return
			}
			line, err := session.Encode(e)
			if err != nil {
				werr = err
				return
			}
			w.Write(line)
			_, werr = w.Write([]byte{'\n'})
		}); err != nil {
			return err
		}
		return werr
	}); err != nil {
		return err
	}
	cps := filepath.Join(dir, recorder.CheckpointsFile)
	if _, err := os.Stat(cps); err == nil {
		if err := b.redactedFile(prefix+"checkpoints.jsonl", cps, red); err != nil {
			return err
		}
	}
	state := fold.state(id, tail, recorder.Live(dir), loadErr)
	state.WorkspaceGitSHA, _ = checkpointSHAs(cps)
	sb, _ := json.MarshalIndent(state, "", "  ")
	if err := b.a.addBytes(prefix+"last_state.json", append(sb, '\n')); err != nil {
		return err
	}
	csvPath, err := b.tempFile(prefix+"tool_calls.csv", func(w io.Writer) error { return writeToolCalls(w, fold.fold) })
	if err != nil {
		return err
	}
	defer b.opts.FS.Remove(csvPath)
	fold = nil
	if b.opts.Trace != nil {
		if err := b.temp(prefix+"trace.json", func(w io.Writer) error {
			var eachErr error
			err := b.opts.Trace(w, id, func(fn func(session.Event)) { eachErr = each(fn) })
			return errors.Join(eachErr, err)
		}); err != nil {
			return err
		}
	}
	if err := b.a.addFile(prefix+"tool_calls.csv", csvPath, false); err != nil {
		return err
	}

	if err := b.a.addBytes(prefix+"env.txt", envText(hdr, changes, ws)); err != nil {
		return err
	}
	if wsOK {
		d := openRunDiff(ctx, dir, ws, id, base)
		if d == nil {
			d = openDiff(ctx, ws, cps)
		}
		if d != nil {
			if err := b.temp(prefix+"workspace.diff", func(w io.Writer) error {
				return d.write(ctx, redactWriter(red, w))
			}); errors.As(err, new(tempFileError)) {
				d.close()
				return err
			} else if err != nil { // git's: the bundle goes without the diff
				fmt.Fprintf(b.opts.Warn, "agentctl: warning: session %s: %v\n", id, err)
			}
			if d.refused != nil {
				fmt.Fprintf(b.opts.Warn, "agentctl: warning: session %s: workspace.diff: %v\n", id, d.refused)
			}
			d.close()
		}
		if err := b.workspace(ctx, prefix+"workspace.tar.zst", ws, red); err != nil {
			return err
		}
		if root, err := os.OpenRoot(ws); err == nil {
			for _, name := range progressNames(hdr) {
				c, ok := readProgress(root, name)
				if !ok {
					continue
				}
				if err := b.a.addBytes(prefix+"progress/"+name, []byte(red.String(string(c)))); err != nil {
					root.Close()
					return err
				}
			}
			root.Close()
		}
	}
	if err := b.artifacts(filepath.Join(dir, recorder.ArtifactsDir), prefix+"artifacts/", red); err != nil {
		return err
	}
	return nil
}

// workspace adds the workspace's tar.zst as a stored member: straight into
// the bundle when the output can be patched in place (a file), else
// through a temporary file, since a tar header needs the size first.
func (b *builder) workspace(ctx context.Context, name, ws string, red *redact.Redactor) error {
	encs, err := b.encoders()
	if err != nil {
		return err
	}
	if b.a.canStream() {
		return b.a.addStream(name, func(w io.Writer) error { return writeWorkspace(ctx, w, ws, red, encs) })
	}
	b.n++
	p := filepath.Join(b.tmp, strconv.Itoa(b.n)+".tar.zst")
	defer b.opts.FS.Remove(p)
	f, err := vfs.Create(b.opts.FS, p)
	if err != nil {
		return fmt.Errorf("bundle: workspace: %w", err)
	}
	bw := bufio.NewWriterSize(f, 256<<10)
	if err = b.a.endFrame(); err == nil {
		err = writeWorkspace(ctx, bw, ws, red, encs)
		b.a.restartFrame()
	}
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("bundle: workspace: %w", cerr)
	}
	if err != nil {
		return err
	}
	return b.a.addFile(name, p, true)
}

// artifacts adds every regular file under dir (links are skipped),
// redacted again with what is known now (they were as they were written).
func (b *builder) artifacts(dir, prefix string, red *redact.Redactor) error {
	if _, err := os.Stat(dir); err != nil {
		return nil
	}
	return filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		return b.redactedFile(prefix+filepath.ToSlash(rel), p, red)
	})
}

// envText is env.txt: one "key: value" a line. changes are the session's
// model_changed events.
func envText(hdr session.Event, changes []session.Event, ws string) []byte {
	var w bytes.Buffer
	kv := func(k, v string) {
		if v == "" {
			v = "-"
		}
		fmt.Fprintf(&w, "%s: %s\n", k, v)
	}
	kv("session_id", hdr.SessionID)
	kv("name", hdr.Name)
	kv("pinned_model", session.ModelName(hdr.Provider, hdr.Model))
	for _, e := range changes {
		kv("model_changed_at_seq", fmt.Sprintf("%d: %s", e.Seq, session.ModelName(e.Provider, e.Model)))
	}
	kv("spec_path", hdr.SpecPath)
	specHash := hdr.SpecHash
	if specHash == "" && len(hdr.Spec) > 0 {
		h := sha256.Sum256(hdr.Spec)
		specHash = "sha256:" + hex.EncodeToString(h[:])
	}
	kv("spec_hash", specHash)
	kv("recorded_by_agentctl", hdr.AgentctlVersion)
	kv("harness_commit", hdr.HarnessCommit)
	kv("workspace", ws)
	kv("bundled_by_agentctl", buildinfo.Version)
	kv("bundled_by_commit", buildinfo.Commit())
	kv("go", runtime.Version())
	kv("os", runtime.GOOS+"/"+runtime.GOARCH)
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kv("kernel", strings.TrimSpace(string(b)))
	}
	return w.Bytes()
}

// writeToolCalls writes tool_calls.csv: one row per tool call that was
// dispatched or answered (session.State.Dispatched, the tool_calls view's
// rows, status included), in the order the calls were made (intent, else
// result).
func writeToolCalls(w io.Writer, fold *session.State) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"ts", "tool", "input_hash", "latency_ms", "status", "error", "call_id", "intent_seq", "result_seq"})
	seq := func(n int64) string {
		if n == 0 {
			return ""
		}
		return strconv.FormatInt(n, 10)
	}
	for c := range fold.DispatchedCalls() {
		lat, hash := "", ""
		if c.ResultSeq != 0 {
			lat = strconv.FormatInt(c.LatencyMS, 10)
		}
		if c.IntentSeq > 0 || len(c.Args) > 0 {
			hash = InputHash(c.Tool, c.Args)
		}
		cw.Write([]string{c.TS.UTC().Format(time.RFC3339Nano), c.Tool, hash, lat, c.Outcome(), c.Error, c.ID, seq(c.IntentSeq), seq(c.ResultSeq)})
	}
	cw.Flush()
	return cw.Error()
}

// InputHash is the input_hash of tool_calls.csv: "sha256:" and the hex
// sha256 of the tool name, a NUL byte and the call's arguments as compact
// JSON (so formatting differences do not count).
func InputHash(tool string, args json.RawMessage) string {
	h := sha256.New()
	h.Write([]byte(tool))
	h.Write([]byte{0})
	var c bytes.Buffer
	if json.Compact(&c, args) == nil {
		h.Write(c.Bytes())
	} else {
		h.Write(args)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// checkpointSHAs returns the workspace git SHA of the last and the first
// checkpoint that has one.
func checkpointSHAs(path string) (last, first string) {
	f, err := os.Open(path)
	if err != nil {
		return "", ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var cp struct {
			SHA string `json:"workspace_git_sha"`
		}
		if json.Unmarshal(sc.Bytes(), &cp) == nil && cp.SHA != "" {
			if first == "" {
				first = cp.SHA
			}
			last = cp.SHA
		}
	}
	return last, first
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

// isProgress reports whether a workspace-relative path is a progress file.
func isProgress(rel string) bool { return path.Dir(rel) == "." && slices.Contains(progressFiles, rel) }
