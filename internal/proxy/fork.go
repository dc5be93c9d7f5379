package proxy

import (
	"github.com/agentctl/agentctl/internal/replaymatch"

	"github.com/agentctl/agentctl/internal/session"
)

// isTurn reports whether e is a recorded model call a Replay serves as a
// turn: every model_call but a compaction's (agentctl's own summariser,
// which an external agent never asks for). NewReplay and TurnsThrough
// count turns through it, so a fork's --from and --until agree.
func isTurn(e session.Event) bool { return replaymatch.IsTurn(e) }

// TurnsThrough is the number of recorded turns at or before seq: the
// ReplayConfig.Until of a fork at seq (replay fork --from N on an external
// agent's session).
func TurnsThrough(evs []session.Event, seq int64) int {
	n := 0
	for _, e := range evs {
		if e.Seq > seq {
			break
		}
		if isTurn(e) {
			n++
		}
	}
	return n
}

// AfterTurn is b with its turns counted after the first skip calls of a
// conversation: call skip+k is answered with b's turn k. The live part of
// a fork onto another scripted model starts that model's script at its
// first turn so, as agentctl's own fork does. Only a Scripted backend
// counts turns; any other (Upstream) is returned as it is.
func AfterTurn(b Backend, skip int) Backend {
	s, ok := b.(*Scripted)
	if !ok || skip <= 0 {
		return b
	}
	c := *s
	c.skip += skip
	return &c
}
