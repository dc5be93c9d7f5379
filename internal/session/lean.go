package session

import (
	"cmp"
	"encoding/binary"
	"errors"
	"iter"
	"slices"
	"time"
)

// NewLeanState returns an empty fold that keeps each settled call packed
// into a few dozen bytes instead of a Call of a few hundred: a reader that
// folds a whole log once to print it (a bundle's last_state.json and
// tool_calls.csv) holds a session of 238,095 calls in ~40 MB, not ~90.
//
// A call is settled when an event ended it and it waits on nothing (not
// pending, not needs_human). A later event naming it unpacks it first, so
// the lean fold's figures, lists and calls are the full fold's, exactly
// (TestLeanFoldIsTheFold). What differs is Calls, which holds nil for a
// packed call: read the calls through DispatchedCalls, Call and the lists.
// A lean State is not serialized (a checkpoint holds a full one).
func NewLeanState() *State { return &State{lean: true} }

// settled reports whether a lean fold may pack c: nothing it still waits
// on is listed from it.
func settled(c *Call) bool {
	return c.Done() && !c.Pending() && !c.AwaitingApproval() && !c.NeedsHuman
}

// pack packs the call at i if it is settled (lean folds only).
func (s *State) pack(i int) {
	c := s.Calls[i]
	if !s.lean || c == nil || !settled(c) {
		return
	}
	for len(s.packAt) < len(s.Calls) {
		s.packAt = append(s.packAt, packRef{chunk: -1})
	}
	// Chunks of packChunk bytes, not one growing slice: a slice doubled
	// holds the old and the new copy at once, and a third of it unused.
	last := len(s.packed) - 1
	if last < 0 || len(s.packed[last])+packedSize(c) > cap(s.packed[last]) {
		s.packed = append(s.packed, make([]byte, 0, max(packChunk, packedSize(c))))
		last++
	}
	s.packAt[i] = packRef{chunk: int32(last), off: int32(len(s.packed[last]))}
	s.packed[last] = packCall(s.packed[last], c)
	s.Calls[i] = nil
}

// packChunk is the size of the chunks a lean fold packs calls into.
const packChunk = 1 << 20

// packRef is where a packed call starts: chunk -1 for a call not packed.
type packRef struct{ chunk, off int32 }

// packedSize bounds the bytes packCall appends for c.
func packedSize(c *Call) int {
	return len(c.ID) + len(c.Tool) + len(c.Args) + len(c.IdempotencyKey) + len(c.Status) + len(c.Error) +
		len(c.Reconciled) + len(c.Granted) + 8*binary.MaxVarintLen64 + 16*binary.MaxVarintLen64
}

// unpacked returns the call at i, unpacking a packed one into a new Call
// that is not stored.
func (s *State) unpacked(i int) *Call {
	if c := s.Calls[i]; c != nil {
		return c
	}
	at := s.packAt[i]
	c, err := unpackCall(s.packed[at.chunk][at.off:])
	if err != nil {
		// Only pack wrote these bytes: a failure is a bug here.
		panic("session: unpack call: " + err.Error())
	}
	return c
}

// restore unpacks the call at i back into Calls, for an event that names
// it. Its packed bytes stay behind: calls named again once settled are
// few.
func (s *State) restore(i int) *Call {
	if s.Calls[i] == nil {
		s.Calls[i] = s.unpacked(i)
		s.packAt[i] = packRef{chunk: -1}
	}
	return s.Calls[i]
}

// DispatchedCalls yields the calls with a row in the tool_calls view, by
// FirstSeq (see Dispatched). A lean fold's packed calls are unpacked one
// at a time, so a reader writing them out holds one.
func (s *State) DispatchedCalls() iter.Seq[*Call] {
	type at struct {
		first int64
		i     int
	}
	var order []at
	for i := range s.Calls {
		if c := s.unpacked(i); c.Dispatched() {
			order = append(order, at{c.FirstSeq(), i})
		}
	}
	slices.SortStableFunc(order, func(a, b at) int { return cmp.Compare(a.first, b.first) })
	return func(yield func(*Call) bool) {
		for _, o := range order {
			if !yield(s.unpacked(o.i)) {
				return
			}
		}
	}
}

// packCall appends c to b: every field, varints and length-prefixed
// strings, so unpackCall gives c back exactly.
func packCall(b []byte, c *Call) []byte {
	str := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	num := func(n int64) { b = binary.AppendVarint(b, n) }
	flag := func(f bool) {
		if f {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
	}
	str(c.ID)
	str(c.Tool)
	if c.Args == nil {
		flag(false)
	} else {
		flag(true)
		str(string(c.Args))
	}
	num(c.RequestSeq)
	num(int64(c.Index))
	num(int64(c.Turn))
	ts, _ := c.TS.MarshalBinary() // fails only for offsets no zone has
	str(string(ts))
	num(c.IntentSeq)
	str(c.IdempotencyKey)
	num(c.ResultSeq)
	str(c.Status)
	str(c.Error)
	num(c.LatencyMS)
	num(c.ReconciledSeq)
	str(c.Reconciled)
	flag(c.NeedsHuman)
	num(c.ApprovalSeq)
	num(c.DecisionSeq)
	str(c.Granted)
	flag(c.Denied)
	num(c.EndSeq)
	num(c.FirstResultSeq)
	num(int64(c.Outcomes))
	return b
}

var errPacked = errors.New("short packed call")

// unpackCall reads a call packCall wrote at the start of b.
func unpackCall(b []byte) (*Call, error) {
	var err error
	str := func() string {
		n, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < n {
			err = errPacked
			return ""
		}
		s := string(b[k : k+int(n)])
		b = b[k+int(n):]
		return s
	}
	num := func() int64 {
		n, k := binary.Varint(b)
		if k <= 0 {
			err = errPacked
			return 0
		}
		b = b[k:]
		return n
	}
	flag := func() bool {
		if len(b) == 0 {
			err = errPacked
			return false
		}
		f := b[0] == 1
		b = b[1:]
		return f
	}
	c := &Call{ID: str(), Tool: str()}
	if flag() {
		c.Args = []byte(str())
	}
	c.RequestSeq, c.Index, c.Turn = num(), int(num()), int(num())
	var ts time.Time
	if tb := str(); err == nil {
		err = ts.UnmarshalBinary([]byte(tb))
	}
	c.TS = ts
	c.IntentSeq, c.IdempotencyKey = num(), str()
	c.ResultSeq, c.Status, c.Error, c.LatencyMS = num(), str(), str(), num()
	c.ReconciledSeq, c.Reconciled, c.NeedsHuman = num(), str(), flag()
	c.ApprovalSeq, c.DecisionSeq, c.Granted, c.Denied = num(), num(), str(), flag()
	c.EndSeq, c.FirstResultSeq, c.Outcomes = num(), num(), int(num())
	return c, err
}
