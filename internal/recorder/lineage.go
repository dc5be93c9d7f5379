package recorder

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"

	"github.com/agentctl/agentctl/internal/session"
)

// MaxLineageDepth bounds every walk of the lineage, up or down: no tree of
// sessions agentctl makes comes near it (subagents nest spec.MaxDepth
// deep, forks of forks are made by hand), so a deeper one is a loop of
// forged headers or a mistake, and the walk stops instead of running on.
const MaxLineageDepth = 64

// Relation is how a session hangs off its parent (see the package doc's
// Lineage section).
type Relation string

// The relations a header can name.
const (
	RelSubagent Relation = "subagent"
	RelFork     Relation = "fork"
	RelReplay   Relation = "replay"
	// RelSideThread: a side conversation of the parent (a client's title
	// or quota call on the same session; session.Route), recorded as a
	// session of its own.
	RelSideThread Relation = "side_thread"
)

// Link is how a session's header says it hangs off its parent; the zero
// Link is a session with no parent.
type Link struct {
	Parent     string
	Relation   Relation
	ParentSeq  int64 // a subagent's: the seq of the parent's task intent
	ForkedFrom int64 // a fork's: the last seq of the parent it copied
}

// Seq is the seq of the parent the link hangs off: what children are
// ordered by.
func (l Link) Seq() int64 {
	if l.Relation == RelFork {
		return l.ForkedFrom
	}
	if l.Relation == RelSubagent {
		return l.ParentSeq
	}
	return 0
}

// HeaderLink classifies the header of session id. A fork copies its
// parent's header, a subagent's parent_seq included, so forked_from is
// looked at first: a fork of a subagent is a fork.
func HeaderLink(id string, hdr session.Event) Link {
	if hdr.ParentSessionID == "" || hdr.ParentSessionID == id {
		return Link{}
	}
	l := Link{Parent: hdr.ParentSessionID, ParentSeq: hdr.ParentSeq, ForkedFrom: hdr.ForkedFrom}
	of, n := session.SideThreadOf(hdr)
	switch {
	case of != "" && id == session.SideThreadID(of, n):
		l.Relation = RelSideThread
	case hdr.ForkedFrom > 0:
		l.Relation = RelFork
	case session.ReplayOf(hdr) != "":
		l.Relation = RelReplay
	default:
		l.Relation = RelSubagent // parent_seq 0: an imported one, whose source names no call
	}
	return l
}

// Header reads the first record of session id's log, its session_started
// header, and nothing after it: what the lineage of a home costs is a
// record a session, however long the logs.
func (s Store) Header(id string) (session.Event, error) {
	if !validID(id) {
		return session.Event{}, fmt.Errorf("recorder: read header of %q: invalid id", id)
	}
	path := s.LogPath(id)
	f, size, err := openSized(path)
	if err != nil {
		return session.Event{}, s.notStarted(id, fmt.Errorf("recorder: read header of %s: %w", id, err))
	}
	defer f.close()
	rd := &Reader{r: bufio.NewReaderSize(io.LimitReader(f, size), 4<<10), path: path}
	ev, err := rd.Next()
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, ErrTornTail):
		return session.Event{}, fmt.Errorf("recorder: read header of %s: the log holds no whole event", id)
	case err != nil:
		return session.Event{}, err
	case ev.Kind != session.KindSessionStarted:
		return session.Event{}, fmt.Errorf("recorder: read header of %s: the first event is %s, not session_started", id, ev.Kind)
	}
	return ev, nil
}

// Ancestors walks up from session id by its parents' headers, one header
// read a step, never the home: a running session asks it on every task
// call. It returns the links followed, the first being id's own; the walk
// stops at a session with no parent or whose link is not of rels (any
// when none are given). A header that cannot be read, a loop or a chain
// deeper than MaxLineageDepth is an error, with the links up to it.
// Headers are believed: confirming a subagent needs its parent's log
// (Lineage.Subagents).
func (s Store) Ancestors(id string, rels ...Relation) ([]Link, error) {
	var out []Link
	seen := map[string]bool{id: true}
	for cur := id; ; {
		hdr, err := s.Header(cur)
		if err != nil {
			return out, fmt.Errorf("recorder: ancestors of %s: %w", id, err)
		}
		l := HeaderLink(cur, hdr)
		if l.Parent == "" || (len(rels) > 0 && !slices.Contains(rels, l.Relation)) {
			return out, nil
		}
		if seen[l.Parent] {
			return out, fmt.Errorf("recorder: ancestors of %s: %s names %s as its parent, which is below it: the headers loop", id, cur, l.Parent)
		}
		if len(out) == MaxLineageDepth {
			return out, fmt.Errorf("recorder: ancestors of %s: more than %d generations up", id, MaxLineageDepth)
		}
		out = append(out, l)
		seen[l.Parent] = true
		cur = l.Parent
	}
}

