package bundle

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/redact"
)

// TestDiffBinaryPatch: a binary patch, whose content git encodes (base85
// of zlib), is decoded: a literal is kept when it holds no secret, and
// withheld when it does; a delta is withheld (the secret here begins like
// the old content, so git's delta copies half of it from there).
func TestDiffBinaryPatch(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	ws := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		cmd.Dir = ws
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	const secret = "binary-held-secret-9"
	big := bytes.Repeat([]byte("\x00\x01 some binary filler that deltas well\n"), 400)
	os.WriteFile(filepath.Join(ws, "delta.bin"), big, 0o644)
	run("init", "-q")
	run("add", ".")
	run("commit", "-qm", "init")
	withSecret := append(append([]byte(nil), big[:5000]...), append([]byte(secret), big[5000:]...)...)
	os.WriteFile(filepath.Join(ws, "delta.bin"), withSecret, 0o644)
	os.WriteFile(filepath.Join(ws, "clean.bin"), []byte("\x00\x02 nothing to hide"), 0o644)
	os.WriteFile(filepath.Join(ws, "literal.bin"), []byte("\x00\x03 "+secret), 0o644)
	red := redact.New(redact.Secret{Name: "BIN_TOKEN", Value: secret})
	var out bytes.Buffer
	d := openDiff(context.Background(), ws, filepath.Join(ws, "no-checkpoints"))
	if d == nil || d.refused != nil {
		t.Fatalf("openDiff = %+v", d)
	}
	defer d.close()
	if err := d.write(context.Background(), redactWriter(red, &out)); err != nil {
		t.Fatal(err)
	}
	diff := out.String()
	if n := strings.Count(diff, "GIT binary patch"); n != 1 {
		t.Errorf("%d binary patches kept, want 1 (clean.bin):\n%s", n, diff)
	}
	if n := strings.Count(diff, binaryPatchWithheld); n != 2 {
		t.Errorf("%d binary patches withheld, want 2 (delta.bin, literal.bin):\n%s", n, diff)
	}
	// The patch kept decodes: its content is clean.bin's.
	i := strings.Index(diff, "GIT binary patch")
	j := strings.Index(diff[i:], "\ndiff --git")
	if j < 0 {
		j = len(diff) - i
	}
	content, ok := binaryPatchContent([]byte(diff[i : i+j+1]))
	if !ok || !bytes.Contains(content, []byte("nothing to hide")) {
		t.Errorf("binaryPatchContent = %q, %v", content, ok)
	}
}
