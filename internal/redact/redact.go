// Package redact replaces secrets in text before it is recorded, traced or
// shown to a model: known values (from .env files and from environment
// variables whose names look secret) and common token formats become
// [REDACTED:<name>].
//
// # Example
//
//	secrets := redact.FromEnv(os.Environ())
//	more, err := redact.FromDotEnv(workspace) // err: a file that could not be read
//	r := redact.New(append(secrets, more...)...)
//	clean := r.String(output)
//	w := r.Writer(file) // streaming, line by line
//	live := redact.NewLive(workspace, secrets...) // follows the .env files as they change
//
// # What is matched
//
// Values: every value of a .env* file in the given folder (not its
// subfolders) that is at least 8 bytes long, or 4 for a secret-looking
// name; every environment variable whose name contains KEY, TOKEN, SECRET,
// PASSWORD, PASSWD, PASSPHRASE, CREDENTIAL, PRIVATE, AUTH, COOKIE or
// SESSION (but not the desktop's SSH_AUTH_SOCK, XDG_SESSION_* and the
// like), with a value of at least 4 bytes. The name in the marker is the
// variable's. Formats (see patterns, the one table of them): OpenAI
// (sk-…, sk-proj-…), Anthropic (sk-ant-…), GitHub (ghp_…, gho_…, ghu_…,
// ghs_…, ghr_…, github_pat_…), AWS access key ids (AKIA…, ASIA…) and
// secret access keys (40 characters after an access key id, or under a
// name such as aws_secret_access_key= or "SecretAccessKey"), Slack
// (xox?-…), Google API keys (AIza…), JWTs (three base64url parts starting
// eyJ), PEM private key blocks, Stripe (sk_live_…, rk_live_…, and _test_),
// Hugging Face (hf_…), Azure (AccountKey=, SharedAccessKey=, a SAS sig=),
// the values of API-key headers (x-api-key:, api-key:,
// Ocp-Apim-Subscription-Key:), bearer tokens of any shape (Bearer …),
// basic credentials (Basic base64 of user:password) and the password of a
// URL (postgres://user:password@host). Of a header, a URL or a named key
// only the value becomes a marker ("Authorization: Bearer
// [REDACTED:bearer_token]"). A format that could be ordinary text asks for
// what ordinary text lacks: a digit in a bearer token or header value, both
// cases in a Hugging Face token, a decoded colon in basic credentials.
//
// Every match is found, overlapping ones included, in one pass over the
// text (see index); overlapping matches become one marker, named after
// the one that starts first. Redaction is idempotent: a marker never
// matches again. It cannot find a secret that was transformed
// (base64-encoded, compressed, split, reversed) on the way out; that is
// what the sandbox's hiding of credentials is for.
//
// # .env files
//
// FromDotEnv reads each file whole, up to MaxDotEnv bytes; a larger one is
// an error (ErrDotEnvTooLarge), never a silent stop. A .env* that is a
// symbolic link is read only when it resolves to a regular file inside the
// folder: a link out of it (.env.aws -> ~/.aws/credentials) is not read,
// so its values are not learnt, and redaction cannot confirm a guess of
// what a hidden file holds.
//
// # Concurrency
//
// A Redactor is immutable and safe for concurrent use; a Writer is not; a
// Live is safe for concurrent use.
package redact

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"regexp"
	"slices"
	"strings"
	"unsafe"
)

// Secret is a known value and the name it is reported under.
type Secret struct {
	Name  string
	Value string
}

// Redactor replaces secrets. The nil *Redactor replaces token formats only.
type Redactor struct {
	values []Secret // known values, longest first
	ix     *index   // the needles of the values and of the token formats
	maxLen int      // the longest value
}

// pattern is a token format. Every match starts with one of lits; a match
// of a pattern with word set starts at a word boundary. The secret is the
// whole match of re, or its first group when it has one (the value of a
// header, the password of a URL: the rest of the match says what it is,
// and is kept). A pattern with valid takes only a secret valid accepts; one
// with find takes what find returns instead of re's match.
type pattern struct {
	name  string
	lits  []string
	word  bool
	re    *regexp.Regexp // anchored at the start of the text
	valid func(secret []byte) bool
	find  func(b []byte) (start, end int, ok bool)
}

func newPattern(name string, word bool, re string, lits ...string) pattern {
	return pattern{name: name, lits: lits, word: word, re: regexp.MustCompile(`^(?:` + re + `)`)}
}

// with returns p taking only the secrets valid accepts.
func (p pattern) with(valid func([]byte) bool) pattern { p.valid = valid; return p }

// match returns the secret of the match of p at the start of b.
func (p *pattern) match(b []byte) (start, end int, ok bool) {
	if p.find != nil {
		return p.find(b)
	}
	loc := p.re.FindSubmatchIndex(b)
	if loc == nil {
		return 0, 0, false
	}
	start, end = loc[0], loc[1]
	if len(loc) > 2 && loc[2] >= 0 {
		start, end = loc[2], loc[3]
	}
	if start == end || (p.valid != nil && !p.valid(b[start:end])) {
		return 0, 0, false
	}
	return start, end, true
}

