package replaymatch

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrNoContent is the error of a --strict replay of a session that
// recorded no content: there is nothing to compare byte for byte.
var ErrNoContent = errors.New("replaymatch: the session recorded no content")

// Matcher checks each replayed request against its turn of one recording
// and adds up what the normalisers changed. It is what every replay path
// asks. Safe for concurrent use once set up (Recorded before the first
// Check).
type Matcher struct {
	rec      *Recording
	recorded map[int]Request
	tally    Tally
	cache    *textCache

	mu   sync.Mutex
	opts Options
}

// NewMatcher matches against rec. A session that recorded no content
// cannot be replayed strictly: ErrNoContent, with a hint.
func NewMatcher(rec *Recording, opts Options) (*Matcher, error) {
	if opts.Strict && !rec.Captured() {
		return nil, fmt.Errorf("%w (collected with content capture off): --strict has nothing to compare; without --strict the replay compares what it has (turn count, tool names, model)", ErrNoContent)
	}
	if opts.Env.RecordedDir == "" {
		opts.Env.RecordedDir = rec.Dir()
	}
	if opts.Env.Days == nil {
		if first, last := rec.Span(); !first.IsZero() {
			opts.Env.Days = ClockDays(first, last, time.Now())
		}
	}
	return &Matcher{rec: rec, opts: opts, recorded: map[int]Request{}, cache: newTextCache()}, nil
}

// Recorded gives the request turn n was recorded with byte for byte (the
// proxy's request_artifact): the events were made from it, and it holds
// what they keep only once per session (that call's system text, tools
// and model asked for, a history the client rewrote, which the events
// record as a compaction).
func (m *Matcher) Recorded(n int, req Request) { m.recorded[n] = req }

// Turns is the recording's number of turns.
func (m *Matcher) Turns() int { return m.rec.Turns() }

// Captured reports whether the recording holds content (Recording.Captured).
func (m *Matcher) Captured() bool { return m.rec.Captured() }

// Check compares the replayed request of turn n (1-based, within Turns)
// with the recording's; nil when it matches. What the normalisers changed
// is added to Changes.
func (m *Matcher) Check(n int, got Request) *Difference {
	want, ok := m.recorded[n]
	if !ok {
		want = m.rec.Expected(n)
	}
	m.mu.Lock()
	opts := m.opts
	m.mu.Unlock()
	c := newComparer(opts)
	c.cache = m.cache
	d := c.compare(want, got)
	counts := c.counts
	if d != nil {
		d.Turn = n
		return d
	}
	m.tally.Add(n, counts)
	return nil
}

// CheckText compares a text of turn n outside the conversation (the
// metadata, which the replay tolerates a difference in unless --strict)
// with SameText, and adds what the normalisers changed to Changes.
func (m *Matcher) CheckText(n int, want, got string) bool {
	m.mu.Lock()
	opts := m.opts
	m.mu.Unlock()
	c := newComparer(opts)
	c.cache = m.cache
	_, _, ok := c.same(want, got)
	if ok {
		m.tally.Add(n, c.counts)
	}
	return ok
}

// SetReplayDir names the folder the replaying program runs in (Env's
// ReplayDir), when it is known only once the replay has set it up (replay
// run makes a fresh workspace).
func (m *Matcher) SetReplayDir(dir string) {
	m.mu.Lock()
	m.opts.Env.ReplayDir = dir
	m.mu.Unlock()
	m.cache.reset()
}

// Changes lists what each normaliser changed so far, by name.
func (m *Matcher) Changes() []Change { return m.tally.Changes() }
