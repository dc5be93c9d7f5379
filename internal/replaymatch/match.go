package replaymatch

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/agentctl/agentctl/internal/clip"
	"github.com/agentctl/agentctl/internal/session"
)

// Request is one model request in the matcher's terms, whatever the wire
// format: the system text apart, the messages in order, the names of the
// tools offered, the model asked for.
type Request struct {
	// Model is the model asked for ("" when unknown).
	Model string
	// System is the system text (instructions), "" when none.
	System   string
	Messages []session.Message
	// Tools are the names of the tools offered, in the request's order;
	// nil when unknown (a recording that kept no tool list).
	Tools []string
	// NoContent marks a recorded request whose content was not captured
	// (collected with content capture off): only the model and the tools
	// compare.
	NoContent bool

	// models are other names the recording knows the model by (the
	// session's pinned model beside the answering one).
	models []string
}

// Options choose how a request is compared.
type Options struct {
	// Strict compares byte for byte: no table normaliser runs (the
	// user's Ignore ones still do).
	Strict bool
	// Ignore are the user's own normalisers (Ignores).
	Ignore []Normaliser
	// Env is what the path normalisers replace.
	Env Env
	// Redact, when set, maps a replayed string as the recording would
	// have stored it (the recorder redacts secrets at capture): a
	// replayed string that differs is compared redacted too.
	Redact func(string) string
}

// Difference is the first place a replayed request departs from the
// recorded one.
type Difference struct {
	Turn int `json:"turn"`
	// Message numbers the request's messages from 1 (the system text
	// apart); 0 when the difference is not in one message.
	Message int `json:"message,omitempty"`
	// Role is the recorded message's role (the replayed one's past the
	// recorded messages).
	Role string `json:"role,omitempty"`
	// Field is what differs: model, tools, system, messages (their
	// count), role, content, tool_calls, tool_call_id.
	Field string `json:"field"`
	// Recorded and Replayed are short excerpts of both sides around the
	// first differing character (after normalisation).
	Recorded string `json:"recorded"`
	Replayed string `json:"replayed"`
}

// String is the one-line report: "turn 2, message 3 (user content): log
// has "…order A-1042?", request has "…order A-1043?"".
func (d *Difference) String() string { return fmt.Sprintf("turn %d, %s", d.Turn, d.Detail()) }

// Detail is String without the turn, for a report that names it already.
func (d *Difference) Detail() string {
	var b strings.Builder
	switch {
	case d.Message > 0 && d.Role != "":
		fmt.Fprintf(&b, "message %d (%s %s)", d.Message, d.Role, d.Field)
	case d.Message > 0:
		fmt.Fprintf(&b, "message %d (%s)", d.Message, d.Field)
	default:
		b.WriteString(d.Field)
	}
	fmt.Fprintf(&b, ": log has %s, request has %s", d.Recorded, d.Replayed)
	return b.String()
}

// Compare reports the first difference between the recorded request want
// and the replayed request got (nil when they match), and how many spans
// each normaliser replaced to make them match (nil when none did). A
// string is normalised only when it differs as sent: two equal strings
// stay equal whatever the normalisers do, so the counts say what made a
// difference go away.
func Compare(want, got Request, opts Options) (*Difference, map[string]int) {
	c := newComparer(opts)
	d := c.compare(want, got)
	return d, c.counts
}

// SameText compares one text of a request outside the conversation (a
// request's metadata) as Compare compares a message's: true when equal as
// sent or once normalised, with the counts of the normalisers that made it
// so.
func SameText(want, got string, opts Options) (bool, map[string]int) {
	c := newComparer(opts)
	_, _, ok := c.same(want, got)
	return ok, c.counts
}

func newComparer(opts Options) *comparer {
	c := &comparer{opts: opts, ns: opts.Ignore}
	if !opts.Strict {
		c.ns = append(append([]Normaliser(nil), opts.Ignore...), Normalisers()...)
		sortNormalisers(c.ns)
	}
	return c
}

type comparer struct {
	opts   Options
	ns     []Normaliser
	counts map[string]int
	cache  *textCache // nil: none (Compare)
}

