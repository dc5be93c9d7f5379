package history_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/history"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/vfs"
)

// toolRows makes n rows of tool results, spread over sessions sessions.
func toolRows(t *testing.T, n, sessions int) []history.Row {
	t.Helper()
	ts := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	rows := make([]history.Row, n)
	for i := range rows {
		e := session.Event{Seq: int64(i + 1), TS: ts.Add(time.Duration(i) * time.Millisecond), Kind: session.KindToolResult,
			CallID: fmt.Sprint("c", i), Tool: "read_file", Status: session.ResultOK, Output: fmt.Sprint("line ", i%97, " of a file\n")}
		var err error
		if rows[i], err = history.FromEvent(fmt.Sprint("s", i%sessions), e); err != nil {
			t.Fatal(err)
		}
	}
	return rows
}

// WriteRowsEachFS with batches of a multiple of 64 rows writes the bytes
// one WriteRows of every row writes, across row groups (a bundle's
// events.parquet is written so and must not change).
func TestWriteRowsEachIsWriteRows(t *testing.T) {
	n := history.RowGroupRows + 3000 // two row groups, the last batch short
	rows := toolRows(t, n, 1)
	dir := t.TempDir()
	whole := filepath.Join(dir, "whole.parquet")
	if _, err := history.WriteRows(whole, rows, true); err != nil {
		t.Fatal(err)
	}
	for _, batch := range []int{64, 4096} {
		each := filepath.Join(dir, fmt.Sprint(batch, ".parquet"))
		_, err := history.WriteRowsEachFS(vfs.OS, each, func(write func([]history.Row) error) error {
			for i := 0; i < len(rows); i += batch {
				if err := write(rows[i:min(i+batch, len(rows))]); err != nil {
					return err
				}
			}
			return nil
		}, true)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := os.ReadFile(whole)
		b, _ := os.ReadFile(each)
		if !bytes.Equal(a, b) {
			t.Errorf("batches of %d: %d bytes, one write: %d, and they differ", batch, len(b), len(a))
		}
	}
}

// ReadRowsEach gives every row ReadRows reads, in order, a batch at a
// time, across row groups; a damaged file is a CorruptFileError, and the
// callback's own error comes back as it is.
func TestReadRowsEachIsReadRows(t *testing.T) {
	n := history.RowGroupRows + 5000
	rows := toolRows(t, n, 7)
	p := filepath.Join(t.TempDir(), "rows.parquet")
	if _, err := history.WriteRows(p, rows, true); err != nil {
		t.Fatal(err)
	}
	want, err := history.ReadRows(p)
	if err != nil {
		t.Fatal(err)
	}
	var got []history.Row
	batches := 0
	if err := history.ReadRowsEach(p, func(b []history.Row) error {
		batches++
		for _, r := range b {
			r.SessionID = strings.Clone(r.SessionID)
			got = append(got, r)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if batches < 2 || !reflect.DeepEqual(got, want) {
		t.Fatalf("%d batches, %d rows, equal %v; want %d rows as ReadRows reads them", batches, len(got), reflect.DeepEqual(got, want), len(want))
	}
	stop := errors.New("stop")
	if err := history.ReadRowsEach(p, func([]history.Row) error { return stop }); err != stop {
		t.Errorf("the callback's error came back as %v", err)
	}
	b, _ := os.ReadFile(p)
	bad := append([]byte(nil), b[:len(b)/2]...)
	if err := os.WriteFile(p, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := history.ReadRowsEach(p, func([]history.Row) error { return nil }); !errors.Is(err, history.ErrCorruptFile) {
		t.Errorf("a cut file: %v, want ErrCorruptFile", err)
	}
}
