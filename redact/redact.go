// Package redact replaces secrets in text before it is recorded, traced or
// shown to a model: known values (from .env files and from environment
// variables whose names look secret) and common token formats become
// [REDACTED:<name>].
//
// # Example
//
//	secrets := redact.FromEnv(os.Environ())
//	more, _ := redact.FromDotEnv(workspace)
//	r := redact.New(append(secrets, more...)...)
//	clean := r.String(output)
//	w := r.Writer(file) // streaming, line by line
//
// # What is matched
//
// Values: every value of a .env* file in the given folder (not its
// subfolders) that is at least 8 bytes long, or 4 for a secret-looking
// name; every environment variable whose name contains KEY, TOKEN, SECRET,
// PASSWORD, PASSWD, PASSPHRASE, CREDENTIAL, PRIVATE, AUTH, COOKIE or
// SESSION, with a value of at least 4 bytes. The name in the marker is the
// variable's. Formats (see patterns): OpenAI (sk-…, sk-proj-…), Anthropic
// (sk-ant-…), GitHub (ghp_…, gho_…, ghu_…, ghs_…, ghr_…, github_pat_…),
// AWS access key ids (AKIA…, ASIA…), Slack (xox?-…), Google API keys
// (AIza…), JWTs (three base64url parts starting eyJ) and PEM private key
// blocks.
//
// Redaction is idempotent: a marker never matches again. It cannot find a
// secret that was transformed (base64-encoded, split, reversed) on the way
// out; that is what the sandbox's hiding of credentials is for.
//
// # Concurrency
//
// A Redactor is immutable and safe for concurrent use; a Writer is not.
package redact

import (
	"bufio"
	"bytes"
	"cmp"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Secret is a known value and the name it is reported under.
type Secret struct {
	Name  string
	Value string
}

// Redactor replaces secrets. The nil *Redactor replaces token formats only.
type Redactor struct {
	repl *strings.Replacer
}

// pattern is a token format.
type pattern struct {
	name string
	re   *regexp.Regexp
}

// patterns are matched after the known values, in order (the more
// specific first).
var patterns = []pattern{
	{"private_key", regexp.MustCompile(`(?s)-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----.*?(-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|\z)`)},
	{"anthropic_key", regexp.MustCompile(`\bsk-ant-[A-Za-z0-9_\-]{16,}`)},
	{"openai_key", regexp.MustCompile(`\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}`)},
	{"github_token", regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})`)},
	{"aws_access_key_id", regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`)},
	{"slack_token", regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9\-]{10,}`)},
	{"google_api_key", regexp.MustCompile(`\bAIza[0-9A-Za-z_\-]{35}`)},
	{"jwt", regexp.MustCompile(`\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}`)},
}

// MinValue is the shortest known value New accepts: shorter ones would
// turn ordinary words into markers.
const MinValue = 4

// Marker is the replacement text for a secret called name.
func Marker(name string) string { return "[REDACTED:" + name + "]" }

// New returns a Redactor for the given known values (and the token
// formats). Values shorter than MinValue are ignored; when two secrets share a value the
// first name wins; longer values are replaced first.
func New(secrets ...Secret) *Redactor {
	seen := map[string]bool{}
	var s []Secret
	for _, x := range secrets {
		if len(x.Value) < MinValue || seen[x.Value] {
			continue
		}
		seen[x.Value] = true
		s = append(s, x)
	}
	slices.SortStableFunc(s, func(a, b Secret) int { return cmp.Compare(len(b.Value), len(a.Value)) })
	var pairs []string
	for _, x := range s {
		pairs = append(pairs, x.Value, Marker(x.Name))
	}
	r := &Redactor{}
	if len(pairs) > 0 {
		r.repl = strings.NewReplacer(pairs...)
	}
	return r
}

// String returns s with every secret replaced.
func (r *Redactor) String(s string) string {
	if s == "" {
		return s
	}
	if r != nil && r.repl != nil {
		s = r.repl.Replace(s)
	}
	for _, p := range patterns {
		if strings.Contains(s, "-----BEGIN") || p.name != "private_key" {
			s = p.re.ReplaceAllLiteralString(s, Marker(p.name))
		}
	}
	return s
}

// secretWords make an environment variable name look secret.
var secretWords = []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL", "PRIVATE", "AUTH", "COOKIE", "SESSION"}

// LooksSecret reports whether an environment variable called name probably
// holds a secret.
func LooksSecret(name string) bool {
	u := strings.ToUpper(name)
	for _, w := range secretWords {
		if strings.Contains(u, w) {
			return true
		}
	}
	return false
}

// FromEnv returns the values of the KEY=VALUE pairs whose names look
// secret and whose values are at least 4 bytes long.
func FromEnv(environ []string) []Secret {
	var out []Secret
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if ok && LooksSecret(k) && len(v) >= 4 {
			out = append(out, Secret{Name: k, Value: v})
		}
	}
	return out
}

// FromDotEnv reads every .env* file directly in dir (.env, .env.local,
// .env.production, …) and returns their values: those of at least 8
// bytes, and those of at least 4 under a secret-looking name. Quotes
// around a value are removed, "export " prefixes and comments ignored. A
// missing dir is not an error.
func FromDotEnv(dir string) ([]Secret, error) {
	matches, err := filepath.Glob(filepath.Join(dir, ".env*"))
	if err != nil {
		return nil, err
	}
	var out []Secret
	for _, m := range matches {
		fi, err := os.Stat(m)
		if err != nil || !fi.Mode().IsRegular() || fi.Size() > 1<<20 {
			continue
		}
		f, err := os.Open(m)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			line = strings.TrimPrefix(line, "export ")
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				continue
			}
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
				v = v[1 : len(v)-1]
			} else if i := strings.Index(v, " #"); i >= 0 {
				v = strings.TrimSpace(v[:i])
			}
			if len(v) >= 8 || (len(v) >= 4 && LooksSecret(k)) {
				out = append(out, Secret{Name: k, Value: v})
			}
		}
		f.Close()
	}
	return out, nil
}

// maxLine is how much of a line without a newline a Writer holds before
// it redacts and passes on all but the last overlap bytes.
const (
	maxLine = 64 << 10
	overlap = 8 << 10
)

// Writer returns a writer that redacts what is written to it line by line
// before passing it to w. A PEM private key block is replaced as a whole.
// Close flushes the last partial line (and, in a key block with no end,
// drops the rest); it does not close w.
func (r *Redactor) Writer(w io.Writer) io.WriteCloser {
	return &writer{r: r, w: w}
}

type writer struct {
	r     *Redactor
	w     io.Writer
	buf   []byte
	inKey bool
	err   error
}

var (
	beginKey = regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----`)
	endKey   = regexp.MustCompile(`-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----`)
)

