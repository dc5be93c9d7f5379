package evals

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/replay"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/spec"
	"github.com/agentctl/agentctl/internal/vfs"
)

// FixturesDir is the folder, next to a suite file, that Add copies
// sessions into: one agentctl home per copied session tree, named after
// the SHA-256 of its logs (fixtures/<sha256/16>/sessions/<id>/events.log).
const FixturesDir = "fixtures"

// AddOptions are what Add makes a scenario of.
type AddOptions struct {
	// Suite is the suite file the scenario is appended to.
	Suite string
	// From is the home that holds the session; Session is its id (or a
	// unique prefix).
	From    recorder.Store
	Session string
	// Name is the scenario's name (default: the session's name and the
	// first 8 characters of its id).
	Name string
	// ForkFrom, if above 0, makes a scenario that forks the session after
	// that seq and goes on live (replay.fork_from) instead of one that
	// replays it whole.
	ForkFrom int64
	// Assert are the scenario's assertions as KEY=VALUE (status=done,
	// called=edit_file, no_loop=3, budget={max_tokens: 5000}); VALUE is
	// YAML. Default: the status the replay must reproduce (see Add).
	Assert []string
	// Model, with ForkFrom, is the model the fork goes on with (written
	// as the scenario's model:; a scripted model's Script is a path
	// relative to the working directory, written relative to the suite).
	// Nil: the session's pinned model.
	Model *spec.Model
	// Program, if set, is the program the case runs against the
	// recording (replay.command: see Replay.Command); its WorkspaceFrom
	// and ReadOnly are paths relative to the working directory, written
	// relative to the suite. With LiveFromTurn, the program goes live on
	// Model (default: the recorded one) from that model turn on
	// (replay.live_from_turn); ForkFrom does not apply.
	Program      *replay.Program
	LiveFromTurn int
	// Options are the recorder's for the copied logs; Options.Redact nil
	// redacts the secrets of this process's environment and the token
	// formats.
	Options recorder.Options
}

// AddResult says what Add did.
type AddResult struct {
	Suite     string `json:"suite"`
	Scenario  string `json:"scenario"`
	Line      int    `json:"line"`
	SessionID string `json:"session_id"`
	Fixture   string `json:"fixture"` // the home of the copy, relative to the suite's folder
	Sessions  int    `json:"sessions"`
	Existed   bool   `json:"existed"` // the same copy was there already
	// Created: the suite file did not exist and Add wrote it.
	Created bool `json:"created,omitempty"`
	// NoProgram: the scenario replays a session whose program agentctl
	// cannot start (collected, imported, proxied with no spec) and no
	// Program was given, so it checks the recording against itself.
	NoProgram bool `json:"no_program,omitempty"`
}

