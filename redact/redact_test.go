package redact

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
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
