package replaymatch

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
)

// Env is what the normalisers know of the two runs: the folders the
// recorded and the replaying program worked in (either may be empty).
type Env struct {
	RecordedDir string
	ReplayDir   string
	// Days are the calendar days (2006-01-02) the clocks of the two runs
	// showed: the recording's first and last events and the replay's
	// start, each with the day before and after (a program prints its
	// local date, the log keeps UTC). A date is volatile only when it is
	// one of them: any other (an order's shipping date, a deadline) is the
	// program's data and still compares. Empty (neither run's clock
	// known): every date counts as the clock's.
	Days []string
}

// ClockDays is Env.Days for runs whose clocks showed the given instants
// (zero ones are skipped).
func ClockDays(at ...time.Time) []string {
	var out []string
	seen := map[string]bool{}
	for _, t := range at {
		if t.IsZero() {
			continue
		}
		for _, d := range []int{-1, 0, 1} {
			day := t.UTC().AddDate(0, 0, d).Format(time.DateOnly)
			if !seen[day] {
				seen[day] = true
				out = append(out, day)
			}
		}
	}
	return out
}

// clockDay reports whether a date (2006-01-02...) is one env's clocks
// showed.
func (env Env) clockDay(date string) bool {
	if len(env.Days) == 0 {
		return true
	}
	return len(date) >= 10 && slices.Contains(env.Days, date[:10])
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
	// Order places the normaliser in the sequence they are applied in:
	// lower first, then by name. A span that contains another kind's is
	// replaced first, whole: the workspace path (OrderPath) before the
	// temp folder it may lie in, a client's context block (0, the
	// default) before the dates inside it, the generic spans
	// (OrderGeneric) last.
	Order int
}

// The Order bands (a client's normalisers keep the default, 0).
const (
	OrderUser    = -20 // --ignore, ignore: (Ignore)
	OrderPath    = -10 // the two runs' own folders
	OrderGeneric = 10  // dates, durations, ids, temp paths
)

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
	ordered = nil
}

// slugRE is what a path's slug replaces by "-".
var slugRE = regexp.MustCompile(`[^A-Za-z0-9]`)

// ordered caches the table in the order it is applied (Register runs from
// init only, before any replay reads it).
var ordered []Normaliser

// Normalisers returns the table in the order the matcher applies it (by
// Order, then by name).
func Normalisers() []Normaliser {
	if ordered == nil {
		out := make([]Normaliser, 0, len(table))
		for _, n := range table {
			out = append(out, n)
		}
		sortNormalisers(out)
		ordered = out
	}
	return append([]Normaliser(nil), ordered...)
}

func sortNormalisers(ns []Normaliser) {
	sort.SliceStable(ns, func(i, j int) bool {
		if ns[i].Order != ns[j].Order {
			return ns[i].Order < ns[j].Order
		}
		return ns[i].Name < ns[j].Name
	})
}

// Placeholder is what a normaliser named name puts in place of a span.
func Placeholder(name string) string { return "<volatile:" + name + ">" }

// Regexp is a normaliser that replaces every match of re by
// Placeholder(name).
func Regexp(name, source, why string, re *regexp.Regexp) Normaliser {
	return RegexpWhere(name, source, why, re, nil)
}

// RegexpWhere is Regexp replacing only the matches volatile accepts (nil:
// all): a shape that is sometimes the program's own value (a date no run's
// clock showed, a hex run with no letter in it) is told apart from the
// volatile one here rather than by a regular expression.
func RegexpWhere(name, source, why string, re *regexp.Regexp, volatile func(m string, env Env) bool) Normaliser {
	ph := Placeholder(name)
	return Normaliser{Name: name, Source: source, Why: why, Apply: func(s string, env Env) (string, int) {
		n := 0
		out := re.ReplaceAllStringFunc(s, func(m string) string {
			if m == ph || volatile != nil && !volatile(m, env) {
				return m
			}
			n++
			return ph
		})
		return out, n
	}}
}

// Ignore is a user's own normaliser (--ignore REGEX, a spec's or suite's
// ignore: key): every match is replaced as a table entry's would be. The
// user's are applied first, and under --strict too (they were asked for).
func Ignore(expr string) (Normaliser, error) {
	re, err := regexp.Compile(expr)
	if err != nil {
		return Normaliser{}, err
	}
	n := Regexp("ignore:"+expr, "user", "given with --ignore", re)
	n.Order = OrderUser
	return n, nil
}

// Ignores compiles each expression with Ignore; the error names the one
// that does not compile.
func Ignores(exprs []string) ([]Normaliser, error) {
	var out []Normaliser
	for _, e := range exprs {
		n, err := Ignore(e)
		if err != nil {
			return nil, fmt.Errorf("ignore %q: %w", e, err)
		}
		out = append(out, n)
	}
	return out, nil
}

func init() {
	Register(Regexp("claude-code-system-reminder", "Claude Code",
		"the working directory, today's date, the tokens left and the tool list Claude Code (and the Claude Agent SDK) put into user messages and tool results",
		regexp.MustCompile(`(?s)<system-reminder>.*?</system-reminder>`)))
	Register(Normaliser{Name: "workspace-path", Source: "any", Order: OrderPath,
		Why: "the folder the program ran in, as a path or as the slug a client names a folder of its own after (Claude Code's ~/.claude/projects/-tmp-x-ws): a replay from another folder sends its own",
		Apply: func(s string, env Env) (string, int) {
			n := 0
			var forms []string
			for _, d := range []string{env.RecordedDir, env.ReplayDir} {
				d = strings.TrimRight(d, "/")
				if len(d) < 2 {
					continue
				}
				forms = append(forms, d, slugRE.ReplaceAllString(d, "-"))
			}
			// The longer first: one may lie inside another.
			sort.SliceStable(forms, func(i, j int) bool { return len(forms[i]) > len(forms[j]) })
			for _, f := range forms {
				if k := strings.Count(s, f); k > 0 {
					n += k
					s = strings.ReplaceAll(s, f, Placeholder("workspace-path"))
				}
			}
			return s, n
		}})
}
