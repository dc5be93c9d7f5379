package bundle_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/agentctl/agentctl/internal/bundle"
	"github.com/agentctl/agentctl/internal/query"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
)

const secret = "hunter2-very-secret-value"

// newSession records the loop fixture's events as a new session whose
// workspace is a git repository with a commit, a change, an untracked file,
// a .env secret, a progress file and a symlink.
func newSession(t *testing.T) (recorder.Store, string, string) {
	t.Helper()
	src := recorder.Store{Root: filepath.Join("..", "..", "fixtures", "diagnose", "home")}
	evs, _, err := src.Load("d1a9000000000001")
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	ws := filepath.Join(home, "sessions", "b0b0000000000001", "workspace") // the session's own folder: a header never chooses another
	os.MkdirAll(ws, 0o755)
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(ws, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("Makefile", "all:\n\t@echo building\n")
	if _, err := exec.LookPath("git"); err == nil {
		for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init"}} {
			cmd := exec.Command("git", args...)
			cmd.Dir = ws
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v %s", args, err, out)
			}
		}
	}
	write("Makefile", "all:\n\t@echo building twice\n")
	write("new.go", "package main // uses "+secret+"\n")
	write(".env", "API_TOKEN="+secret+"\n")
	write("PROGRESS.md", "# progress\n- [x] step one\n")
	os.Symlink("Makefile", filepath.Join(ws, "link"))

	st := recorder.Store{Root: home}
	hdr := evs[0]
	hdr.SessionID, hdr.Workspace = "b0b0000000000001", ws
	if _, err := st.WriteSession(append([]session.Event{hdr}, evs[1:]...), recorder.Options{NoSync: true}); err != nil {
		t.Fatal(err)
	}
	cp, err := os.ReadFile(filepath.Join(src.SessionDir("d1a9000000000001"), "checkpoints.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(st.SessionDir(hdr.SessionID), "checkpoints.jsonl"), cp, 0o644)
	os.MkdirAll(filepath.Join(st.SessionDir(hdr.SessionID), "artifacts"), 0o755)
	os.WriteFile(filepath.Join(st.SessionDir(hdr.SessionID), "artifacts", "out-1.txt"), []byte("big output\n"), 0o644)
	return st, hdr.SessionID, ws
}

func writeBundle(t *testing.T, st recorder.Store, id string) (string, *bundle.Manifest) {
	t.Helper()
	p := filepath.Join(t.TempDir(), id+".tar.zst")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	trace := func(w io.Writer, id string, each func(func(session.Event))) error {
		_, err := io.WriteString(w, `{"resourceSpans":[]}`)
		return err
	}
	m, err := bundle.Write(context.Background(), f, st, id, bundle.Options{Trace: trace})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return p, m
}

// TestDebianTools: the bundle is read by the system's zstd and tar, every
// member matches the MANIFEST, and the members say what they should.
func TestDebianTools(t *testing.T) {
	for _, tool := range []string{"zstd", "tar", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	st, id, srcWS := newSession(t)
	p, m := writeBundle(t, st, id)
	if out, err := exec.Command("zstd", "-t", "-q", p).CombinedOutput(); err != nil {
		t.Fatalf("zstd -t: %v %s", err, out)
	}
	dir := t.TempDir()
	if out, err := exec.Command("tar", "--zstd", "-xf", p, "-C", dir).CombinedOutput(); err != nil {
		t.Fatalf("tar --zstd -xf: %v %s", err, out)
	}
	want := []string{"events.parquet", "events.jsonl", "checkpoints.jsonl", "last_state.json", "trace.json", "tool_calls.csv",
		"env.txt", "workspace.diff", "workspace.tar.zst", "progress/PROGRESS.md", "artifacts/out-1.txt"}
	var names []string
	for _, mm := range m.Members {
		names = append(names, mm.Name)
		b, err := os.ReadFile(filepath.Join(dir, mm.Name))
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.Sum256(b)
		if hex.EncodeToString(h[:]) != mm.SHA256 || int64(len(b)) != mm.Size {
			t.Errorf("%s: size %d sha256 %x, MANIFEST says %d %s", mm.Name, len(b), h, mm.Size, mm.SHA256)
		}
	}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("members = %v, want %v", names, want)
	}
	var mf bundle.Manifest
	b, _ := os.ReadFile(filepath.Join(dir, "MANIFEST"))
	if err := json.Unmarshal(b, &mf); err != nil || mf.SessionID != id || len(mf.Members) != len(want) {
		t.Errorf("MANIFEST = %s (%v)", b, err)
	}
	read := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		return string(b)
	}
	diff := read("workspace.diff")
	for _, s := range []string{"-\t@echo building", "+\t@echo building twice", "new file mode", "new.go", "[REDACTED:API_TOKEN]"} {
		if !strings.Contains(diff, s) {
			t.Errorf("workspace.diff lacks %q:\n%s", s, diff)
		}
	}
	if strings.Contains(diff, secret) {
		t.Errorf("workspace.diff holds the secret:\n%s", diff)
	}
	// Untracked files were diffed through a copy of the index: the
	// workspace's own index still has them untracked.
	cmd := exec.Command("git", "status", "--porcelain", "--", "new.go")
	cmd.Dir = srcWS
	if out, err := cmd.Output(); err != nil || string(out) != "?? new.go\n" {
		t.Errorf("git status new.go after bundling = %q, %v; want it untracked", out, err)
	}
	csv := read("tool_calls.csv")
	if !strings.HasPrefix(csv, "ts,tool,input_hash,latency_ms,status,error,") || strings.Count(csv, "\n") != 4 {
		t.Errorf("tool_calls.csv =\n%s", csv)
	}
	var state bundle.State
	if err := json.Unmarshal([]byte(read("last_state.json")), &state); err != nil || state.LastSeq != 18 || state.Status != "budget_exceeded" || state.Turns != 4 {
		t.Errorf("last_state.json = %+v (%v)", state, err)
	}
	env := read("env.txt")
	for _, s := range []string{"pinned_model: scripted/scripted-1", "spec_hash: ", "os: ", "bundled_by_commit: "} {
		if !strings.Contains(env, s) {
			t.Errorf("env.txt lacks %q:\n%s", s, env)
		}
	}
	// The inner workspace archive, by the same tools: the .env is redacted,
	// the link is kept as a link.
	ws := t.TempDir()
	if out, err := exec.Command("tar", "--zstd", "-xf", filepath.Join(dir, "workspace.tar.zst"), "-C", ws).CombinedOutput(); err != nil {
		t.Fatalf("tar workspace: %v %s", err, out)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, ".env")); strings.Contains(string(b), secret) || !strings.Contains(string(b), "[REDACTED:API_TOKEN]") {
		t.Errorf(".env in the workspace archive = %q", b)
	}
	if l, err := os.Readlink(filepath.Join(ws, "link")); err != nil || l != "Makefile" {
		t.Errorf("link = %q, %v", l, err)
	}
}