// Skip is a session a lineage walk left out, and why, so that a caller can
// warn: an unreadable header, a subagent its parent's log does not
// confirm, a subagent a parent's log started that has no log, a loop, a
// tree too deep.
type Skip struct {
	ID     string // the session left out
	Parent string // the session it hangs off, or claims to ("" unknown)
	Reason string
}

func (s Skip) String() string { return s.ID + ": " + s.Reason }

// Lineage is the index of who is a child of whom in a home, built from the
// sessions' headers only; see the package doc's Lineage section for the
// rule. A subagent is confirmed from its parent's log the first time the
// parent's children are asked for, so building costs a header a session
// and a query the logs of the sessions it walks. It is not safe for
// concurrent use.
type Lineage struct {
	store   Store
	headers map[string]session.Event
	bad     map[string]error    // sessions whose header cannot be read
	links   map[string]Link     // sessions with a parent
	claims  map[string][]string // parent -> sessions whose header names it, in order
	checked map[string][]string // parent -> its children, once its log was read
	skipped map[string][]Skip   // parent -> what its check left out
	skips   []Skip
}

// Lineage reads the header of every session of s.
func (s Store) Lineage() (*Lineage, error) {
	ids, err := s.IDs()
	if err != nil {
		return nil, err
	}
	l := &Lineage{store: s, headers: map[string]session.Event{}, bad: map[string]error{}, links: map[string]Link{},
		claims: map[string][]string{}, checked: map[string][]string{}, skipped: map[string][]Skip{}}
	for _, id := range ids {
		hdr, err := s.Header(id)
		if err != nil {
			l.bad[id] = err
			l.skips = append(l.skips, Skip{ID: id, Reason: err.Error()})
			continue
		}
		l.headers[id] = hdr
		if ln := HeaderLink(id, hdr); ln.Parent != "" {
			l.links[id] = ln
			l.claims[ln.Parent] = append(l.claims[ln.Parent], id)
		}
	}
	for _, ks := range l.claims {
		sort.SliceStable(ks, func(i, j int) bool {
			a, b := l.links[ks[i]].Seq(), l.links[ks[j]].Seq()
			if a != b {
				return a < b
			}
			return ks[i] < ks[j]
		})
	}
	return l, nil
}

// Header returns session id's header; ok is false when it has none that
// could be read.
func (l *Lineage) Header(id string) (session.Event, bool) {
	h, ok := l.headers[id]
	return h, ok
}

// LinkOf is how session id's header says it hangs off its parent, as
// claimed: Children says whether the parent confirms a subagent.
func (l *Lineage) LinkOf(id string) Link { return l.links[id] }

// Skips returns every session left out so far: the unreadable headers,
// and what the checks of the parents asked about found.
func (l *Lineage) Skips() []Skip { return slices.Clone(l.skips) }

// Children returns the direct children of session id: its forks and
// replays, and the subagents its log confirms, ordered by the seq of id
// they hang off (task intent, fork point; 0 for a replay), then by id.
func (l *Lineage) Children(id string) []string {
	if ks, ok := l.checked[id]; ok {
		return slices.Clone(ks)
	}
	ks := l.check(id)
	l.checked[id] = ks
	return slices.Clone(ks)
}

// Subagents returns the subagents of session id its log confirms, in
// Children's order.
func (l *Lineage) Subagents(id string) []string {
	var out []string
	for _, k := range l.Children(id) {
		if l.links[k].Relation == RelSubagent {
			out = append(out, k)
		}
	}
	return out
}