func (c *comparer) compare(want, got Request) *Difference {
	if want.Model != "" && got.Model != "" && !sameModel(want, got.Model) {
		// An alias the recording does not know (claude-x-latest) can be
		// --ignore'd like any text.
		if _, _, ok := c.same(want.Model, got.Model); !ok {
			return &Difference{Field: "model", Recorded: quote(want.Model), Replayed: quote(got.Model)}
		}
	}
	if want.Tools != nil && got.Tools != nil && strings.Join(want.Tools, "\x00") != strings.Join(got.Tools, "\x00") {
		return &Difference{Field: "tools", Recorded: "[" + strings.Join(want.Tools, ", ") + "]", Replayed: "[" + strings.Join(got.Tools, ", ") + "]"}
	}
	if want.NoContent {
		return nil
	}
	if w, g, ok := c.same(want.System, got.System); !ok {
		r, p := excerpts(w, g)
		return &Difference{Field: "system", Recorded: r, Replayed: p}
	}
	for i := 0; i < max(len(want.Messages), len(got.Messages)); i++ {
		if i >= len(want.Messages) {
			m := got.Messages[i]
			return &Difference{Message: i + 1, Role: m.Role, Field: "messages",
				Recorded: fmt.Sprintf("%d messages", len(want.Messages)), Replayed: "an extra " + describe(m)}
		}
		if i >= len(got.Messages) {
			m := want.Messages[i]
			return &Difference{Message: i + 1, Role: m.Role, Field: "messages",
				Recorded: describe(m), Replayed: fmt.Sprintf("%d messages", len(got.Messages))}
		}
		if d := c.message(want.Messages[i], got.Messages[i]); d != nil {
			d.Message = i + 1
			return d
		}
	}
	return nil
}

func (c *comparer) message(w, g session.Message) *Difference {
	if w.Role != g.Role {
		return &Difference{Role: w.Role, Field: "role", Recorded: w.Role, Replayed: g.Role}
	}
	if w.ToolCallID != g.ToolCallID {
		if _, _, ok := c.same(w.ToolCallID, g.ToolCallID); !ok {
			return &Difference{Role: w.Role, Field: "tool_call_id", Recorded: quote(w.ToolCallID), Replayed: quote(g.ToolCallID)}
		}
	}
	if a, b, ok := c.same(w.Content, g.Content); !ok {
		r, p := excerpts(a, b)
		return &Difference{Role: w.Role, Field: "content", Recorded: r, Replayed: p}
	}
	if len(w.ToolCalls) != len(g.ToolCalls) {
		return &Difference{Role: w.Role, Field: "tool_calls", Recorded: describeCalls(w.ToolCalls), Replayed: describeCalls(g.ToolCalls)}
	}
	for j := range w.ToolCalls {
		x, y := w.ToolCalls[j], g.ToolCalls[j]
		_, _, idOK := c.same(x.ID, y.ID)
		if x.Name != y.Name || !idOK {
			return &Difference{Role: w.Role, Field: "tool_calls", Recorded: describeCalls(w.ToolCalls[j : j+1]), Replayed: describeCalls(g.ToolCalls[j : j+1])}
		}
		if a, b, ok := c.sameArgs(x.Args, y.Args); !ok {
			r, p := excerpts(a, b)
			return &Difference{Role: w.Role, Field: "tool_calls", Recorded: x.Name + " " + r, Replayed: y.Name + " " + p}
		}
	}
	return nil
}

// same reports whether the recorded w and the replayed g are the same
// text: as sent, as the recording would have stored g (redacted), or once
// both are normalised (then the counts are taken). It returns the forms
// it compared last, for the excerpt.
func (c *comparer) same(w, g string) (string, string, bool) {
	if w == g {
		return w, g, true
	}
	if c.opts.Redact != nil {
		if r := c.redact(g); r != g {
			if r == w {
				return w, r, true
			}
			g = r
		}
	}
	if len(c.ns) == 0 {
		return w, g, false
	}
	nw, cw := c.normalise(w)
	ng, cg := c.normalise(g)
	if nw != ng {
		return nw, ng, false
	}
	// A span replaced on both sides is one change: the larger count.
	for _, x := range cg {
		n := x.n
		for _, y := range cw {
			if y.name == x.name {
				n = max(n, y.n)
			}
		}
		c.count(x.name, n)
	}
	for _, y := range cw {
		if !slices.ContainsFunc(cg, func(x nameCount) bool { return x.name == y.name }) {
			c.count(y.name, y.n)
		}
	}
	return nw, ng, true
}

