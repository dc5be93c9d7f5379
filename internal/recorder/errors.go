package recorder

import (
	"errors"
	"fmt"
	"time"
)

// Errors reported by the recorder. Match them with errors.Is.
var (
	// ErrCorrupt marks damage in the middle of a log, which is never
	// repaired automatically. The error is a *CorruptError.
	ErrCorrupt = errors.New("recorder: log corrupt")

	// ErrTornTail means the log ends with an incomplete or damaged final
	// record, as a crash during an append leaves it. OpenWriter cuts it off.
	ErrTornTail = errors.New("recorder: torn tail")

	// ErrUnsupportedVersion means the log was written in a format version
	// this agentctl does not read (a newer agentctl wrote it).
	ErrUnsupportedVersion = errors.New("recorder: unsupported log version")

	// ErrClosed is returned by Append on a closed Writer.
	ErrClosed = errors.New("recorder: writer closed")

	// ErrTooLarge is returned by Append for an event whose JSON exceeds
	// MaxRecordSize. The Writer stays usable.
	ErrTooLarge = errors.New("recorder: record too large")

	// ErrLeaseHeld means another writer holds the session's lease. The error
	// is a *LeaseHeldError naming the holder.
	ErrLeaseHeld = errors.New("recorder: session lease held")

	// ErrNoSession means no session id matches a reference.
	ErrNoSession = errors.New("recorder: no session")

	// ErrAmbiguous means a session id prefix matches several sessions.
	ErrAmbiguous = errors.New("recorder: ambiguous session id")

	// ErrNotStarted means a session folder holds no log: the process that
	// made it stopped (killed, or out of disk) before the log and its
	// header were durable (Create links the log into place only then), so
	// nothing of the session was recorded and none of its tools ran.
	// Store.RemoveNotStarted removes such a folder.
	ErrNotStarted = errors.New("recorder: session never started")
)

// CorruptError reports mid-log corruption: where it is and what is wrong.
// errors.Is(err, ErrCorrupt) holds for it.
type CorruptError struct {
	Path   string // the log file; empty when read from a plain io.Reader
	Offset int64  // byte offset of the damaged frame (or header)
	Reason string // what is wrong, e.g. "checksum mismatch"
}

func (e *CorruptError) Error() string {
	name := e.Path
	if name == "" {
		name = "log"
	}
	return fmt.Sprintf("recorder: read %s: corrupt at offset %d: %s", name, e.Offset, e.Reason)
}

// Is reports whether target is ErrCorrupt.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// ShortLogError reports a log that ends before a seq that something
// outside it recorded as durable (a Witness: the history's manifest, a
// checkpoint). A crash only loses what was never acknowledged, and nothing
// records an event as durable before its fsync, so a log shorter than that
// lost acknowledged records: damage, like mid-log corruption, and never a
// crash to resume from. errors.Is(err, ErrCorrupt) holds for it.
type ShortLogError struct {
	Path    string // the log file
	LastSeq int64  // the last whole event the log holds
	Size    int64  // the log's size in bytes
	Witness Durable
}

func (e *ShortLogError) Error() string {
	was := fmt.Sprintf("through seq %d", e.Witness.Seq)
	if e.Witness.Size > 0 {
		was += fmt.Sprintf(" (%d bytes)", e.Witness.Size)
	}
	return fmt.Sprintf("recorder: read %s: the log ends at seq %d (%d bytes), but %s recorded it durable %s: "+
		"records that were durable are gone from the log, which a crash cannot do, so it is not resumed as one",
		e.Path, e.LastSeq, e.Size, e.Witness.By, was)
}

// Is reports whether target is ErrCorrupt.
func (e *ShortLogError) Is(target error) bool { return target == ErrCorrupt }

// LeaseInfo is the content of a lease file: who holds (or held) it.
type LeaseInfo struct {
	PID        int       `json:"pid"`
	Host       string    `json:"host"`
	AcquiredAt time.Time `json:"acquired_at"`
}

// LeaseHeldError is returned by AcquireLease when another writer holds the
// lease. errors.Is(err, ErrLeaseHeld) holds for it.
type LeaseHeldError struct {
	Dir    string
	Holder LeaseInfo // zero if the holder has not written its name yet
}

func (e *LeaseHeldError) Error() string {
	if e.Holder.PID == 0 {
		return "recorder: session is being written by another process; wait for it to finish or stop it"
	}
	return fmt.Sprintf("recorder: session is being written by pid %d on host %s since %s; wait for it to finish or stop it",
		e.Holder.PID, e.Holder.Host, e.Holder.AcquiredAt.Format(time.RFC3339))
}

// Is reports whether target is ErrLeaseHeld.
func (e *LeaseHeldError) Is(target error) bool { return target == ErrLeaseHeld }