// TestQueryBundle: an independent Parquet reader (DuckDB's read_parquet,
// through package query) reads events.parquet with the history's views.
func TestQueryBundle(t *testing.T) {
	st, id, _ := newSession(t)
	p, _ := writeBundle(t, st, id)
	ctx := context.Background()
	home, m, cleanup, err := bundle.OpenHistory(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	if m.SessionID != id {
		t.Errorf("session = %s, want %s", m.SessionID, id)
	}
	db, err := query.Open(ctx, home, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := db.Query(ctx, "SELECT count(*), max(seq), count(DISTINCT session_id) FROM read_parquet('"+filepath.Join(home, "history", "bundle", "events.parquet")+"')")
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Rows[0]; got[0] != int64(18) || got[1] != int64(18) || got[2] != int64(1) {
		t.Errorf("read_parquet = %v, want [18 18 1]", got)
	}
	res, err = db.Query(ctx, "SELECT session_id, status, tool_calls FROM sessions")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 1 || res.Rows[0][0] != id || res.Rows[0][1] != "budget_exceeded" || res.Rows[0][2] != int64(3) {
		t.Errorf("sessions = %v", res.Rows)
	}
}

// TestRoundTrip: Extract verifies and unpacks what Write wrote.
func TestRoundTrip(t *testing.T) {
	st, id, _ := newSession(t)
	p, m := writeBundle(t, st, id)
	f, _ := os.Open(p)
	defer f.Close()
	out := filepath.Join(t.TempDir(), "out")
	got, err := bundle.Extract(context.Background(), f, out, bundle.ExtractOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Members) != len(m.Members) {
		t.Errorf("members = %d, want %d", len(got.Members), len(m.Members))
	}
	if _, err := os.Stat(filepath.Join(out, "MANIFEST")); err != nil {
		t.Error(err)
	}
}

type entry struct {
	hdr  tar.Header
	body string
}

// mkArchive builds a tar.zst from entries; with manifest, a MANIFEST that
// lists the regular members as they are is appended.
func mkArchive(t *testing.T, entries []entry, manifest bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, _ := zstd.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	m := bundle.Manifest{Format: bundle.Format, Version: bundle.Version, SessionID: "x"}
	for _, e := range entries {
		h := e.hdr
		if h.Typeflag == tar.TypeReg && h.Size == 0 {
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			io.WriteString(tw, e.body)
			s := sha256.Sum256([]byte(e.body))
			m.Members = append(m.Members, bundle.Member{Name: h.Name, Size: int64(len(e.body)), SHA256: hex.EncodeToString(s[:])})
		}
	}
	if manifest {
		b, _ := json.Marshal(m)
		tw.WriteHeader(&tar.Header{Name: "MANIFEST", Typeflag: tar.TypeReg, Size: int64(len(b)), Mode: 0o644})
		tw.Write(b)
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

func reg(name, body string) entry {
	return entry{hdr: tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644}, body: body}
}

// TestHostile: archives that try to escape the target, plant links or
// devices, claim huge members, or disagree with their MANIFEST are refused
// and leave nothing behind.
func TestHostile(t *testing.T) {
	huge := func() []byte {
		// A header claiming 1 TiB followed by almost nothing: refused
		// from the header, before a byte is written.
		var tb bytes.Buffer
		tw := tar.NewWriter(&tb)
		tw.WriteHeader(&tar.Header{Name: "events.jsonl", Typeflag: tar.TypeReg, Size: 1 << 40, Mode: 0o644})
		tw.Write(make([]byte, 4096))
		var buf bytes.Buffer
		zw, _ := zstd.NewWriter(&buf)
		zw.Write(tb.Bytes())
		zw.Close()
		return buf.Bytes()
	}
	for _, tc := range []struct {
		name string
		data []byte
		want error
	}{
		{"traversal", mkArchive(t, []entry{reg("../escaped", "x")}, true), bundle.ErrUnsafePath},
		{"traversal-nested", mkArchive(t, []entry{reg("a/../../escaped", "x")}, true), bundle.ErrUnsafePath},
		{"absolute", mkArchive(t, []entry{reg("/tmp/escaped", "x")}, true), bundle.ErrUnsafePath},
		{"symlink", mkArchive(t, []entry{{hdr: tar.Header{Name: "link", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}}}, true), bundle.ErrMemberType},
		{"hardlink", mkArchive(t, []entry{{hdr: tar.Header{Name: "hl", Typeflag: tar.TypeLink, Linkname: "/etc/passwd"}}}, true), bundle.ErrMemberType},
		{"chardev", mkArchive(t, []entry{{hdr: tar.Header{Name: "null", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3}}}, true), bundle.ErrMemberType},
		{"fifo", mkArchive(t, []entry{{hdr: tar.Header{Name: "fifo", Typeflag: tar.TypeFifo}}}, true), bundle.ErrMemberType},
		{"huge-member", huge(), bundle.ErrTooLarge},
		{"no-manifest", mkArchive(t, []entry{reg("events.jsonl", "{}")}, false), bundle.ErrManifest},
		{"duplicate", mkArchive(t, []entry{reg("a", "1"), reg("a", "2")}, true), bundle.ErrManifest},
		{"not-zstd", []byte("this is not a bundle at all"), bundle.ErrRefused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent := t.TempDir()
			out := filepath.Join(parent, "out")
			_, err := bundle.Extract(context.Background(), bytes.NewReader(tc.data), out, bundle.ExtractOptions{})
			if !errors.Is(err, tc.want) || !errors.Is(err, bundle.ErrRefused) {
				t.Fatalf("Extract = %v, want %v", err, tc.want)
			}
			ents, _ := os.ReadDir(parent)
			if len(ents) != 0 {
				t.Errorf("left behind: %v", ents)
			}
			if _, err := os.Lstat(filepath.Join(filepath.Dir(parent), "escaped")); err == nil {
				t.Errorf("a file escaped the target")
			}
		})
	}
}

// TestTampered: a member changed after bundling fails the MANIFEST check;
// a member limit refuses large members; a bundle cut short is refused.
func TestTampered(t *testing.T) {
	good := mkArchive(t, []entry{reg("events.jsonl", "one\n"), reg("env.txt", "os: linux\n")}, true)
	ctx := context.Background()
	if _, err := bundle.Extract(ctx, bytes.NewReader(good), filepath.Join(t.TempDir(), "o"), bundle.ExtractOptions{}); err != nil {
		t.Fatalf("good archive: %v", err)
	}
	// Same archive, one member's content changed but the MANIFEST kept.
	var m bundle.Manifest
	m.Format, m.Version = bundle.Format, bundle.Version
	s := sha256.Sum256([]byte("one\n"))
	m.Members = []bundle.Member{{Name: "events.jsonl", Size: 4, SHA256: hex.EncodeToString(s[:])}}
	b, _ := json.Marshal(m)
	bad := mkArchive(t, []entry{reg("events.jsonl", "two\n"), reg("MANIFEST", string(b))}, false)
	if _, err := bundle.Extract(ctx, bytes.NewReader(bad), filepath.Join(t.TempDir(), "o"), bundle.ExtractOptions{}); !errors.Is(err, bundle.ErrManifest) {
		t.Errorf("tampered: %v, want ErrManifest", err)
	}
	if _, err := bundle.Extract(ctx, bytes.NewReader(good), filepath.Join(t.TempDir(), "o"), bundle.ExtractOptions{MaxMember: 3}); !errors.Is(err, bundle.ErrTooLarge) {
		t.Errorf("max member 3: %v, want ErrTooLarge", err)
	}
	for _, n := range []int{0, 1, 10, len(good) / 2, len(good) - 1} {
		parent := t.TempDir()
		_, err := bundle.Extract(ctx, bytes.NewReader(good[:n]), filepath.Join(parent, "o"), bundle.ExtractOptions{})
		if !errors.Is(err, bundle.ErrRefused) {
			t.Errorf("cut at %d of %d: %v, want ErrRefused", n, len(good), err)
		}
		if ents, _ := os.ReadDir(parent); len(ents) != 0 {
			t.Errorf("cut at %d: left behind %v", n, ents)
		}
	}
}

// TestWorkspacePaths: the workspace is streamed into a file output (its
// tar header patched in place) or spooled for an output that cannot seek,
// on one goroutine or several; every way, the bundle verifies and its
// workspace.tar.zst unpacks to the same tar stream.
func TestWorkspacePaths(t *testing.T) {
	st, id, _ := newSession(t)
	var want []byte
	for _, tc := range []struct {
		name        string
		file        bool
		concurrency int
	}{{"file/2", true, 2}, {"file/1", true, 1}, {"buffer/2", false, 2}, {"buffer/1", false, 1}} {
		var out bytes.Buffer
		if tc.file {
			p := filepath.Join(t.TempDir(), "b.tar.zst")
			f, err := os.Create(p)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString("offset") // the archive need not start at 0
			f.Seek(0, io.SeekEnd)
			if _, err := bundle.Write(context.Background(), f, st, id, bundle.Options{Concurrency: tc.concurrency}); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			f.Close()
			b, _ := os.ReadFile(p)
			out.Write(b[len("offset"):])
		} else if _, err := bundle.Write(context.Background(), &out, st, id, bundle.Options{Concurrency: tc.concurrency}); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		dir := filepath.Join(t.TempDir(), "out")
		if _, err := bundle.Extract(context.Background(), bytes.NewReader(out.Bytes()), dir, bundle.ExtractOptions{}); err != nil {
			t.Fatalf("%s: Extract: %v", tc.name, err)
		}
		zf, err := os.Open(filepath.Join(dir, "workspace.tar.zst"))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		zr, _ := zstd.NewReader(zf)
		var got bytes.Buffer // names and contents; times may differ
		tr := tar.NewReader(zr)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: read workspace.tar.zst: %v", tc.name, err)
			}
			fmt.Fprintf(&got, "%s %d\n", h.Name, h.Size)
			io.Copy(&got, tr)
		}
		zr.Close()
		zf.Close()
		if want == nil {
			want = got.Bytes()
		} else if !bytes.Equal(got.Bytes(), want) {
			t.Errorf("%s: workspace of %d bytes (names and contents), want the %d bytes of the first", tc.name, got.Len(), len(want))
		}
	}
}