// sameArgs compares two tool calls' arguments as JSON values (key order
// and spacing do not count), normalised as text when they differ. Unless
// --strict, a key only one side has whose value is its type's zero
// (false, 0, "", null, [], {}) does not count: clients send a call back
// with their tool schema's defaults filled in or left out (Claude Code's
// Edit "replace_all": false), which is no change of the call; each such
// key is counted as DefaultArgs.
func (c *comparer) sameArgs(w, g json.RawMessage) (string, string, bool) {
	if session.SameJSON(orEmpty(w), orEmpty(g)) {
		return string(w), string(g), true
	}
	if !c.opts.Strict {
		var x, y map[string]any
		if json.Unmarshal(orEmpty(w), &x) == nil && json.Unmarshal(orEmpty(g), &y) == nil && x != nil && y != nil {
			n := dropDefaults(x, y) + dropDefaults(y, x)
			a, b := canonicalValue(x), canonicalValue(y)
			if a == b && n > 0 {
				c.count(DefaultArgs, n)
				return a, b, true
			}
			if n > 0 {
				w, g = json.RawMessage(a), json.RawMessage(b)
			}
		}
	}
	return c.same(canonical(w), canonical(g))
}

// DefaultArgs names, in the counts, the tool-call argument keys a side
// left out at their zero value (sameArgs).
const DefaultArgs = "tool-args-default"

// dropDefaults deletes from x the keys y lacks whose value is zero, and
// says how many.
func dropDefaults(x, y map[string]any) int {
	n := 0
	for k, v := range x {
		if _, ok := y[k]; ok || !zero(v) {
			continue
		}
		delete(x, k)
		n++
	}
	return n
}

func zero(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case bool:
		return !v
	case float64:
		return v == 0
	case string:
		return v == ""
	case []any:
		return len(v) == 0
	case map[string]any:
		return len(v) == 0
	}
	return false
}