// Descendants returns the sessions below id, depth first in Children's
// order (the order of show --tree), each once, at most MaxLineageDepth
// generations down, with what the walk left out.
func (l *Lineage) Descendants(id string) ([]string, []Skip) {
	seen := map[string]bool{id: true}
	var out []string
	var skips []Skip
	var walk func(p string, depth int)
	walk = func(p string, depth int) {
		kids := l.Children(p)
		skips = append(skips, l.skipped[p]...)
		for _, k := range kids {
			switch {
			case seen[k]:
				skips = append(skips, Skip{ID: k, Parent: p, Reason: fmt.Sprintf("its header names %s as its parent, which is below it: the headers loop", p)})
			case depth+1 > MaxLineageDepth:
				skips = append(skips, Skip{ID: k, Parent: p, Reason: fmt.Sprintf("more than %d generations below %s", MaxLineageDepth, id)})
			default:
				seen[k] = true
				out = append(out, k)
				walk(k, depth+1)
			}
		}
	}
	walk(id, 0)
	return out, skips
}

// check finds the children of parent: every fork and replay whose header
// names it, and every subagent whose header names it that its log
// confirms. It records a Skip for a claimed subagent the log does not
// confirm, and for a subagent the log started whose own log is missing
// or unreadable (except in the part a fork copied from its parent, which
// is the parent's to answer for).
func (l *Lineage) check(parent string) []string {
	claims := l.claims[parent]
	type start struct {
		seq    int64
		callID string
	}
	started := map[string]start{}
	var order []string
	intents := map[int64]string{} // seq -> call id
	var readErr error
	if _, ok := l.headers[parent]; ok {
		_, _, readErr = l.store.Stream(parent, func(e session.Event) {
			switch e.Kind {
			case session.KindToolIntent:
				intents[e.Seq] = e.CallID
			case session.KindSubagentStarted:
				if _, dup := started[e.ChildSessionID]; !dup && e.ChildSessionID != "" {
					started[e.ChildSessionID] = start{e.Seq, e.CallID}
					order = append(order, e.ChildSessionID)
				}
			}
		})
	} else if err, bad := l.bad[parent]; bad {
		readErr = err
	} else {
		readErr = fmt.Errorf("it has no log")
	}
	skip := func(id, format string, args ...any) {
		s := Skip{ID: id, Parent: parent, Reason: fmt.Sprintf(format, args...)}
		l.skipped[parent] = append(l.skipped[parent], s)
		l.skips = append(l.skips, s)
	}
	var out []string
	for _, k := range claims {
		ln := l.links[k]
		if ln.Relation != RelSubagent {
			out = append(out, k)
			continue
		}
		st, ok := started[k]
		at := ""
		if ln.ParentSeq > 0 {
			at = fmt.Sprintf(" (task call at seq %d)", ln.ParentSeq)
		}
		switch {
		case !ok && readErr != nil:
			skip(k, "its header names %s as its parent%s, whose log cannot confirm it: %v", parent, at, readErr)
		case !ok:
			skip(k, "its header names %s as its parent%s, whose log starts no subagent %s", parent, at, k)
		case ln.ParentSeq > 0 && !hasIntent(intents, ln.ParentSeq):
			skip(k, "its header names %s's task call at seq %d, where %s's log holds no tool intent", parent, ln.ParentSeq, parent)
		case ln.ParentSeq > 0 && st.callID != "" && intents[ln.ParentSeq] != st.callID:
			skip(k, "its header names %s's task call at seq %d, but %s's log started it for call %q (seq %d)", parent, ln.ParentSeq, parent, st.callID, st.seq)
		default:
			out = append(out, k)
		}
	}
	copied := int64(0)
	if ln := l.links[parent]; ln.Relation == RelFork {
		copied = ln.ForkedFrom
	}
	for _, c := range order {
		st := started[c]
		if st.seq <= copied {
			continue
		}
		if _, ok := l.headers[c]; ok {
			continue // its header decides whose child it is
		}
		if err, bad := l.bad[c]; bad {
			skip(c, "%s's log starts it at seq %d, but its log cannot be read: %v", parent, st.seq, err)
		} else {
			skip(c, "%s's log starts it at seq %d, but it has no log", parent, st.seq)
		}
	}
	return out
}

func hasIntent(intents map[int64]string, seq int64) bool {
	_, ok := intents[seq]
	return ok
}
