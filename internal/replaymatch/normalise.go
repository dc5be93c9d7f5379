// Package replaymatch decides whether a request a program sends during a
// replay is the one the recorded session holds at that turn. It is the one
// matcher every replay path uses (proxy --replay, eval replay scenarios,
// replay run of an external agent), whatever the session's origin.
//
// Before comparing, known volatile spans (paths, dates, durations, random
// ids, harness context blocks) are normalised on both sides by the table
// below; each normaliser is named so that a replay report can say what it
// changed, and each is tested on real requests of the client that produces
// it. --strict uses none of them.
package replaymatch

import (
	"regexp"
	"sort"
	"strings"
)

// Env is what the normalisers know of the two runs: the folders the
// recorded and the replaying program worked in (either may be empty).
type Env struct {
	RecordedDir string
	ReplayDir   string
}

// Normaliser rewrites the volatile spans of one kind in a text so that two
// runs of the same program compare equal. Apply must be idempotent and must
// only ever replace a span by a fixed placeholder naming its kind (never
// delete a real difference silently: a placeholder still compares).
type Normaliser struct {
	// Name is how the replay report and --ignore listings name it
	// ("codex-environment-context").
	Name string
	// Source is the client or convention that produces the span
	// ("Codex CLI", "Claude Code", "any").
	Source string
	// Why says what varies between two runs.
	Why string
	// Apply returns s normalised and how many spans it replaced.
	Apply func(s string, env Env) (string, int)
}

var table = map[string]Normaliser{}

// Register adds a normaliser to the table; each file of this package that
// knows a client's volatile spans registers them from init. A name
// registered twice is a programming error.
func Register(n Normaliser) {
	if n.Name == "" || n.Apply == nil {
		panic("replaymatch: a normaliser needs a name and an Apply")
	}
	if _, dup := table[n.Name]; dup {
		panic("replaymatch: normaliser " + n.Name + " registered twice")
	}
	table[n.Name] = n
}

// Normalisers returns the table in a stable order (by name).
func Normalisers() []Normaliser {
	out := make([]Normaliser, 0, len(table))
	for _, n := range table {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Regexp is a normaliser that replaces every match of re by
// "<volatile:NAME>".
func Regexp(name, source, why string, re *regexp.Regexp) Normaliser {
	ph := "<volatile:" + name + ">"
	return Normaliser{Name: name, Source: source, Why: why, Apply: func(s string, _ Env) (string, int) {
		n := 0
		out := re.ReplaceAllStringFunc(s, func(string) string { n++; return ph })
		return out, n
	}}
}

// Ignore is a user's own normaliser (--ignore REGEX, a spec's or suite's
// ignore: key): every match is replaced as a table entry's would be.
func Ignore(expr string) (Normaliser, error) {
	re, err := regexp.Compile(expr)
	if err != nil {
		return Normaliser{}, err
	}
	return Regexp("ignore:"+expr, "user", "given with --ignore", re), nil
}

func init() {
	Register(Regexp("claude-code-system-reminder", "Claude Code",
		"the working directory, today's date, the tokens left and the tool list Claude Code (and the Claude Agent SDK) put into user messages and tool results",
		regexp.MustCompile(`(?s)<system-reminder>.*?</system-reminder>`)))
	Register(Normaliser{Name: "workspace-path", Source: "any",
		Why: "the folder the program ran in: a replay from another folder sends its own",
		Apply: func(s string, env Env) (string, int) {
			n := 0
			for _, d := range []string{env.RecordedDir, env.ReplayDir} {
				if d == "" || d == "/" {
					continue
				}
				n += strings.Count(s, d)
				s = strings.ReplaceAll(s, d, "<volatile:workspace-path>")
			}
			return s, n
		}})
}