func canonicalValue(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func (c *comparer) count(name string, n int) {
	if c.counts == nil {
		c.counts = map[string]int{}
	}
	c.counts[name] += n
}

func orEmpty(b json.RawMessage) json.RawMessage {
	if len(strings.TrimSpace(string(b))) == 0 {
		return json.RawMessage("{}")
	}
	return b
}

// canonical is b re-encoded (sorted keys, no spaces), or b as it is when it
// is not JSON.
func canonical(b json.RawMessage) string {
	var v any
	if json.Unmarshal(orEmpty(b), &v) != nil {
		return string(b)
	}
	out, err := json.Marshal(v)
	if err != nil {
		return string(b)
	}
	return string(out)
}

func (c *comparer) redact(s string) string {
	if c.cache == nil {
		return c.opts.Redact(s)
	}
	if r, ok := c.cache.redacted(s); ok {
		return r
	}
	r := c.opts.Redact(s)
	c.cache.putRedacted(s, r)
	return r
}

// nameCount is how many spans one normaliser replaced in a text.
type nameCount struct {
	name string
	n    int
}

// normalise is s through every normaliser, with what each replaced (the
// slice is shared with the cache: read it only).
func (c *comparer) normalise(s string) (string, []nameCount) {
	if c.cache == nil {
		return c.normaliseNow(s)
	}
	if e, ok := c.cache.normalised(s); ok {
		return e.text, e.counts
	}
	n, counts := c.normaliseNow(s)
	c.cache.putNormalised(s, n, counts)
	return n, counts
}

func (c *comparer) normaliseNow(s string) (string, []nameCount) {
	var counts []nameCount
	for _, n := range c.ns {
		var k int
		s, k = n.Apply(s, c.opts.Env)
		if k > 0 {
			counts = append(counts, nameCount{n.Name, k})
		}
	}
	return s, counts
}

// sameModel: the model asked for is the recorded one, or the recording
// holds the dated name the provider answered with (gpt-4o asked,
// gpt-4o-2024-08-06 answered).
func sameModel(want Request, got string) bool {
	for _, m := range append([]string{want.Model}, want.models...) {
		if m == got || datedName(m, got) || datedName(got, m) {
			return true
		}
	}
	return false
}

// datedName reports whether long is short with a date suffix
// (-20241022, -2024-08-06).
func datedName(long, short string) bool {
	if !strings.HasPrefix(long, short+"-") {
		return false
	}
	rest := long[len(short)+1:]
	digits := strings.ReplaceAll(rest, "-", "")
	if len(digits) != 8 || (len(rest) != 8 && len(rest) != 10) {
		return false
	}
	for _, r := range digits {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// excerptBefore and excerptAfter bound the excerpts of a difference.
const (
	excerptBefore = 30
	excerptAfter  = 50
)

// excerpts are both texts around their first differing character, quoted,
// with "…" where they were cut.
func excerpts(a, b string) (string, string) {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	for i > 0 && (i < len(a) && !utf8.RuneStart(a[i]) || i < len(b) && !utf8.RuneStart(b[i])) {
		i--
	}
	return excerpt(a, i), excerpt(b, i)
}

func excerpt(s string, at int) string {
	if s == "" {
		return `""`
	}
	from := max(0, at-excerptBefore)
	for from > 0 && !utf8.RuneStart(s[from]) {
		from--
	}
	to := min(len(s), at+excerptAfter)
	for to < len(s) && !utf8.RuneStart(s[to]) {
		to++
	}
	out := fmt.Sprintf("%q", s[from:to])
	if from > 0 {
		out = "…" + out
	}
	if to < len(s) {
		out += "…"
	}
	return out
}

func quote(s string) string { return fmt.Sprintf("%q", s) }

// describe names a message briefly (one past the other side's last).
func describe(m session.Message) string {
	var b strings.Builder
	b.WriteString(m.Role)
	if m.ToolCallID != "" {
		fmt.Fprintf(&b, " result of %s", m.ToolCallID)
	}
	if len(m.ToolCalls) > 0 {
		fmt.Fprintf(&b, " calling %s", describeCalls(m.ToolCalls))
	}
	if m.Content != "" || len(m.ToolCalls) == 0 {
		b.WriteString(" ")
		b.WriteString(excerpt(m.Content, 0))
	}
	return b.String()
}

func describeCalls(calls []session.ToolCall) string {
	if len(calls) == 0 {
		return "no tool calls"
	}
	var parts []string
	for _, tc := range calls {
		parts = append(parts, fmt.Sprintf("%s(%s)", tc.Name, clip.Runes(string(tc.Args), 60)))
	}
	return strings.Join(parts, ", ")
}

// Change is what one normaliser did over a replay: how many spans it
// replaced, and in which turns.
type Change struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
	Turns []int  `json:"turns"`
}

// Tally adds up the counts Compare returns, turn by turn, for the replay
// report. Safe for concurrent use.
type Tally struct {
	mu     sync.Mutex
	byName map[string]*Change
}

// Add records the counts of one turn's comparison.
func (t *Tally) Add(turn int, counts map[string]int) {
	if len(counts) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byName == nil {
		t.byName = map[string]*Change{}
	}
	for name, n := range counts {
		ch := t.byName[name]
		if ch == nil {
			ch = &Change{Name: name}
			t.byName[name] = ch
		}
		ch.Count += n
		if i, found := slices.BinarySearch(ch.Turns, turn); !found {
			ch.Turns = slices.Insert(ch.Turns, i, turn)
		}
	}
}

// Changes lists what each normaliser changed, by name ([] when nothing).
func (t *Tally) Changes() []Change {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := []Change{}
	for _, ch := range t.byName {
		c := *ch
		c.Turns = append([]int(nil), ch.Turns...)
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Summary is the changes in one line for a human report
// ("date-time 3 (turns 1-3), workspace-path 2 (turn 1)"), "" when none.
func Summary(changes []Change) string {
	var parts []string
	for _, c := range changes {
		parts = append(parts, fmt.Sprintf("%s %d (%s)", c.Name, c.Count, turnList(c.Turns)))
	}
	return strings.Join(parts, ", ")
}

func turnList(turns []int) string {
	if len(turns) == 1 {
		return fmt.Sprintf("turn %d", turns[0])
	}
	var parts []string
	for i := 0; i < len(turns); {
		j := i
		for j+1 < len(turns) && turns[j+1] == turns[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, fmt.Sprint(turns[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", turns[i], turns[j]))
		}
		i = j + 1
	}
	return "turns " + strings.Join(parts, ", ")
}