// Pieces of the formats below. A value (of a header, a key) may be quoted,
// also inside a JSON string (\"), and is made of token characters: never
// of a marker's brackets, so that a marker is not redacted again.
const (
	sep      = `(?:\\?["'])?[ \t]*[:=][ \t]*(?:\\?["'])?`
	token68  = `[A-Za-z0-9\-._~+/]`
	base64ch = `[A-Za-z0-9+/]`
)

// patterns are the token formats: the one table of what is redacted
// without being known. The more specific come first: of two matches of the
// same text the first one's name is reported.
var patterns = []pattern{
	newPattern("private_key", false, `(?s)-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----.*?(-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|\z)`, "-----BEGIN"),
	newPattern("anthropic_key", true, `sk-ant-[A-Za-z0-9_\-]{16,}`, "sk-ant-"),
	newPattern("openai_key", true, `sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}`, "sk-"),
	newPattern("github_token", true, `gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,}`, "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
	newPattern("aws_access_key_id", true, `(?:AKIA|ASIA)[0-9A-Z]{16}\b`, "AKIA", "ASIA"),
	newPattern("slack_token", true, `xox[abposr]-[A-Za-z0-9\-]{10,}`, "xox"),
	newPattern("google_api_key", true, `AIza[0-9A-Za-z_\-]{35}`, "AIza"),
	newPattern("jwt", true, `eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}`, "eyJ"),
	newPattern("stripe_key", true, `[rs]k_(?:live|test)_[A-Za-z0-9]{16,}`, "sk_live_", "rk_live_", "sk_test_", "rk_test_"),
	newPattern("huggingface_token", true, `hf_[A-Za-z0-9]{30,}`, "hf_").with(mixedCase),
	// An AWS secret access key is 40 characters of base64 with nothing to
	// tell it by: taken under a name that says what it is, or after an
	// access key id (aws_secret_beside).
	newPattern("aws_secret_access_key", false, `(?:aws_secret_access_key|AWS_SECRET_ACCESS_KEY|aws_secret_key|AWS_SECRET_KEY|SecretAccessKey|secretAccessKey)`+sep+`(`+base64ch+`{16,}=*)`,
		"aws_secret_access_key", "AWS_SECRET_ACCESS_KEY", "aws_secret_key", "AWS_SECRET_KEY", "SecretAccessKey", "secretAccessKey"),
	{name: "aws_secret_access_key", lits: []string{"AKIA", "ASIA"}, word: true, find: awsSecretBeside},
	newPattern("azure_key", false, `(?:AccountKey|SharedAccessKey)=(`+base64ch+`{20,}={0,2})`, "AccountKey=", "SharedAccessKey="),
	newPattern("azure_key", false, `[?&]sig=([A-Za-z0-9%+/=]{16,})`, "?sig=", "&sig="),
	newPattern("api_key_header", true, `(?i:api-key|subscription-key)`+sep+`(`+token68+`{12,}=*)`,
		"api-key", "Api-Key", "API-Key", "API-KEY", "Api-key", "api-Key", "subscription-key", "Subscription-Key", "SUBSCRIPTION-KEY").with(hasDigit),
	// Last: a JWT or a provider's key after "Bearer" keeps its own name.
	newPattern("bearer_token", true, `(?i:bearer)[ \t]+(`+token68+`{16,}=*)`, "Bearer", "bearer", "BEARER").with(hasDigit),
	newPattern("basic_auth", true, `(?i:basic)[ \t]+(`+base64ch+`{6,}={0,2})`, "Basic", "basic", "BASIC").with(basicCredentials),
	// user:password@ after a URL's scheme (postgres://, https://, redis://).
	newPattern("url_password", false, `://[^\s:/@?#\[\]]*:([^\s/@?#\[\]]+)@`, "://"),
}

// hasDigit tells a token from a word.
func hasDigit(b []byte) bool {
	return slices.ContainsFunc(b, func(c byte) bool { return c >= '0' && c <= '9' })
}

// mixedCase tells a random token from an identifier.
func mixedCase(b []byte) bool {
	return slices.ContainsFunc(b, func(c byte) bool { return c >= 'A' && c <= 'Z' }) &&
		slices.ContainsFunc(b, func(c byte) bool { return c >= 'a' && c <= 'z' })
}

// basicCredentials reports whether b is the base64 of user:password, as
// HTTP basic authentication sends them.
func basicCredentials(b []byte) bool {
	d, err := base64.StdEncoding.DecodeString(string(b))
	if err != nil {
		d, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(string(b), "="))
	}
	i := bytes.IndexByte(d, ':')
	if err != nil || i < 0 || i == len(d)-1 {
		return false
	}
	return !slices.ContainsFunc(d, func(c byte) bool { return c < 0x20 || c == 0x7f })
}

// besideWindow is how far after an AWS access key id its secret is looked
// for: a CSV row, a credentials file, an "id secret" line.
const besideWindow = 256

