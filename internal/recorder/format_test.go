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
	"strings"
	"testing"
	"testing/iotest"

	"github.com/agentctl/agentctl/internal/session"
)

func TestRoundTrip(t *testing.T) {
	big := sampleEvents(2)
	big[1].Text = string(bytes.Repeat([]byte("x"), 1<<20))
	unknown, err := session.Decode([]byte(`{"seq":2,"ts":"2025-03-01T12:00:01Z","kind":"from_the_future","extra":{"a":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		evs  []session.Event
	}{
		{"header only", sampleEvents(1)},
		{"three", sampleEvents(3)},
		{"hundred", sampleEvents(100)},
		{"1 MiB text", big},
		{"unknown kind", []session.Event{sampleEvents(1)[0], unknown}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, _ := encodeLog(t, tt.evs)
			readers := map[string]io.Reader{
				"bulk":     bytes.NewReader(b),
				"one byte": iotest.OneByteReader(bytes.NewReader(b)),
				"half":     iotest.HalfReader(bytes.NewReader(b)),
			}
			for rname, r := range readers {
				got, tail, err := readAll(r, "", int64(len(b)))
				if err != nil || tail != (Tail{GoodSize: int64(len(b)), FileSize: int64(len(b))}) {
					t.Fatalf("%s: readAll = tail %+v, err %v, want clean end at %d", rname, tail, err, len(b))
				}
				if len(got) != len(tt.evs) {
					t.Fatalf("%s: readAll returned %d events, want %d", rname, len(got), len(tt.evs))
				}
				for i := range got {
					gb, _ := session.Encode(got[i])
					wb, _ := session.Encode(tt.evs[i])
					if !bytes.Equal(gb, wb) {
						t.Errorf("%s: event %d = %s, want %s", rname, i, gb, wb)
					}
				}
			}
		})
	}
}

// TestReadTruncation cuts a valid 3-record log at every byte offset.
func TestReadTruncation(t *testing.T) {
	b, ends := encodeLog(t, sampleEvents(3))
	hdr, f1, f2, f3 := ends[0], ends[1], ends[2], ends[3]
	tests := []struct {
		name       string
		cut        int64
		wantEvents int
		wantTorn   bool
	}{
		{"empty file", 0, 0, true},
		{"inside magic", 4, 0, true},
		{"inside version", hdr - 1, 0, true},
		{"file header only", hdr, 0, false},
		{"inside frame 1 header", hdr + 4, 0, true},
		{"frame 1 header only", hdr + FrameHeaderSize, 0, true},
		{"inside frame 1 payload", hdr + FrameHeaderSize + 10, 0, true},
		{"one byte short of frame 1", f1 - 1, 0, true},
		{"frame 1", f1, 1, false},
		{"inside frame 2 header", f1 + 1, 1, true},
		{"inside frame 2 payload", f2 - 5, 1, true},
		{"frame 2", f2, 2, false},
		{"inside frame 3", f2 + FrameHeaderSize + 1, 2, true},
		{"one byte short of frame 3", f3 - 1, 2, true},
		{"whole log", f3, 3, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, tail, err := readAll(bytes.NewReader(b[:tt.cut]), "", tt.cut)
			if err != nil || len(got) != tt.wantEvents || tail.Torn != tt.wantTorn {
				t.Errorf("read cut at %d = %d events, torn %v, err %v; want %d events, torn %v, nil error",
					tt.cut, len(got), tail.Torn, err, tt.wantEvents, tt.wantTorn)
			}
		})
	}

	// Every offset: the events whose frame ends at or before the cut; torn
	// unless the cut falls on a boundary; GoodSize the last boundary.
	for cut := int64(0); cut <= int64(len(b)); cut++ {
		wantEvents, good := 0, int64(0)
		for i, end := range ends {
			if end <= cut {
				wantEvents, good = i, end
			}
		}
		wantTorn := cut != good || cut < hdr // an empty file has no header either
		got, tail, err := readAll(bytes.NewReader(b[:cut]), "", cut)
		if err != nil || len(got) != wantEvents || tail.Torn != wantTorn || tail.GoodSize != good || tail.FileSize != cut {
			t.Errorf("read cut at %d = %d events, %+v, err %v; want %d events, torn %v, good size %d",
				cut, len(got), tail, err, wantEvents, wantTorn, good)
		}
	}
}

func TestReadDamage(t *testing.T) {
	b, ends := encodeLog(t, sampleEvents(3))
	hdr, f1, f2 := ends[0], ends[1], ends[2]
	damaged := func(f func(b []byte) []byte) []byte {
		return f(bytes.Clone(b))
	}
	badJSON := func() []byte { // a checksum-valid frame that is not an event
		c := bytes.Clone(b[:f2])
		return appendFrame(c, RecordEvent, []byte(`{"seq":3,`))
	}
	tests := []struct {
		name       string
		data       []byte
		wantEvents int
		wantTorn   bool
		wantOffset int64 // of the CorruptError; -1 for none
	}{
		{"crc flip in frame 2 payload", damaged(func(b []byte) []byte { b[f1+FrameHeaderSize+3] ^= 0x40; return b }), 1, false, f1},
		{"crc field flip in frame 2", damaged(func(b []byte) []byte { b[f1+5] ^= 1; return b }), 1, false, f1},
		{"type 0 in frame 2", damaged(func(b []byte) []byte { b[f1+8] = 0; return b }), 1, false, f1},
		{"length over max in frame 2", damaged(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[f1:], MaxRecordSize+1); return b }), 1, false, f1},
		{"length too long in frame 2", damaged(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[f1:], uint32(len(b))); return b }), 1, false, f1},
		{"crc flip in frame 1", damaged(func(b []byte) []byte { b[hdr+FrameHeaderSize] ^= 1; return b }), 0, false, hdr},
		{"crc flip in frame 3", damaged(func(b []byte) []byte { b[f2+FrameHeaderSize+3] ^= 0x40; return b }), 2, true, -1},
		{"type 0 in frame 3", damaged(func(b []byte) []byte { b[f2+8] = 0; return b }), 2, true, -1},
		{"length over max in frame 3", damaged(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[f2:], MaxRecordSize+1); return b }), 2, true, -1},
		{"frame 3 zeroed", damaged(func(b []byte) []byte { clear(b[f2:]); return b }), 2, true, -1},
		{"zeros after the log", damaged(func(b []byte) []byte { return append(b, make([]byte, 4096)...) }), 3, true, -1},
		{"garbage after the log", damaged(func(b []byte) []byte { return append(b, "\x07garbage that is no frame at all"...) }), 3, true, -1},
		{"zero frame before a valid frame", damaged(func(b []byte) []byte {
			return append(append(bytes.Clone(b[:f1]), make([]byte, FrameHeaderSize)...), b[f1:]...)
		}), 1, false, f1},
		{"undecodable JSON at the end", badJSON(), 2, false, f2},
		{"unknown record type", damaged(func(b []byte) []byte { return appendFrame(b, 7, []byte(`{}`)) }), 3, false, ends[3]},
		{"seq gap", damaged(func(b []byte) []byte { return append(bytes.Clone(b[:f1]), b[f2:]...) }), 1, false, f1},
		{"bad magic", damaged(func(b []byte) []byte { b[0] = 'X'; return b }), 0, false, 0},
		{"not a log", []byte("hello"), 0, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, tt.data)
			readOnly(t, path)
			got, tail, err := ReadFile(path)
			if len(got) != tt.wantEvents || tail.Torn != tt.wantTorn {
				t.Errorf("ReadFile = %d events, torn %v, err %v; want %d events, torn %v", len(got), tail.Torn, err, tt.wantEvents, tt.wantTorn)
			}
			if tail.GoodSize > tail.FileSize || tail.FileSize != int64(len(tt.data)) {
				t.Errorf("ReadFile tail = %+v for a file of %d bytes", tail, len(tt.data))
			}
			var ce *CorruptError
			switch {
			case tt.wantOffset < 0 && err != nil:
				t.Errorf("ReadFile err = %v, want nil", err)
			case tt.wantOffset >= 0 && !errors.As(err, &ce):
				t.Errorf("ReadFile err = %v, want a *CorruptError", err)
			case tt.wantOffset >= 0:
				if !errors.Is(err, ErrCorrupt) || ce.Offset != tt.wantOffset || ce.Path != path {
					t.Errorf("ReadFile err = %#v, want ErrCorrupt at offset %d of %s", ce, tt.wantOffset, path)
				}
			}
		})
	}
}

func TestReaderErrorsAreFinal(t *testing.T) {
	b, ends := encodeLog(t, sampleEvents(3))
	b[ends[1]+FrameHeaderSize] ^= 1 // corrupt frame 2
	r := NewReader(bytes.NewReader(b))
	if _, err := r.Next(); err != nil {
		t.Fatalf("Next = %v, want event 1", err)
	}
	for i := range 3 {
		if ev, err := r.Next(); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Next #%d after corruption = %+v, %v; want ErrCorrupt", i, ev, err)
		}
	}
	if r.Offset() != ends[1] {
		t.Errorf("Offset = %d, want %d", r.Offset(), ends[1])
	}

	r = NewReader(bytes.NewReader(b[:ends[1]+3]))
	r.Next()
	if _, err := r.Next(); !errors.Is(err, ErrTornTail) {
		t.Fatalf("Next at torn tail = %v, want ErrTornTail", err)
	}
	if _, err := r.Next(); !errors.Is(err, ErrTornTail) {
		t.Fatalf("Next after torn tail = %v, want ErrTornTail", err)
	}
	if r.Offset() != ends[1] {
		t.Errorf("Offset = %d, want %d", r.Offset(), ends[1])
	}
}

func TestReadUnsupportedVersion(t *testing.T) {
	b, _ := encodeLog(t, sampleEvents(1))
	binary.LittleEndian.PutUint32(b[len(Magic):], 2)
	_, _, err := ReadFile(writeFile(t, b))
	if !errors.Is(err, ErrUnsupportedVersion) || errors.Is(err, ErrCorrupt) {
		t.Errorf("ReadFile of a version 2 log = %v, want ErrUnsupportedVersion", err)
	}
}

func TestEncodeRawKeepsUnknownFields(t *testing.T) {
	ev, err := session.Decode([]byte(`{"seq":9,"ts":"2025-03-01T12:00:01Z","kind":"from_the_future","extra":{"a":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	ev.Seq = 4
	b, err := encode(ev)
	if err != nil {
		t.Fatal(err)
	}
	got, err := session.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.Seq != 4 || !bytes.Contains(got.Raw, []byte(`"extra":{"a":1}`)) {
		t.Errorf("encode(unknown kind) = %s, want seq 4 and the extra field kept", b)
	}
	if !reflect.DeepEqual(got.Kind, session.Kind("from_the_future")) {
		t.Errorf("kind = %q", got.Kind)
	}
}

// TestReadPathsAgree reads every committed log, and each cut short around
// every frame boundary (and at odd offsets) and with bytes flipped, through the streaming Reader, ReadFile's
// in-memory path and ScanFile: same events, same tail, same error.
func TestReadPathsAgree(t *testing.T) {
	var logs []string
	for _, pat := range []string{"home", "replay/home", "diagnose/home"} {
		m, _ := filepath.Glob(filepath.Join("..", "..", "fixtures", pat, "sessions", "*", LogFile))
		logs = append(logs, m...)
	}
	if len(logs) < 10 {
		t.Fatalf("found %d fixture logs", len(logs))
	}
	same := func(name string, data []byte) {
		t.Helper()
		want, wantTail, wantErr := readAll(bytes.NewReader(data), "x", int64(len(data)))
		for _, shared := range []bool{false, true} {
			got, tail, err := readBytes(bytes.Clone(data), "x", int64(len(data)), shared)
			if fmt.Sprint(err) != fmt.Sprint(wantErr) || tail != wantTail || !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: readBytes(shared %v) = %d events, %+v, %v; readAll = %d events, %+v, %v", name, shared, len(got), tail, err, len(want), wantTail, wantErr)
			}
		}
	}
	for _, path := range logs {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		want, wantTail, wantErr := ReadFile(path)
		var got []session.Event
		n, tail, err := ScanFile(path, func(e session.Event) { got = append(got, e) })
		if n != len(got) || fmt.Sprint(err) != fmt.Sprint(wantErr) || tail != wantTail || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: ScanFile = %d events, %+v, %v; ReadFile = %d events, %+v, %v", path, n, tail, err, len(want), wantTail, wantErr)
		}
		same(path, data)
		cuts := []int{0, 1, len(Magic), FileHeaderSize - 1}
		for off := FileHeaderSize; off+FrameHeaderSize <= len(data); off += FrameHeaderSize + int(binary.LittleEndian.Uint32(data[off:])) {
			cuts = append(cuts, off, off+1, off+FrameHeaderSize-1, off+FrameHeaderSize, off+FrameHeaderSize+1)
		}
		for cut := 3; cut < len(data); cut += 101 {
			cuts = append(cuts, cut)
		}
		for _, cut := range cuts {
			if cut <= len(data) {
				same(fmt.Sprintf("%s cut at %d", path, cut), data[:cut])
			}
		}
		for i := 0; i < len(data); i += 97 {
			flip := bytes.Clone(data)
			flip[i] ^= 0x20
			same(fmt.Sprintf("%s byte %d flipped", path, i), flip)
		}
	}
}

// TestResumeReader: a Reader resumed at the Offset an earlier Reader had
// after each event reads the same events on; resumed with the wrong seq,
// or at an offset that is not a record's start, it reports corruption at
// that offset instead of reading other events.
func TestResumeReader(t *testing.T) {
	st := Store{Root: t.TempDir()}
	evs := []session.Event{{Kind: session.KindSessionStarted, SessionID: "resume-1", Model: "m"}}
	for i := range 20 {
		evs = append(evs, session.Event{Kind: session.KindUserMessage, Text: strings.Repeat("x", i)})
	}
	if _, err := st.WriteSession(evs, Options{NoSync: true}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(st.LogPath("resume-1"))
	if err != nil {
		t.Fatal(err)
	}
	var all []session.Event
	var offs []int64
	r := NewReader(bytes.NewReader(data))
	for {
		e, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		all, offs = append(all, e), append(offs, r.Offset())
	}
	for i, off := range offs {
		r := ResumeReader(bytes.NewReader(data[off:]), off, all[i].Seq)
		for j := i + 1; ; j++ {
			e, err := r.Next()
			if err == io.EOF {
				if j != len(all) {
					t.Errorf("resumed after seq %d: EOF after seq %d, want %d", all[i].Seq, j, len(all))
				}
				break
			}
			if err != nil || e.Seq != all[j].Seq || e.Text != all[j].Text {
				t.Fatalf("resumed after seq %d: event %d = %v, %v; want seq %d", all[i].Seq, j, e.Seq, err, all[j].Seq)
			}
		}
	}
	for _, tt := range []struct {
		name         string
		off, lastSeq int64
	}{
		{"wrong seq", offs[5], 3},
		{"mid-record", offs[5] + 3, all[5].Seq},
	} {
		_, err := ResumeReader(bytes.NewReader(data[tt.off:]), tt.off, tt.lastSeq).Next()
		var ce *CorruptError
		if !errors.As(err, &ce) || ce.Offset != tt.off {
			t.Errorf("%s: %v; want corruption at offset %d", tt.name, err, tt.off)
		}
	}
}
