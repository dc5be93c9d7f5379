package redact

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Test tokens are assembled at run time so that no scanner flags this file.
var (
	openai    = "sk-" + "proj-" + strings.Repeat("a1B2", 10)
	anthropic = "sk-" + "ant-api03-" + strings.Repeat("Zx9_", 12)
	ghp       = "gh" + "p_" + strings.Repeat("Ab3", 12)
	ghpat     = "github" + "_pat_" + strings.Repeat("11AB_cd", 9)
	aws       = "AK" + "IA" + "ABCDEFGHIJKLMNOP"
	slack     = "xo" + "xb-" + "123456789012-abcdefABCDEF"
	jwt       = "ey" + "JhbGciOiJIUzI1NiJ9.ey" + "JzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
	pem       = "-----BEGIN RSA " + "PRIVATE KEY-----\nMIIEowIBAAKCAQEAx\nabcdef\n-----END RSA " + "PRIVATE KEY-----"
)

func TestString(t *testing.T) {
	r := New(Secret{"DB_PASSWORD", "hunter2hunter2"}, Secret{"SHORT", "ab"}, Secret{"API_KEY", "zq-custom-0123456789"})
	tests := []struct{ in, want string }{
		{"pw=hunter2hunter2.", "pw=[REDACTED:DB_PASSWORD]."},
		{"key zq-custom-0123456789", "key [REDACTED:API_KEY]"},
		{"ab stays", "ab stays"},
		{"o " + openai + " x", "o [REDACTED:openai_key] x"},
		{"a " + anthropic, "a [REDACTED:anthropic_key]"},
		{ghp + " " + ghpat, "[REDACTED:github_token] [REDACTED:github_token]"},
		{"id=" + aws, "id=[REDACTED:aws_access_key_id]"},
		{slack, "[REDACTED:slack_token]"},
		{"Bearer " + jwt, "Bearer [REDACTED:jwt]"},
		{"k:\n" + pem + "\ndone", "k:\n[REDACTED:private_key]\ndone"},
		{"nothing secret here: sk-short", "nothing secret here: sk-short"},
	}
	for _, tt := range tests {
		if got := r.String(tt.in); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got := r.String(r.String(tt.in)); got != tt.want {
			t.Errorf("String twice (%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	var nilR *Redactor
	if got := nilR.String("x " + aws); got != "x [REDACTED:aws_access_key_id]" {
		t.Errorf("nil Redactor: %q", got)
	}
}

// TestWriter feeds the same input in one piece and split at every offset:
// the output must be the same, and no secret may survive.
func TestWriter(t *testing.T) {
	r := New(Secret{"TOKEN", "s3cr3t-value-42"})
	in := "line one s3cr3t-value-42\n" + pem + "\nafter key " + openai + "\nno newline s3cr3t-value-42"
	want := r.String(in)
	for split := 0; split <= len(in); split++ {
		var out bytes.Buffer
		w := r.Writer(&out)
		w.Write([]byte(in[:split]))
		w.Write([]byte(in[split:]))
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if out.String() != want {
			t.Fatalf("split at %d: got %q, want %q", split, out.String(), want)
		}
	}
	// A long line without newlines is flushed in pieces; a secret across a
	// piece boundary is still caught.
	long := strings.Repeat("x", maxLine-5) + "s3cr3t-value-42" + strings.Repeat("y", 3*maxLine)
	var out bytes.Buffer
	w := r.Writer(&out)
	for i := 0; i < len(long); i += 1000 {
		w.Write([]byte(long[i:min(i+1000, len(long))]))
	}
	w.Close()
	if strings.Contains(out.String(), "s3cr3t") || !strings.Contains(out.String(), "[REDACTED:TOKEN]") {
		t.Errorf("long line: secret not redacted")
	}
}

func TestFromEnvAndDotEnv(t *testing.T) {
	got := FromEnv([]string{"PATH=/bin", "GITHUB_TOKEN=abcd1234", "MY_API_KEY=xyzw9876", "PWD=/home", "X_SECRET=ab"})
	if len(got) != 2 || got[0].Name != "GITHUB_TOKEN" || got[1].Name != "MY_API_KEY" {
		t.Errorf("FromEnv = %v", got)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, ".env"), []byte("# c\nexport DB_URL=\"postgres://u:pw@h/db\"\nPORT=80\nSTRIPE_KEY='rk_live_1234'\nNAME=longvalue123 # comment\n"), 0o644)
	os.WriteFile(filepath.Join(dir, ".env.local"), []byte("LOCAL_PASSWORD=pass1234\n"), 0o644)
	secrets, err := FromDotEnv(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, s := range secrets {
		m[s.Name] = s.Value
	}
	want := map[string]string{"DB_URL": "postgres://u:pw@h/db", "STRIPE_KEY": "rk_live_1234", "NAME": "longvalue123", "LOCAL_PASSWORD": "pass1234"}
	if len(m) != len(want) {
		t.Errorf("FromDotEnv = %v, want %v", m, want)
	}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("FromDotEnv[%s] = %q, want %q", k, m[k], v)
		}
	}
}

// TestDotEnvLongLine is finding 11: a line over bufio.Scanner's 64 KiB
// limit stopped the reading of every line after it.
func TestDotEnvLongLine(t *testing.T) {
	dir := t.TempDir()
	body := "BIG=" + strings.Repeat("x", 100<<10) + "\nLATER_TOKEN=after-the-long-line-42\n"
	os.WriteFile(filepath.Join(dir, ".env"), []byte(body), 0o644)
	secrets, err := FromDotEnv(dir)
	if err != nil {
		t.Fatal(err)
	}
	r := New(secrets...)
	if got := r.String("v=after-the-long-line-42"); got != "v=[REDACTED:LATER_TOKEN]" {
		t.Errorf("the secret after a 100 KiB line: %q", got)
	}
}

// TestDotEnvOverCap: a file over MaxDotEnv is an error that names it, and
// the other files are still read.
func TestDotEnvOverCap(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, ".env.big"), []byte("A_TOKEN=first-value-1\n"+strings.Repeat("#", MaxDotEnv)), 0o644)
	os.WriteFile(filepath.Join(dir, ".env"), []byte("OK_TOKEN=small-file-value\n"), 0o644)
	secrets, err := FromDotEnv(dir)
	if !errors.Is(err, ErrDotEnvTooLarge) || !strings.Contains(err.Error(), ".env.big") {
		t.Fatalf("FromDotEnv error = %v, want ErrDotEnvTooLarge naming .env.big", err)
	}
	if len(secrets) != 1 || secrets[0].Name != "OK_TOKEN" {
		t.Errorf("secrets = %v, want the small file's", secrets)
	}
}

