package otelsession

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// msg is a protobuf message of the given fields, each (number, content)
// a length-delimited field.
func msg(fields ...any) []byte {
	var b []byte
	for i := 0; i < len(fields); i += 2 {
		b = protowire.AppendTag(b, protowire.Number(fields[i].(int)), protowire.BytesType)
		v, _ := fields[i+1].([]byte)
		b = protowire.AppendBytes(b, v)
	}
	return b
}

// times is n copies of field num holding content.
func times(n, num int, content []byte) []byte {
	one := msg(num, content)
	return bytes.Repeat(one, n)
}

// nested is an AnyValue holding arrays depth levels deep.
func nested(depth int) []byte {
	v := msg(1, []byte("x")) // string_value
	for range depth {
		v = msg(5, msg(1, v)) // array_value { values: [v] }
	}
	return v
}

// hostile exports: many empty messages at each level, the shapes that
// decode to the most per byte.
func hostile() map[string]struct {
	signal string
	b      []byte
} {
	const n = 20000
	return map[string]struct {
		signal string
		b      []byte
	}{
		"empty resource spans": {SignalTraces, times(n, 1, nil)},
		"empty scope spans":    {SignalTraces, msg(1, times(n, 2, nil))},
		"empty spans":          {SignalTraces, msg(1, msg(2, times(n, 2, nil)))},
		"empty attributes":     {SignalTraces, msg(1, msg(2, msg(2, times(n, 9, nil))))},
		"empty values":         {SignalTraces, msg(1, msg(2, msg(2, times(n, 9, msg(2, nil)))))},
		"empty array values":   {SignalTraces, msg(1, msg(2, msg(2, msg(9, msg(1, []byte("k"), 2, msg(5, times(n, 1, nil)))))))},
		"empty events":         {SignalTraces, msg(1, msg(2, msg(2, times(n, 11, nil))))},
		"empty links":          {SignalTraces, msg(1, msg(2, msg(2, times(n, 13, nil))))},
		"nested arrays":        {SignalTraces, msg(1, msg(2, msg(2, times(200, 9, msg(1, []byte("k"), 2, nested(25))))))},
		"unknown fields":       {SignalTraces, times(n, 99, nil)},
		"empty resource logs":  {SignalLogs, times(n, 1, nil)},
		"empty log records":    {SignalLogs, msg(1, msg(2, times(n, 2, nil)))},
		"empty log attributes": {SignalLogs, msg(1, msg(2, msg(2, times(n, 6, nil))))},
		"empty bodies":         {SignalLogs, msg(1, msg(2, times(n, 2, msg(5, nil))))},
	}
}

// allocated is the bytes fn allocates.
func allocated(fn func()) int64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	fn()
	runtime.ReadMemStats(&b)
	return int64(b.TotalAlloc - a.TotalAlloc)
}

func newRequest(signal string) proto.Message {
	if signal == SignalLogs {
		return &collogspb.ExportLogsServiceRequest{}
	}
	return &coltracepb.ExportTraceServiceRequest{}
}

