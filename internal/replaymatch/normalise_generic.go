package replaymatch

import (
	"regexp"
	"strings"
)

// The generic normalisers: spans any program's requests carry that differ
// between two runs of the same program, whatever the client. Each is
// narrow on purpose: a value the program chose (an order id, a count, a
// configured timeout) must still compare, so only shapes that a clock, a
// random source or mkdtemp produce are replaced.

var (
	// An ISO 8601 / RFC 3339 instant (2025-12-10T19:37:37.157Z,
	// 2026-12-02 10:04:05+01:00) or a calendar date (2026-12-02): today's
	// date in a system prompt, a timestamp in a tool's output. Only a
	// date one of the runs' clocks showed is replaced (Env.Days): the
	// program's own dates (an order shipped on 2026-11-28) still compare.
	dateTimeRE = regexp.MustCompile(`\b\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])(?:[T ](?:[01]\d|2[0-3]):[0-5]\d(?::[0-5]\d(?:[.,]\d+)?)?(?:Z|[+-](?:[01]\d|2[0-3]):?[0-5]\d)?)?\b`)
	// A measured duration: a number with a fraction and a time unit
	// (0.1799 seconds, 1.52s, 12.5 ms), or the compound form Go and
	// time(1) print (1m2.5s, 0m0.004s). A round "30s" is left alone: it
	// is a setting more often than a measure.
	durationRE = regexp.MustCompile(`\b(?:\d+h)?(?:\d+m)?\d+\.\d+ ?(?:ns|µs|us|ms|s|secs?|seconds?|milliseconds?)\b|\b\d+m\d+(?:\.\d+)?s\b`)
	// A UUID (any version): session, request and tool-call ids.
	uuidRE = regexp.MustCompile(`\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b`)
	// A run of 16 or more lowercase hex digits with a letter and a digit
	// in it: trace and span ids, request ids, content hashes, commit ids
	// (which change with the commit time). A long decimal number is not
	// one (it may be the program's).
	hexIDRE = regexp.MustCompile(`\b[0-9a-f]{16,}\b`)
	// The folder mkdtemp made under the system's temp dir: /tmp/<name>,
	// /var/tmp/<name>, macOS's /var/folders/xx/yyy/T/<name>. Only that
	// first component is replaced: the files below it still compare. A
	// path that merely has a tmp folder inside it (/srv/app/tmp/x) is the
	// program's (tempPath checks what comes before).
	tempPathRE = regexp.MustCompile(`(?:/private)?(?:/tmp|/var/tmp|/var/folders/[^/\s]+/[^/\s]+/T)/[^/\s"'<>()\[\]{},;:|\\]+`)
)

func init() {
	date := RegexpWhere("date-time", "any", "today's date and the time of day on either run's clock (system prompts, tool output, logs)",
		dateTimeRE, func(m string, env Env) bool { return env.clockDay(m) })
	date.Order = OrderGeneric
	dur := Regexp("duration", "any", "how long something took, as measured on that run", durationRE)
	dur.Order = OrderGeneric
	uuid := Regexp("uuid", "any", "random ids: sessions, requests, tool calls", uuidRE)
	uuid.Order = OrderGeneric - 1 // before hex-id, which would take its last group
	tmp := Normaliser{Name: "temp-path", Source: "any", Why: "the random folder a temp dir was made as",
		Order: OrderGeneric - 2, // before uuid and hex-id: the folder name is replaced whole
		Apply: tempPath}
	hex := RegexpWhere("hex-id", "any", "random or content-derived hex ids: trace, span and request ids, hashes, commit ids",
		hexIDRE, func(m string, _ Env) bool {
			return strings.ContainsAny(m, "abcdef") && strings.ContainsAny(m, "0123456789")
		})
	hex.Order = OrderGeneric
	for _, n := range []Normaliser{date, dur, uuid, tmp, hex} {
		Register(n)
	}
}

// tempPath replaces the temp folders tempPathRE finds that start a path:
// at the start of s or after a character no path has before its root.
func tempPath(s string, _ Env) (string, int) {
	locs := tempPathRE.FindAllStringIndex(s, -1)
	if locs == nil {
		return s, 0
	}
	ph := Placeholder("temp-path")
	var b strings.Builder
	n, last := 0, 0
	for _, l := range locs {
		if l[0] > 0 && inPath(s[l[0]-1]) {
			continue
		}
		b.WriteString(s[last:l[0]])
		b.WriteString(ph)
		last = l[1]
		n++
	}
	if n == 0 {
		return s, 0
	}
	b.WriteString(s[last:])
	return b.String(), n
}

// inPath reports whether c can come right before a "/" inside a path.
func inPath(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == '~' || c == '>'
}