// Add appends to a suite a scenario made from a recorded session of any
// origin (agentctl's own run, a proxied program, an import, a collected
// trace): by default a replay: scenario, whose implicit replay_matches
// check fails unless the replay reproduces the recorded tool results and
// status; with ForkFrom a replay: scenario with fork_from, which keeps the
// events up to that seq and goes on with the scenario's model (model:, or
// the session's pinned one), checked by the assertions given.
//
// The session, with its subagents, is copied into FixturesDir next to the
// suite, through the recorder (so every string is redacted as any log
// is), into a folder named after the SHA-256 of the copied logs: the same
// session added twice is one copy, and the suite is self-contained.
//
// The suite file is edited as text: the scenario is rendered by yaml.v3
// and inserted after the last line of the scenarios list, at its
// indentation, so every comment and all formatting of the file stay as
// they were (a flow-style or empty list is re-encoded from yaml.v3's
// node tree, which keeps comments). The result is loaded with Load
// before it replaces the file (atomically), so a suite Add leaves always
// loads.
//
// With no Assert, the scenario asserts the status the replay must end
// with: the recorded session_finished status, or for an import (which
// records no end of agentctl's) done when its last turn called no tool;
// a fork asserts status done.
func Add(opts AddOptions) (AddResult, error) {
	res := AddResult{Suite: opts.Suite}
	abs, err := filepath.Abs(opts.Suite)
	if err != nil {
		return res, err
	}
	data, err := os.ReadFile(abs)
	switch {
	case errors.Is(err, os.ErrNotExist):
		// A new suite: written only once it holds the scenario and loads.
		data, res.Created = NewSuiteText(abs), true
	case err != nil:
		return res, fmt.Errorf("eval add: read suite: %w", err)
	default:
		if _, err := Load(abs); err != nil {
			return res, fmt.Errorf("eval add: the suite does not load as it is; fix it first: %w", err)
		}
	}
	if opts.LiveFromTurn > 0 && (opts.Program == nil || opts.ForkFrom > 0) {
		return res, errors.New("eval add: a live turn goes with a program (--command), and not with a fork seq")
	}
	id, err := opts.From.Resolve(opts.Session)
	if err != nil {
		return res, fmt.Errorf("eval add: %w", err)
	}
	evs, _, err := opts.From.Load(id)
	if err != nil {
		return res, fmt.Errorf("eval add: read session %s: %w", id, err)
	}
	if len(evs) == 0 {
		return res, fmt.Errorf("eval add: session %s has no events", id)
	}
	if opts.ForkFrom > 0 && opts.ForkFrom >= evs[len(evs)-1].Seq {
		return res, fmt.Errorf("eval add: --fork-from %d: session %s ends at seq %d; fork from an earlier event", opts.ForkFrom, id, evs[len(evs)-1].Seq)
	}
	if opts.LiveFromTurn > 0 {
		if _, err := replay.ForkSeqOfTurn(evs, opts.LiveFromTurn); err != nil {
			return res, fmt.Errorf("eval add: --fork-from %d: session %s: %w", opts.LiveFromTurn, id, err)
		}
	}
	res.SessionID = id
	name := opts.Name
	if name == "" {
		name = strings.Join(strings.Fields(evs[0].Name), "-")
		if name == "" {
			name = "session"
		}
		name += "-" + id[:min(8, len(id))]
		if opts.ForkFrom > 0 {
			name += fmt.Sprintf("-fork-%d", opts.ForkFrom)
		}
		if opts.LiveFromTurn > 0 {
			name += fmt.Sprintf("-live-%d", opts.LiveFromTurn)
		}
	}
	res.Scenario = name

	asserts, err := assertNodes(opts.Assert)
	if err != nil {
		return res, err
	}
	if len(asserts) == 0 {
		asserts = []*yaml.Node{mapping("status", scalar(defaultStatus(evs, opts.ForkFrom+int64(opts.LiveFromTurn))))}
	}

	dir := filepath.Dir(abs)
	fixture, n, existed, err := copyFixture(filepath.Join(dir, FixturesDir), opts.From, id, opts.Options)
	if err != nil {
		return res, err
	}
	res.Fixture, res.Sessions, res.Existed = filepath.ToSlash(filepath.Join(FixturesDir, fixture)), n, existed

	rp := mapping("home", scalar(res.Fixture), "session", scalar(id))
	if opts.ForkFrom > 0 {
		rp.Content = append(rp.Content, scalar("fork_from"), scalar(strconv.FormatInt(opts.ForkFrom, 10)))
	}
	rp.Style = yaml.FlowStyle
	if p := opts.Program; p != nil {
		// The program's keys make a long line: one per line.
		rp.Style = 0
		rp.Content = append(rp.Content, scalar("command"), scalar(p.Command))
		if p.WorkspaceFrom != "" {
			rp.Content = append(rp.Content, scalar("workspace_from"), scalar(relTo(dir, p.WorkspaceFrom)))
		}
		if len(p.ReadOnly) > 0 {
			l := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
			for _, r := range p.ReadOnly {
				l.Content = append(l.Content, scalar(relTo(dir, r)))
			}
			rp.Content = append(rp.Content, scalar("read_only"), l)
		}
		if len(p.Env) > 0 {
			l := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
			for _, v := range p.Env {
				l.Content = append(l.Content, scalar(v))
			}
			rp.Content = append(rp.Content, scalar("env"), l)
		}
		if opts.LiveFromTurn > 0 {
			rp.Content = append(rp.Content, scalar("live_from_turn"), scalar(strconv.Itoa(opts.LiveFromTurn)))
		}
	} else if replay.StandIn(evs[0]) != "" {
		res.NoProgram = true
	}
	seq := &yaml.Node{Kind: yaml.SequenceNode, Content: asserts}
	sc := mapping("name", scalar(name), "replay", rp)
	if opts.Model != nil {
		if opts.ForkFrom == 0 && opts.LiveFromTurn == 0 {
			return res, errors.New("eval add: a model is for a fork (--fork-from); a replay's model is the recording")
		}
		m := mapping("provider", scalar(opts.Model.Provider), "id", scalar(opts.Model.ID))
		if opts.Model.Script != "" {
			m.Content = append(m.Content, scalar("script"), scalar(relTo(dir, opts.Model.Script)))
		}
		m.Style = yaml.FlowStyle
		sc.Content = append(sc.Content, scalar("model"), m)
	}
	sc.Content = append(sc.Content, scalar("assert"), seq)
	out, line, err := appendScenario(data, sc)
	if err != nil {
		return res, fmt.Errorf("eval add: %s: %w", opts.Suite, err)
	}
	res.Line = line
	// Loaded before it replaces the suite: a scenario that does not load
	// (a name in use, a bad --assert) leaves the file as it was.
	tmp := filepath.Join(dir, ".tmp-eval-add-"+filepath.Base(abs))
	if err := os.WriteFile(tmp, out, 0o644); err != nil {
		return res, fmt.Errorf("eval add: %w", err)
	}
	defer os.Remove(tmp)
	if _, err := Load(tmp); err != nil {
		return res, fmt.Errorf("eval add: the new scenario does not load (the suite is unchanged): %w", err)
	}
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(abs); err == nil {
		mode = fi.Mode().Perm()
	}
	if err := vfs.WriteFileAtomicFS(vfs.OS, abs, out, mode, false); err != nil {
		return res, fmt.Errorf("eval add: write suite: %w", err)
	}
	return res, nil
}

