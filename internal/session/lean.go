package session

import (
	"cmp"
	"encoding/binary"
	"errors"
	"hash/maphash"
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
func NewLeanState() *State {
	return &State{lean: true, seed: maphash.MakeSeed(), byHash: map[uint64]int32{}, collide: map[string]int{}}
}

// leanIndex records i as the latest call with id: under id's hash, unless
// another id holds that hash (then in collide). A map of ids would cost
// ~56 bytes a call, this one ~20.
func (s *State) leanIndex(id string, i int) {
	if _, ok := s.collide[id]; ok {
		s.collide[id] = i
		return
	}
	h := idHash(s.seed, id)
	if j, ok := s.byHash[h]; ok && !s.idIs(int(j), id) {
		s.collide[id] = i
		return
	}
	s.byHash[h] = int32(i)
}

// idHash is the hash a lean fold indexes a call id by (a variable so that
// a test can make ids collide).
var idHash = maphash.String

// leanLookup is index for a lean fold.
func (s *State) leanLookup(id string) (int, bool) {
	if i, ok := s.collide[id]; ok {
		return i, true
	}
	if j, ok := s.byHash[idHash(s.seed, id)]; ok && s.idIs(int(j), id) {
		return int(j), true
	}
	return 0, false
}

// idIs reports whether the call at i has id, reading a packed one's id
// in place.
func (s *State) idIs(i int, id string) bool {
	if c := s.Calls[i]; c != nil {
		return c.ID == id
	}
	at := s.packAt[i]
	b := s.packed[at.chunk][at.off:]
	n, k := binary.Uvarint(b)
	return k > 0 && n == uint64(len(id)) && string(b[k:k+int(n)]) == id
}

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
	s.packed[last] = s.packCall(s.packed[last], c)
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
	c, err := s.unpackCall(s.packed[at.chunk][at.off:])
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
// at a time into the same Call, valid until the next: a reader writing
// them out holds one.
func (s *State) DispatchedCalls() iter.Seq[*Call] { return s.dispatched(true) }

// dispatched is DispatchedCalls; without reuse, each packed call is
// unpacked into a Call of its own (for Dispatched).
func (s *State) dispatched(reuse bool) iter.Seq[*Call] {
	type at struct {
		first int64
		i     int
	}
	order := make([]at, 0, len(s.Calls))
	for i, c := range s.Calls {
		if c == nil { // its seqs, read in place
			var p Call
			a := s.packAt[i]
			if err := s.unpackInto(&p, s.packed[a.chunk][a.off:], false); err != nil {
				panic("session: unpack call: " + err.Error())
			}
			c = &p
		}
		if c.Dispatched() {
			order = append(order, at{c.FirstSeq(), i})
		}
	}
	slices.SortStableFunc(order, func(a, b at) int { return cmp.Compare(a.first, b.first) })
	return func(yield func(*Call) bool) {
		var into Call
		for _, o := range order {
			c := s.Calls[o.i]
			if c == nil && reuse {
				a := s.packAt[o.i]
				if err := s.unpackInto(&into, s.packed[a.chunk][a.off:], true); err != nil {
					panic("session: unpack call: " + err.Error())
				}
				c = &into
			} else if c == nil {
				c = s.unpacked(o.i)
			}
			if !yield(c) {
				return
			}
		}
	}
}

// packCall appends c to b: every field, as varints and length-prefixed
// strings, so unpackCall gives c back exactly. Seqs are written relative
// to the request's (a call's events are near it), the tool and the
// outcome strings as their index in s.names (a session has few), a UTC
// time as seconds and nanoseconds (else its MarshalBinary form): ~75 bytes
// for a call of a real session.
func (s *State) packCall(b []byte, c *Call) []byte {
	str := func(v string) {
		b = binary.AppendUvarint(b, uint64(len(v)))
		b = append(b, v...)
	}
	num := func(n int64) { b = binary.AppendVarint(b, n) }
	name := func(v string) {
		i, ok := s.nameAt[v]
		if !ok {
			if s.nameAt == nil {
				s.nameAt = map[string]int{}
			}
			i = len(s.names)
			s.names = append(s.names, v)
			s.nameAt[v] = i
		}
		b = binary.AppendUvarint(b, uint64(i))
	}
	seq := func(n int64) { // 0 stays 0: "did not happen"
		if n == 0 {
			b = append(b, 0)
			return
		}
		b = binary.AppendUvarint(b, zigzag(n-c.RequestSeq)+1)
	}
	flag := func(f bool) {
		if f {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
	}
	str(c.ID)
	name(c.Tool)
	if c.Args == nil {
		flag(false)
	} else {
		flag(true)
		str(string(c.Args))
	}
	num(c.RequestSeq)
	num(int64(c.Index))
	num(int64(c.Turn))
	if c.TS.Location() == time.UTC {
		flag(true)
		num(c.TS.Unix())
		num(int64(c.TS.Nanosecond()))
	} else {
		flag(false)
		ts, _ := c.TS.MarshalBinary() // fails only for offsets no zone has
		str(string(ts))
	}
	seq(c.IntentSeq)
	str(c.IdempotencyKey)
	seq(c.ResultSeq)
	name(c.Status)
	str(c.Error)
	num(c.LatencyMS)
	seq(c.ReconciledSeq)
	name(c.Reconciled)
	flag(c.NeedsHuman)
	seq(c.ApprovalSeq)
	seq(c.DecisionSeq)
	name(c.Granted)
	flag(c.Denied)
	seq(c.EndSeq)
	seq(c.FirstResultSeq)
	num(int64(c.Outcomes))
	return b
}

func zigzag(n int64) uint64 { return uint64(n<<1) ^ uint64(n>>63) }

func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

var errPacked = errors.New("short packed call")

// unpackCall reads a call packCall wrote at the start of b.
func (s *State) unpackCall(b []byte) (*Call, error) {
	c := &Call{}
	return c, s.unpackInto(c, b, true)
}

// unpackInto reads into c a call packCall wrote at the start of b; without
// strs, its own strings (id, arguments, error, key) are skipped, not
// copied, for a reader of its seqs.
func (s *State) unpackInto(c *Call, b []byte, strs bool) error {
	var err error
	str := func() string {
		n, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < n {
			err = errPacked
			return ""
		}
		v := ""
		if strs {
			v = string(b[k : k+int(n)])
		}
		b = b[k+int(n):]
		return v
	}
	unum := func() uint64 {
		n, k := binary.Uvarint(b)
		if k <= 0 {
			err = errPacked
			return 0
		}
		b = b[k:]
		return n
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
	name := func() string {
		i := unum()
		if i >= uint64(len(s.names)) {
			err = errPacked
			return ""
		}
		return s.names[i]
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
	c.ID, c.Tool, c.Args = str(), name(), nil
	if flag() {
		c.Args = []byte(str())
	}
	c.RequestSeq, c.Index, c.Turn = num(), int(num()), int(num())
	seq := func() int64 {
		u := unum()
		if u == 0 {
			return 0
		}
		return unzigzag(u-1) + c.RequestSeq
	}
	if flag() {
		sec, ns := num(), num()
		c.TS = time.Unix(sec, ns).UTC()
	} else if tb := str(); err == nil && strs {
		err = c.TS.UnmarshalBinary([]byte(tb))
	}
	c.IntentSeq, c.IdempotencyKey = seq(), str()
	c.ResultSeq, c.Status, c.Error, c.LatencyMS = seq(), name(), str(), num()
	c.ReconciledSeq, c.Reconciled, c.NeedsHuman = seq(), name(), flag()
	c.ApprovalSeq, c.DecisionSeq, c.Granted, c.Denied = seq(), seq(), name(), flag()
	c.EndSeq, c.FirstResultSeq, c.Outcomes = seq(), seq(), int(num())
	return err
}
