package recorder

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func FuzzReader(f *testing.F) {
	b, ends := encodeLog(f, sampleEvents(3))
	f.Add(b)
	f.Add(b[:ends[2]+5])
	f.Add(fileHeader())
	f.Add([]byte{})
	f.Add([]byte("AGCT"))
	flip := bytes.Clone(b)
	flip[ends[1]+FrameHeaderSize+2] ^= 1
	f.Add(flip)
	flip = bytes.Clone(b)
	flip[ends[2]+FrameHeaderSize+2] ^= 1
	f.Add(flip)
	f.Add(append(bytes.Clone(b), make([]byte, 64)...))
	long := bytes.Clone(b)
	binary.LittleEndian.PutUint32(long[ends[1]:], MaxRecordSize+7)
	f.Add(long)
	// The hand-checked session logs of fixtures/ (one with a torn tail).
	logs, _ := filepath.Glob(filepath.Join("..", "..", "fixtures", "home", "sessions", "*", LogFile))
	if len(logs) == 0 {
		f.Fatal("no fixture logs to seed from")
	}
	for _, p := range logs {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}

	f.Fuzz(func(t *testing.T, data []byte) {
		evs, tail, err := readAll(bytes.NewReader(data), "", int64(len(data)))

		// ReadFile's in-memory path (frames, session.Decoder) reads the
		// same events and ends the same way as the streaming Reader.
		for _, shared := range []bool{false, true} {
			mem, memTail, memErr := readBytes(bytes.Clone(data), "", int64(len(data)), shared)
			if fmt.Sprint(memErr) != fmt.Sprint(err) || memTail != tail || !reflect.DeepEqual(mem, evs) {
				t.Fatalf("readBytes(shared %v) = %d events, %+v, %v; readAll = %d events, %+v, %v", shared, len(mem), memTail, memErr, len(evs), tail, err)
			}
		}
		if tail.GoodSize < 0 || tail.GoodSize > int64(len(data)) || tail.FileSize != int64(len(data)) {
			t.Fatalf("tail %+v for %d bytes", tail, len(data))
		}
		for i, ev := range evs {
			if ev.Seq != int64(i+1) {
				t.Fatalf("event %d has seq %d", i, ev.Seq)
			}
		}
		if err == nil && !tail.Torn && tail.GoodSize != int64(len(data)) {
			t.Fatalf("clean end at %d of %d bytes", tail.GoodSize, len(data))
		}
		var ce *CorruptError
		if errors.As(err, &ce) && (ce.Offset < 0 || ce.Offset > int64(len(data))) {
			t.Fatalf("corruption at offset %d of %d bytes", ce.Offset, len(data))
		}

		// The Reader never yields an event after an error, and its error is final.
		r := NewReader(bytes.NewReader(data))
		n := 0
		var first error
		for range len(evs) + 3 {
			_, err := r.Next()
			if first == nil && err == nil {
				n++
				continue
			}
			if first == nil {
				first = err
				continue
			}
			if err == nil || err.Error() != first.Error() {
				t.Fatalf("Next after %v = %v", first, err)
			}
		}
		if n != len(evs) {
			t.Fatalf("Reader yielded %d events, readAll %d", n, len(evs))
		}

		// The good prefix reads cleanly with the same events.
		if err == nil && tail.GoodSize >= int64(FileHeaderSize) {
			evs2, tail2, err2 := readAll(bytes.NewReader(data[:tail.GoodSize]), "", tail.GoodSize)
			if err2 != nil || tail2.Torn || len(evs2) != len(evs) {
				t.Fatalf("good prefix read = %d events, %+v, %v; want %d clean", len(evs2), tail2, err2, len(evs))
			}
		}
		if err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupportedVersion) && !errors.Is(err, io.EOF) {
			t.Fatalf("unexpected error %v", err)
		}
	})
}