// defaultStatus is the status a scenario made from evs asserts when no
// assertion is given (see Add): a fork's done, else the recorded outcome's
// (replay.RecordedOutcome), which a replay must reproduce.
func defaultStatus(evs []session.Event, forkFrom int64) string {
	if forkFrom > 0 {
		return string(session.StatusDone)
	}
	if s := string(replay.RecordedOutcome(evs).Status); slices.Contains(statuses, s) {
		return s
	}
	return string(session.StatusFailed)
}

// relTo writes path p (relative to the working directory, or absolute)
// relative to dir when it can, with slashes: a suite names its files
// relative to itself.
func relTo(dir, p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		return filepath.ToSlash(p)
	}
	if rel, err := filepath.Rel(dir, a); err == nil {
		return filepath.ToSlash(rel)
	}
	return filepath.ToSlash(a)
}

// NewSuiteText is the suite Add starts from when the file does not exist:
// a name from the file's and comments saying how to run and extend it.
// It holds no scenario (a suite needs one to load), so it is written only
// with the scenario Add appends.
func NewSuiteText(path string) []byte {
	name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	if name == "" {
		name = "regressions"
	}
	return []byte(`# Regression cases made from recorded sessions by agentctl eval add.
# Run it: agentctl eval ` + filepath.Base(path) + `   (exit 6 when a case fails)
# Add more: agentctl eval add ` + filepath.Base(path) + ` --from SESSION [--command 'node app.mjs']
# The format: go doc github.com/agentctl/agentctl/internal/evals
name: ` + strconv.Quote(name) + `
scenarios: []
`)
}

// assertNodes parses KEY=VALUE assertions into YAML mappings (VALUE is
// YAML: a scalar, or a flow mapping such as {tool: bash, times: 2}).
func assertNodes(specs []string) ([]*yaml.Node, error) {
	var out []*yaml.Node
	for _, s := range specs {
		k, v, ok := strings.Cut(s, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("eval add: --assert %q: write KIND=VALUE (status=done, called=edit_file, no_loop=3, budget={max_tokens: 5000})", s)
		}
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(v), &doc); err != nil {
			return nil, fmt.Errorf("eval add: --assert %q: the value is not YAML: %v", s, err)
		}
		val := scalar(v)
		if len(doc.Content) == 1 && doc.Content[0].Kind != yaml.ScalarNode {
			val = doc.Content[0]
			val.Style = yaml.FlowStyle
		} else if len(doc.Content) == 1 {
			val = doc.Content[0]
		}
		out = append(out, mapping(k, val))
	}
	return out, nil
}

