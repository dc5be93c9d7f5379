package otelsession

import (
	"fmt"

	"github.com/agentctl/agentctl/internal/session"
)

// Side threads. A model call that shares neither the system text, nor a
// tool, nor its first message with its session's conversation (an app's
// title or summary call on the same session.id) is a side thread of the
// session, by session.Route, the rule the proxy groups by: a session of
// its own (session.SideThreadID, a header naming its parent), so the
// session's conversation stays one history and no compaction is made up.

// maxSideThreads bounds the side threads of one session looked for on
// disk.
const maxSideThreads = 1000

// sideWrite is what a trace adds to one side thread.
type sideWrite struct {
	t  *sess
	ms []mapped
}

func addSide(sides []*sideWrite, t *sess, m mapped) []*sideWrite {
	for _, sw := range sides {
		if sw.t == t {
			sw.ms = append(sw.ms, m)
			return sides
		}
	}
	return append(sides, &sideWrite{t: t, ms: []mapped{m}})
}

// threadFor returns the session a model call of session s goes to: s, or
// one of its side threads (a new one when the call starts one).
func (in *Ingester) threadFor(s *sess, c call) (*sess, error) {
	if !c.hasInput || len(s.history) == 0 || s.sideOf != "" {
		return s, nil
	}
	if err := in.readSides(s); err != nil {
		return nil, err
	}
	ts := make([]session.Thread, 0, 1+len(s.sides))
	ts = append(ts, session.Thread{System: s.system, Tools: s.toolNames, History: s.history})
	for _, t := range s.sides {
		ts = append(ts, session.Thread{System: t.system, Tools: t.toolNames, History: t.history})
	}
	var t *sess
	switch i := session.Route(ts, session.Request{System: c.system, Tools: c.tools, Messages: c.input, Compacted: c.compacted}); i {
	case 0:
		return s, nil
	case session.NewSideThread:
		if len(s.sides) >= maxSideThreads {
			return s, nil
		}
		n := len(s.sides) + 1
		t = newSess(session.SideThreadID(s.id, n), "")
		t.sideOf, t.sideN, t.origin = s.id, n, s.origin
		s.sides = append(s.sides, t)
	default:
		t = s.sides[i-1]
	}
	return t, nil
}

// readSides finds the side threads of s that an earlier run (or this one,
// before s was evicted) wrote, once, and counts the spans they hold as
// the session's. A side thread (or a session with no history yet: a new
// one has none on disk) has none.
func (in *Ingester) readSides(s *sess) error {
	if s.sidesRead || s.sideOf != "" || !s.onDisk {
		return nil
	}
	s.sidesRead = true
	for n := len(s.sides) + 1; n <= maxSideThreads; n++ {
		id := session.SideThreadID(s.id, n)
		t := in.sessions[id]
		if t == nil {
			var err error
			if t, err = in.load(id); err != nil {
				return err
			}
		}
		if t == nil {
			return nil
		}
		if t.sideOf != s.id || t.sideN != n {
			return fmt.Errorf("otelsession: session %s is named as side thread %d of %s, but its header says otherwise; move it aside", id, n, s.id)
		}
		// Its spans are the session's: one sent again adds nothing.
		for k := range t.spans {
			s.spans[k] = true
		}
		for k := range t.before {
			s.before[k] = true
		}
		s.sides = append(s.sides, t)
	}
	return nil
}

// writeSide maps and writes what trace pt adds to a side thread.
func (in *Ingester) writeSide(sw *sideWrite, pt *pendingTrace) error {
	t := sw.t
	var evs []session.Event
	for _, m := range sw.ms {
		evs = append(evs, t.chat(m.sp, m.c)...)
	}
	for i := range evs {
		evs[i] = fit(evs[i])
	}
	if in.sessions[t.id] != t {
		// New, or evicted since: live (again), so Close closes its log.
		in.live(t)
	}
	if err := in.open(t, pt, sw.ms); err != nil {
		return err
	}
	if _, err := t.w.Append(evs...); err != nil {
		in.forget(t)
		return fmt.Errorf("otelsession: write side thread %s: %w", t.id, err)
	}
	for _, m := range sw.ms {
		t.spans[m.sp.TraceID+"/"+m.sp.SpanID] = true
	}
	t.used, t.usedAt = in.pass, in.opts.Clock()
	in.touched[t.id] = true
	return nil
}