// TestDiffRefused: a workspace repository that would make git read outside
// the workspace (a gitdir: link out of it, an index path with ..) gets a
// workspace.diff that says why there is no diff, and a warning; nothing of
// the outside file is in the bundle.
func TestDiffRefused(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	const outside = "OUTSIDE-FILE-CONTENT-93c1"
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, ws, out string)
		want  string
	}{
		{"gitdir outside", func(t *testing.T, ws, out string) {
			os.Rename(filepath.Join(ws, ".git"), filepath.Join(out, "moved.git"))
			os.WriteFile(filepath.Join(ws, ".git"), []byte("gitdir: "+filepath.Join(out, "moved.git")+"\n"), 0o644)
		}, "# no git diff: refused: .git's gitdir: "},
		{"index path with ..", func(t *testing.T, ws, out string) {
			rel, _ := filepath.Rel(ws, filepath.Join(out, "secret"))
			writeIndex(t, filepath.Join(ws, ".git", "index"), rel)
		}, `# no git diff: refused: the index has the path "../`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, id, ws := newSession(t)
			out := t.TempDir()
			os.WriteFile(filepath.Join(out, "secret"), []byte(outside+"\n"), 0o644)
			tc.plant(t, ws, out)
			var warn bytes.Buffer
			var b bytes.Buffer
			if _, err := bundle.Write(context.Background(), &b, st, id, bundle.Options{Warn: &warn}); err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			if _, err := bundle.Extract(context.Background(), bytes.NewReader(b.Bytes()), dir, bundle.ExtractOptions{}); err != nil {
				t.Fatal(err)
			}
			diff, err := os.ReadFile(filepath.Join(dir, "workspace.diff"))
			if err != nil || !strings.Contains(string(diff), tc.want) || strings.Contains(string(diff), outside) {
				t.Errorf("workspace.diff = %q, %v; want a note starting %q", diff, err, tc.want)
			}
			if !strings.Contains(warn.String(), "workspace.diff: refused: ") {
				t.Errorf("warnings = %q, want the refusal", warn.String())
			}
		})
	}
}

// writeIndex writes a version 2 git index holding one entry, path (for
// the empty blob), which no git command would write.
func writeIndex(t *testing.T, file, path string) {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("DIRC\x00\x00\x00\x02\x00\x00\x00\x01")
	b.Write(make([]byte, 24))
	b.Write([]byte{0, 0, 0x81, 0xa4}) // mode 100644
	b.Write(make([]byte, 12))
	empty, _ := hex.DecodeString("e69de29bb2d1d6434b8b29ae775ad8c2e48c5391")
	b.Write(empty)
	b.Write([]byte{byte(len(path) >> 8), byte(len(path))})
	b.WriteString(path)
	b.Write(make([]byte, 8-(b.Len()-12)%8))
	sum := sha1.Sum(b.Bytes())
	b.Write(sum[:])
	if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