// awsSecretBeside finds the secret access key that follows the access key
// id at the start of b: the first run of exactly 40 base64 characters
// within besideWindow bytes with upper and lower case letters and a digit
// or a slash or plus (a hexadecimal git hash has no upper case).
func awsSecretBeside(b []byte) (start, end int, ok bool) {
	const idLen = 20
	if len(b) < idLen || (len(b) > idLen && isWord(b[idLen])) ||
		slices.ContainsFunc(b[4:idLen], func(c byte) bool { return (c < 'A' || c > 'Z') && (c < '0' || c > '9') }) {
		return 0, 0, false
	}
	in := func(c byte) bool { return isWord(c) && c != '_' || c == '/' || c == '+' }
	stop := min(len(b), idLen+besideWindow)
	for i := idLen; i < stop; {
		if !in(b[i]) {
			i++
			continue
		}
		j := i
		for j < len(b) && in(b[j]) {
			j++
		}
		if j-i == 40 && mixedCase(b[i:j]) && slices.ContainsFunc(b[i:j], func(c byte) bool { return c >= '0' && c <= '9' || c == '/' || c == '+' }) {
			return i, j, true
		}
		i = j
	}
	return 0, 0, false
}

// MinValue is the shortest known value New accepts: shorter ones would
// turn ordinary words into markers.
const MinValue = 4

// Marker is the replacement text for a secret called name.
func Marker(name string) string { return "[REDACTED:" + name + "]" }

// New returns a Redactor for the given known values (and the token
// formats). Values shorter than MinValue are ignored; when two secrets
// share a value the first name wins.
func New(secrets ...Secret) *Redactor {
	seen := map[string]bool{}
	r := &Redactor{}
	for _, x := range secrets {
		if len(x.Value) < MinValue || seen[x.Value] {
			continue
		}
		seen[x.Value] = true
		r.values = append(r.values, x)
		r.maxLen = max(r.maxLen, len(x.Value))
	}
	slices.SortStableFunc(r.values, func(a, b Secret) int { return cmp.Compare(len(b.Value), len(a.Value)) })
	if len(r.values) == 0 {
		r.ix = formatIndex
	} else {
		r.ix = newIndex(r.values)
	}
	return r
}

// index returns the needles r searches for; the nil Redactor's are the
// token formats'.
func (r *Redactor) index() *index {
	if r == nil {
		return formatIndex
	}
	return r.ix
}

// MaxValue is the length of the longest known value: a streaming reader
// must see at least that much of the text around a place to find it.
func (r *Redactor) MaxValue() int {
	if r == nil {
		return 0
	}
	return r.maxLen
}

// String returns s with every secret replaced by its marker.
func (r *Redactor) String(s string) string {
	if len(s) < MinValue {
		return s
	}
	b := unsafe.Slice(unsafe.StringData(s), len(s)) // read only
	sp := r.index().spans(b)
	if len(sp) == 0 {
		return s
	}
	var out strings.Builder
	out.Grow(len(s))
	at := 0
	for _, x := range sp {
		out.WriteString(s[at:x.start])
		out.WriteString(Marker(x.name))
		at = x.end
	}
	out.WriteString(s[at:])
	return out.String()
}

// Holds reports whether b holds a secret.
func (r *Redactor) Holds(b []byte) bool { return len(r.index().spans(b)) > 0 }

// Fill overwrites every secret in b with a marker of the secret's own
// length (see FillText), so that offsets and sizes stay as they were: what
// an archive of files needs, whose sizes are written before their content.
// It reports whether it changed b.
func (r *Redactor) Fill(b []byte) bool {
	sp := r.index().spans(b)
	for _, x := range sp {
		copy(b[x.start:x.end], FillText(x.name, x.end-x.start))
	}
	return len(sp) > 0
}

// FillText is the marker of a secret called name that is n bytes long,
// itself n bytes long: the marker padded with '*', or "[REDACTED]" when
// the marker does not fit, or only '*' when that does not either.
func FillText(name string, n int) string {
	m := Marker(name)
	if len(m) > n {
		m = "[REDACTED]"
	}
	if len(m) > n {
		m = ""
	}
	return m + strings.Repeat("*", n-len(m))
}

// secretWords make an environment variable name look secret.
var secretWords = []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL", "PRIVATE", "AUTH", "COOKIE", "SESSION"}

// notSecret are variables a desktop or a login sets whose names hold a
// secret word but whose values are paths and words ("user", "wayland"):
// taken as secrets, they would turn ordinary text into markers.
var notSecret = map[string]bool{
	"SSH_AUTH_SOCK": true, "DBUS_SESSION_BUS_ADDRESS": true, "SESSION_MANAGER": true,
	"DESKTOP_SESSION": true, "GNOME_KEYRING_CONTROL": true, "XAUTHORITY": true,
}

// LooksSecret reports whether an environment variable called name probably
// holds a secret.
func LooksSecret(name string) bool {
	u := strings.ToUpper(name)
	if notSecret[u] || strings.HasPrefix(u, "XDG_SESSION_") {
		return false
	}
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
		if ok && LooksSecret(k) && len(v) >= MinValue {
			out = append(out, Secret{Name: k, Value: v})
		}
	}
	return out
}