func scalar(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: v} }

// mapping builds a mapping node of key, value pairs (values are nodes or
// strings' scalar nodes).
func mapping(kv ...any) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode}
	for i := 0; i+1 < len(kv); i += 2 {
		v, ok := kv[i+1].(*yaml.Node)
		if !ok {
			v = scalar(fmt.Sprint(kv[i+1]))
		}
		m.Content = append(m.Content, scalar(kv[i].(string)), v)
	}
	return m
}

// appendScenario inserts the scenario sc after the last scenario of the
// suite text data (see Add) and returns the new text and the scenario's
// line.
func appendScenario(data []byte, sc *yaml.Node) ([]byte, int, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, 0, err
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, 0, errors.New("the suite is not a YAML mapping")
	}
	root := doc.Content[0]
	var list *yaml.Node
	next := 0 // line of the root key after scenarios, 0 if none
	for i := 0; i+1 < len(root.Content); i += 2 {
		if list != nil {
			next = root.Content[i].Line
			break
		}
		if root.Content[i].Value == "scenarios" {
			list = root.Content[i+1]
		}
	}
	if list == nil || list.Kind != yaml.SequenceNode {
		return nil, 0, errors.New("the suite has no scenarios list")
	}
	if list.Style&yaml.FlowStyle != 0 || len(list.Content) == 0 {
		// No block list to continue: re-encode the tree (yaml.v3 keeps
		// the comments, not the spacing).
		list.Style = 0
		list.Content = append(list.Content, sc)
		var b bytes.Buffer
		enc := yaml.NewEncoder(&b)
		enc.SetIndent(2)
		if err := enc.Encode(&doc); err != nil {
			return nil, 0, err
		}
		line := bytes.Count(b.Bytes(), []byte("\n")) - renderedLines(sc) + 1
		return b.Bytes(), line, nil
	}
	lines := strings.SplitAfter(string(data), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	first := list.Content[0]
	dash := strings.IndexByte(lines[first.Line-1], '-')
	if dash < 0 || dash >= first.Column-1 {
		dash = max(first.Column-3, 0)
	}
	// The list ends at the last line before the next root key (or the
	// end of the file) that is neither blank nor a comment at the root's
	// indentation.
	end := len(lines)
	if next > 0 {
		end = next - 1
	}
	for end > first.Line && isTrailing(lines[end-1]) {
		end--
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{sc}}); err != nil {
		return nil, 0, err
	}
	// The suite's own spacing: the dash at the first item's column, the
	// item's keys as far after it as there.
	pad := strings.Repeat(" ", dash)
	gap := max(first.Column-1-dash, 2)
	var ins []string
	for i, l := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
		if i == 0 {
			l = "-" + strings.Repeat(" ", gap-1) + strings.TrimPrefix(l, "- ")
		} else {
			l = strings.Repeat(" ", gap-2) + l
		}
		ins = append(ins, pad+l+"\n")
	}
	if end > 0 && !strings.HasSuffix(lines[end-1], "\n") {
		lines[end-1] += "\n"
	}
	out := slices.Concat(lines[:end], ins, lines[end:])
	return []byte(strings.Join(out, "")), end + 1, nil
}

// isTrailing reports whether a line after a block list belongs to what
// follows it: blank, or a comment at column 0.
func isTrailing(l string) bool {
	t := strings.TrimRight(l, "\r\n")
	return strings.TrimSpace(t) == "" || strings.HasPrefix(t, "#")
}

func renderedLines(n *yaml.Node) int {
	b, err := yaml.Marshal(&yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{n}})
	if err != nil {
		return 0
	}
	return bytes.Count(b, []byte("\n"))
}

// maxArtifactCopy bounds one artifact file copied into a fixture: a
// suite lives in git.
const maxArtifactCopy = 64 << 20