// TestDotEnvLinks is finding 12: a .env* link is followed only to a
// regular file inside the folder. The value of a file outside stays in the
// output, which shows that it was not read (redacting it would confirm a
// guess of what the hidden file holds).
func TestDotEnvLinks(t *testing.T) {
	outside := t.TempDir()
	hidden := filepath.Join(outside, "credentials")
	os.WriteFile(hidden, []byte("aws_secret_access_key=hidden-guessable-value\n"), 0o600)
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "sub", "real.env"), []byte("IN_TOKEN=inside-link-value\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "abs.env"), []byte("ABS_TOKEN=absolute-link-value\n"), 0o644)
	for name, target := range map[string]string{
		".env.aws":     hidden,                         // out, absolute
		".env.rel":     "../" + filepath.Base(outside), // out, relative (a folder)
		".env.up":      filepath.Join("..", filepath.Base(outside), "credentials"),
		".env.in":      "sub/real.env",                // in, relative
		".env.abs":     filepath.Join(dir, "abs.env"), // in, absolute
		".env.dangles": "nowhere",
	} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(dir, ".env.fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	secrets, err := FromDotEnv(dir) // a FIFO must not block it
	if err != nil {
		t.Fatal(err)
	}
	r := New(secrets...)
	for in, want := range map[string]string{
		"hidden-guessable-value": "hidden-guessable-value",
		"inside-link-value":      "[REDACTED:IN_TOKEN]",
		"absolute-link-value":    "[REDACTED:ABS_TOKEN]",
	} {
		if got := r.String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestLive: a Live sees a .env file appear, change and go, and does not
// read the files again while nothing changed.
func TestLive(t *testing.T) {
	dir := t.TempDir()
	l := NewLive(dir, Secret{"ENV_TOKEN", "from-the-environment"})
	check := func(in, want string) {
		t.Helper()
		r, err := l.Redactor()
		if err != nil {
			t.Fatal(err)
		}
		if got := r.String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
	check("from-the-environment", "[REDACTED:ENV_TOKEN]")
	r1, _ := l.Redactor()
	if r2, _ := l.Redactor(); r1 != r2 {
		t.Errorf("nothing changed, yet the Redactor was built again")
	}
	p := filepath.Join(dir, ".env")
	os.WriteFile(p, []byte("NEW_TOKEN=written-mid-run\n"), 0o644)
	check("written-mid-run", "[REDACTED:NEW_TOKEN]")
	os.WriteFile(p, []byte("NEW_TOKEN=rewritten-value\n"), 0o644) // same size, same folder
	check("rewritten-value", "[REDACTED:NEW_TOKEN]")
	os.WriteFile(p, []byte("NEW_TOKEN=x"+strings.Repeat("y", MaxDotEnv)), 0o644)
	if _, err := l.Redactor(); !errors.Is(err, ErrDotEnvTooLarge) {
		t.Errorf("over the cap: err = %v", err)
	}
	os.Remove(p)
	check("written-mid-run", "written-mid-run")
}

// TestFillAndCopyFill: Fill keeps lengths; CopyFill of any piece of a file,
// in chunks and with a secret across every kind of edge, gives the bytes of
// Fill of the whole.
func TestFillAndCopyFill(t *testing.T) {
	r := New(Secret{"DB_PASSWORD", "hunter2hunter2"})
	in := []byte("a hunter2hunter2 b " + ghp + " c")
	want := string(in)
	if !r.Fill(in) || len(in) != len(want) || strings.Contains(string(in), "hunter2") || strings.Contains(string(in), ghp) {
		t.Fatalf("Fill = %q", in)
	}
	// A file with secrets at chunk edges, piece edges and in the middle.
	var file []byte
	for i := 0; len(file) < 3*fillChunk+5*fillContext; i++ {
		file = append(file, strings.Repeat("z", 977*i%5000)...)
		file = append(file, " hunter2hunter2 "+ghp+" "+jwt+"\n"...)
	}
	whole := append([]byte(nil), file...)
	r.Fill(whole)
	f := r.NewFiller()
	src := bytes.NewReader(file)
	size := int64(len(file))
	for _, piece := range [][2]int64{{0, size}, {0, 1}, {5, fillChunk}, {fillChunk - 7, fillChunk + 3}, {size - 100, 100}, {1234, size - 1234}} {
		var out bytes.Buffer
		if err := f.CopyFill(&out, src, piece[0], piece[1], size); err != nil {
			t.Fatal(err)
		}
		if got, want := out.String(), string(whole[piece[0]:piece[0]+piece[1]]); got != want {
			t.Errorf("piece %v: differs from Fill of the whole file", piece)
		}
	}
	if err := f.CopyFill(io.Discard, src, size-10, 20, size+10); !errors.Is(err, ErrShortFile) {
		t.Errorf("a file that shrank: %v", err)
	}
}

// TestEveryOffset: the scan looks at every other offset; a secret is found
// at any offset, odd or even, and at the very end.
func TestEveryOffset(t *testing.T) {
	r := New(Secret{"V4", "abcd"}, Secret{"V9", "q-1.Z_x/9"})
	for _, s := range []string{"abcd", "q-1.Z_x/9", openai, anthropic, ghp, ghpat, aws, slack, jwt, pem} {
		for pad := 0; pad < 9; pad++ {
			for _, tail := range []string{"", " ", " tail"} {
				in := strings.Repeat(" ", pad) + s + tail
				if got := r.String(in); strings.Contains(got, s) {
					t.Errorf("offset %d, tail %q: %q survives in %q", pad, tail, s, got)
				}
			}
		}
	}
}