func (w *writer) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	w.buf = append(w.buf, p...)
	start := 0
	// Whole lines are redacted in one batch, unless a key block is open
	// or starts in them.
	if last := bytes.LastIndexByte(w.buf, '\n'); last >= 0 && !w.inKey && !bytes.Contains(w.buf[:last+1], []byte("-----BEGIN")) {
		w.emit(w.r.String(string(w.buf[:last+1])))
		start = last + 1
	}
	for {
		i := bytes.IndexByte(w.buf[start:], '\n')
		if i < 0 {
			break
		}
		w.line(string(w.buf[start : start+i+1]))
		start += i + 1
	}
	w.buf = append(w.buf[:0], w.buf[start:]...)
	if len(w.buf) > maxLine && !w.inKey {
		s := w.r.String(string(w.buf))
		if cut := len(s) - overlap; cut > 0 {
			w.emit(s[:cut])
			w.buf = append(w.buf[:0], s[cut:]...)
		} else {
			w.buf = append(w.buf[:0], s...)
		}
	}
	if w.err != nil {
		return 0, w.err
	}
	return len(p), nil
}

func (w *writer) line(line string) {
	if w.inKey {
		if loc := endKey.FindStringIndex(line); loc != nil {
			w.inKey = false
			w.line(line[loc[1]:])
		}
		return
	}
	if loc := beginKey.FindStringIndex(line); loc != nil && endKey.FindStringIndex(line[loc[1]:]) == nil {
		w.emit(w.r.String(line[:loc[0]]) + Marker("private_key"))
		w.inKey = true
		return
	}
	w.emit(w.r.String(line))
}

func (w *writer) emit(s string) {
	if w.err == nil && s != "" {
		_, w.err = io.WriteString(w.w, s)
	}
}

func (w *writer) Close() error {
	if len(w.buf) > 0 && !w.inKey {
		w.emit(w.r.String(string(w.buf)))
	}
	w.buf = nil
	return w.err
}