// copyArtifacts copies the artifact files of the session folder from
// (the raw bodies a proxied session's events name by offset, so replay
// serves the recorded bytes) into to, redacted in place with
// same-length fills (redact.Redactor.Fill) so every offset still holds,
// and adds them to h.
func copyArtifacts(from, to string, opts recorder.Options, h io.Writer) error {
	src := filepath.Join(from, recorder.ArtifactsDir)
	entries, err := os.ReadDir(src)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	red := opts.Redactors()()
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue // a link or a folder is nothing a recorder wrote
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		if fi.Size() > maxArtifactCopy {
			return fmt.Errorf("%s is %d MiB, over the %d MiB a fixture copies", e.Name(), fi.Size()>>20, maxArtifactCopy>>20)
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			return err
		}
		red.Fill(b)
		dst := filepath.Join(to, recorder.ArtifactsDir)
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			return err
		}
		fmt.Fprintf(h, "artifact\x00%s\x00%d\x00", e.Name(), len(b))
		h.Write(b)
	}
	return nil
}

// copyFixture copies session id of from, with its subagents, into a new
// home under dir named after the SHA-256 of the copied logs, through the
// recorder (Store.WriteSession: every string redacted). It returns the
// folder's name, the number of sessions and whether the same copy was
// there already.
func copyFixture(dir string, from recorder.Store, id string, opts recorder.Options) (string, int, bool, error) {
	ids := []string{id}
	if lin, err := from.Lineage(); err == nil {
		for i := 0; i < len(ids) && i < 10000; i++ {
			ids = append(ids, lin.Subagents(ids[i])...)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", 0, false, fmt.Errorf("eval add: %w", err)
	}
	tmp, err := os.MkdirTemp(dir, ".tmp-")
	if err != nil {
		return "", 0, false, fmt.Errorf("eval add: %w", err)
	}
	defer os.RemoveAll(tmp)
	to := recorder.Store{Root: tmp}
	h := sha256.New()
	slices.Sort(ids[1:])
	for _, sid := range ids {
		evs, _, err := from.Load(sid)
		if err != nil {
			return "", 0, false, fmt.Errorf("eval add: read session %s: %w", sid, err)
		}
		if len(evs) == 0 {
			continue
		}
		evs[0].SessionID = sid
		if _, err := to.WriteSession(evs, opts); err != nil {
			return "", 0, false, fmt.Errorf("eval add: copy session %s: %w", sid, err)
		}
		os.Remove(filepath.Join(to.SessionDir(sid), recorder.LeaseFile))
		b, err := os.ReadFile(to.LogPath(sid))
		if err != nil {
			return "", 0, false, fmt.Errorf("eval add: %w", err)
		}
		fmt.Fprintf(h, "%s\x00%d\x00", sid, len(b))
		h.Write(b)
		if err := copyArtifacts(from.SessionDir(sid), to.SessionDir(sid), opts, h); err != nil {
			return "", 0, false, fmt.Errorf("eval add: copy the artifacts of session %s: %w", sid, err)
		}
	}
	name := hex.EncodeToString(h.Sum(nil))[:16]
	final := filepath.Join(dir, name)
	if _, err := os.Stat(final); err == nil {
		return name, len(ids), true, nil
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", 0, false, fmt.Errorf("eval add: %w", err)
	}
	if err := os.Rename(tmp, final); err != nil {
		return "", 0, false, fmt.Errorf("eval add: %w", err)
	}
	return name, len(ids), false, nil
}

// SuiteSessions are the sessions the scenarios of the suite at path
// replay (full ids, resolved in each scenario's home), so adding cases in
// bulk skips those it has. A suite that does not exist yet has none.
func SuiteSessions(path string) (map[string]bool, error) {
	out := map[string]bool{}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	s, err := Load(path)
	if err != nil {
		return nil, fmt.Errorf("eval add: the suite does not load as it is; fix it first: %w", err)
	}
	for _, sc := range s.Scenarios {
		if sc.Replay == nil {
			continue
		}
		out[sc.Replay.Session] = true
		if sc.Replay.Home != "" {
			if id, err := (recorder.Store{Root: sc.Replay.Home}).Resolve(sc.Replay.Session); err == nil {
				out[id] = true
			}
		}
	}
	return out, nil
}