// TestDecodeCostBounds: what proto.Unmarshal (and for JSON the OTLP/JSON
// decoder) allocates for an export is at most its DecodeCost, on the
// real captures and on hostile exports of empty messages, which decode
// to 50 and more times their size.
func TestDecodeCostBounds(t *testing.T) {
	cases := hostile()
	pbs, _ := filepath.Glob(filepath.Join(captures, "*", "*", "*.pb"))
	for _, p := range pbs {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		sig := SignalLogs
		if strings.Contains(filepath.Base(p), "traces") {
			sig = SignalTraces
		}
		cases[p] = struct {
			signal string
			b      []byte
		}{sig, b}
	}
	if len(cases) < 30 {
		t.Fatalf("%d cases: the captures are missing", len(cases))
	}
	for name, c := range cases {
		est, err := DecodeCost(c.signal, c.b)
		if err != nil {
			t.Errorf("%s: DecodeCost: %v", name, err)
			continue
		}
		proto.Unmarshal(c.b, newRequest(c.signal)) // warm
		got := allocated(func() {
			if err := proto.Unmarshal(c.b, newRequest(c.signal)); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		})
		t.Logf("%s: %.1fx decoded, DecodeCost %.1fx", name, float64(got)/float64(len(c.b)), float64(est)/float64(len(c.b)))
		if got > est {
			t.Errorf("%s: %d bytes (%.1fx its %d) allocated by decoding, over DecodeCost %d", name, got, float64(got)/float64(len(c.b)), len(c.b), est)
		}
		if !strings.Contains(name, "testdata") && float64(got)/float64(len(c.b)) < 10 && name != "unknown fields" {
			t.Errorf("%s: decodes to only %.1fx its size: not a hostile case", name, float64(got)/float64(len(c.b)))
		}
	}
	jsons, _ := filepath.Glob(filepath.Join(captures, "*", "*", "*.json"))
	jsonCases := map[string][]byte{
		"empty spans":      []byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[` + strings.TrimSuffix(strings.Repeat("{},", 20000), ",") + `]}]}]}`),
		"empty attributes": []byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"attributes":[` + strings.TrimSuffix(strings.Repeat(`{"value":{}},`, 20000), ",") + `]}]}]}]}`),
		"empty arrays":     []byte(`{"resourceSpans":[` + strings.TrimSuffix(strings.Repeat("{},", 20000), ",") + `]}`),
	}
	for _, p := range jsons {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		jsonCases[p] = b
	}
	for name, b := range jsonCases {
		est, err := JSONDecodeCost(b)
		if err != nil {
			t.Errorf("%s: JSONDecodeCost: %v", name, err)
			continue
		}
		decode := func() {
			if bytes.Contains(b, []byte("resourceLogs")) {
				DecodeLogsJSON(b)
			} else {
				DecodeTracesJSON(b)
			}
		}
		decode()
		got := allocated(decode)
		t.Logf("%s (JSON): %.1fx decoded, JSONDecodeCost %.1fx", name, float64(got)/float64(len(b)), float64(est)/float64(len(b)))
		if got > est {
			t.Errorf("%s (JSON): %d bytes (%.1fx its %d) allocated by decoding, over JSONDecodeCost %d", name, got, float64(got)/float64(len(b)), len(b), est)
		}
	}
}

func TestDecodeCostRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    []byte
		want error
	}{
		{"too deep", msg(1, msg(2, msg(2, msg(9, msg(1, []byte("k"), 2, nested(MaxDepth)))))), ErrTooDeep},
		{"cut short", msg(1, msg(2, msg(2, nil)))[:3], ErrMalformed},
	} {
		if _, err := DecodeCost(SignalTraces, tc.b); !errors.Is(err, tc.want) {
			t.Errorf("%s: DecodeCost = %v, want %v", tc.name, err, tc.want)
		}
	}
	deep := strings.Repeat(`{"a":[`, MaxDepth) + strings.Repeat(`]}`, MaxDepth)
	if _, err := JSONDecodeCost([]byte(deep)); !errors.Is(err, ErrTooDeep) {
		t.Errorf("JSON nested %d deep: %v, want ErrTooDeep", 2*MaxDepth, err)
	}
}

// BenchmarkDecodeCost compares the count an HTTP export now costs before
// it is taken with the wire check TracesWire makes and with decoding.
func BenchmarkDecodeCost(b *testing.B) {
	body, err := os.ReadFile(filepath.Join(captures, "openllmetry", "http-protobuf", "001-traces.pb"))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("DecodeCost", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for range b.N {
			DecodeCost(SignalTraces, body)
		}
	})
	b.Run("checkWire", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for range b.N {
			checkWire(body, traceRequestSchema(), func([]byte) {})
		}
	})
	b.Run("Unmarshal", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for range b.N {
			proto.Unmarshal(body, &coltracepb.ExportTraceServiceRequest{})
		}
	})
}
