package history

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/parquet-go/parquet-go"

	"github.com/agentctl/agentctl/internal/session"
)

// ErrNotSealed is SealedEvents' error for a session the manifest does not
// map to a file.
var ErrNotSealed = errors.New("history: session not sealed")

// sealedBatch is how many rows SealedEvents decodes at a time: a segment
// holds many sessions, and only one session's rows are kept.
const sealedBatch = 256

// SealedEvents hands fn the events the history sealed of session id with
// seq >= from, in seq order, and returns the session's manifest entry and
// the path of the file they came from. It is how a reader shows what a
// damaged log lost but the history kept (`agentctl show` of a log that
// lost its last events): the file is checked against the manifest first
// (FileEntry.Verify), read a batch of rows at a time, and the rows kept
// must be exactly seqs from..LastSeq; anything else is a
// *CorruptFileError, so a reader never mixes a partial copy into a log.
// Only the rows from `from` on are held, to sort them (a segment orders its
// rows by kind first). Times are the history's: to the microsecond.
func (h *History) SealedEvents(id string, from int64, fn func(session.Event) error) (SessionEntry, string, error) {
	m, err := LoadManifest(h.Dir)
	if err != nil {
		return SessionEntry{}, "", err
	}
	e, ok := m.Sessions[id]
	if !ok {
		return SessionEntry{}, "", fmt.Errorf("%w: %s", ErrNotSealed, id)
	}
	p := filepath.Join(h.Dir, filepath.FromSlash(e.File))
	for _, fe := range m.Files {
		if fe.Path == e.File {
			if err := fe.Verify(h.Dir); err != nil {
				return e, p, err
			}
		}
	}
	rows, err := sessionRows(p, id, from)
	if err != nil {
		return e, p, err
	}
	slices.SortFunc(rows, func(a, b Row) int { return int(a.Seq - b.Seq) })
	for i, r := range rows {
		if r.Seq != from+int64(i) {
			return e, p, &CorruptFileError{Path: p, Err: fmt.Errorf("session %s: row seq %d where %d was expected", id, r.Seq, from+int64(i))}
		}
	}
	if from <= e.LastSeq && (len(rows) == 0 || rows[len(rows)-1].Seq != e.LastSeq) {
		return e, p, &CorruptFileError{Path: p, Err: fmt.Errorf("session %s: holds %d rows from seq %d, the manifest sealed it through seq %d", id, len(rows), from, e.LastSeq)}
	}
	for _, r := range rows {
		ev, err := r.Event()
		if err != nil {
			return e, p, &CorruptFileError{Path: p, Err: err}
		}
		if err := fn(ev); err != nil {
			return e, p, err
		}
	}
	return e, p, nil
}

// sessionRows reads the rows of session id with seq >= from from the
// Parquet file at path, a batch at a time.
func sessionRows(path, id string, from int64) (rows []Row, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("history: read %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("history: read %s: %w", path, err)
	}
	defer func() {
		// parquet-go may panic on some malformed input.
		if p := recover(); p != nil {
			err = &CorruptFileError{Path: path, Err: fmt.Errorf("malformed parquet: %v", p)}
		}
	}()
	pf, err := parquet.OpenFile(f, fi.Size())
	if err != nil {
		return nil, &CorruptFileError{Path: path, Err: err}
	}
	rd := parquet.NewGenericReader[Row](pf)
	defer rd.Close()
	batch := make([]Row, sealedBatch)
	for {
		n, err := rd.Read(batch)
		for _, r := range batch[:n] {
			if r.SessionID == id && r.Seq >= from {
				rows = append(rows, r)
			}
		}
		if errors.Is(err, io.EOF) {
			return rows, nil
		}
		if err != nil {
			return nil, &CorruptFileError{Path: path, Err: err}
		}
	}
}
