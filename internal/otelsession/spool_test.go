package otelsession

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// redactMessage replaces the secrets in every string of m, in place (the
// OTLP messages hold content in attribute values, bodies, names and
// status messages; ids are bytes).
func redactMessage(m protoreflect.Message, f func(string) string) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList():
			l := v.List()
			for i := range l.Len() {
				switch fd.Kind() {
				case protoreflect.StringKind:
					if s := l.Get(i).String(); s != "" {
						if t := f(s); t != s {
							l.Set(i, protoreflect.ValueOfString(t))
						}
					}
				case protoreflect.MessageKind, protoreflect.GroupKind:
					redactMessage(l.Get(i).Message(), f)
				}
			}
		case fd.IsMap():
			mp := v.Map()
			mp.Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				switch fd.MapValue().Kind() {
				case protoreflect.StringKind:
					if s := mv.String(); s != "" {
						if t := f(s); t != s {
							mp.Set(k, protoreflect.ValueOfString(t))
						}
					}
				case protoreflect.MessageKind, protoreflect.GroupKind:
					redactMessage(mv.Message(), f)
				}
				return true
			})
		case fd.Kind() == protoreflect.StringKind:
			if t := f(v.String()); t != v.String() {
				m.Set(fd, protoreflect.ValueOfString(t))
			}
		case fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind:
			redactMessage(v.Message(), f)
		}
		return true
	})
}

// fill sets every string field of m, and of every message below it, to
// secret; a repeated field gets several elements, the i-th of which
// picks the i-th member of each oneof, so every member is set somewhere.
func fill(m protoreflect.Message, secret string, variant, depth int) {
	if depth == 0 {
		return
	}
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() && pick(od, variant) != fd {
			continue
		}
		switch {
		case fd.IsMap():
			continue
		case fd.IsList():
			l := m.Mutable(fd).List()
			for v := range 3 {
				switch fd.Kind() {
				case protoreflect.StringKind:
					l.Append(protoreflect.ValueOfString(secret))
				case protoreflect.MessageKind:
					e := l.NewElement()
					fill(e.Message(), secret, v, depth-1)
					l.Append(e)
				}
			}
		case fd.Kind() == protoreflect.StringKind:
			m.Set(fd, protoreflect.ValueOfString(secret))
		case fd.Kind() == protoreflect.MessageKind:
			fill(m.Mutable(fd).Message(), secret, variant, depth-1)
		}
	}
}

// pick is the variant-th member of od that holds strings (a string, or a
// message: AnyValue's string, array and kvlist).
func pick(od protoreflect.OneofDescriptor, variant int) protoreflect.FieldDescriptor {
	var ms []protoreflect.FieldDescriptor
	for i := range od.Fields().Len() {
		if k := od.Fields().Get(i).Kind(); k == protoreflect.StringKind || k == protoreflect.MessageKind {
			ms = append(ms, od.Fields().Get(i))
		}
	}
	if len(ms) == 0 {
		return nil
	}
	return ms[variant%len(ms)]
}

// TestRedactWalksEveryString: the spool's typed redaction reaches every
// string the reflective walk reaches, in requests with every string field
// of every OTLP message set to a secret.
func TestRedactWalksEveryString(t *testing.T) {
	const secret = "sk-the-secret"
	hide := func(s string) string { return strings.ReplaceAll(s, secret, "[REDACTED]") }
	traces, logs := &coltracepb.ExportTraceServiceRequest{}, &collogspb.ExportLogsServiceRequest{}
	for _, tc := range []struct {
		msg    proto.Message
		redact func()
	}{
		{traces, func() { redactTraces(traces, hide) }},
		{logs, func() { redactLogs(logs, hide) }},
	} {
		fill(tc.msg.ProtoReflect(), secret, 0, 8)
		before := 0
		redactMessage(tc.msg.ProtoReflect(), func(s string) string {
			before += strings.Count(s, secret)
			return s
		})
		if before < 50 {
			t.Fatalf("%T: only %d strings hold the secret: fill did not reach the messages", tc.msg, before)
		}
		tc.redact()
		var left []string
		redactMessage(tc.msg.ProtoReflect(), func(s string) string {
			if strings.Contains(s, secret) {
				left = append(left, s)
			}
			return s
		})
		if len(left) > 0 {
			t.Errorf("%T: %d of %d strings not redacted by the spool's walk", tc.msg, len(left), before)
		}
	}
}

// TestReadSpool: every whole frame is read back; a frame the end of the
// file cuts short (a crash mid-write, never acknowledged) ends the read
// quietly; a damaged frame with more after it is an error that says
// where.
func TestReadSpool(t *testing.T) {
	dir := t.TempDir()
	w, err := createSpool(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	payloads := [][]byte{[]byte("one"), bytes.Repeat([]byte("two"), 1000), []byte("three")}
	for i, p := range payloads {
		kind := byte(frameTraces)
		if i == 1 {
			kind = frameLogs
		}
		if _, err := w.append(kind, p); err != nil {
			t.Fatal(err)
		}
	}
	w.close()
	path := filepath.Join(w.dir, spoolName)
	whole, _ := os.ReadFile(path)
	read := func(b []byte) ([]string, error) {
		p := filepath.Join(t.TempDir(), spoolName)
		os.WriteFile(p, b, 0o600)
		var got []string
		err := readSpool(p, func(kind byte, _ int64, payload []byte) error {
			got = append(got, string(kind)+":"+string(payload[:min(5, len(payload))]))
			return nil
		})
		return got, err
	}
	second := len(spoolMagic) + frameHeader + 3
	third := second + frameHeader + 3000
	for _, tc := range []struct {
		name    string
		b       []byte
		want    int
		wantErr string
	}{
		{"whole", whole, 3, ""},
		{"torn payload", whole[:len(whole)-2], 2, ""},
		{"torn header", whole[:third+4], 2, ""},
		{"last frame flipped", flip(whole, len(whole)-1), 2, ""},
		{"middle frame flipped", flip(whole, second+frameHeader+10), 0, "damaged at byte 34 (a frame's checksum"},
		{"kind flipped", flip(whole, second), 0, "a frame header that is not one"},
		{"not a spool", []byte("hello, world, this is not it\n"), 0, "not an agentctl OTLP spool"},
		{"empty", nil, 0, ""},
	} {
		got, err := read(tc.b)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: err = %v, want %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil || len(got) != tc.want {
			t.Errorf("%s: read %v, %v; want %d frames", tc.name, got, err, tc.want)
		}
	}
}

func flip(b []byte, i int) []byte {
	c := bytes.Clone(b)
	c[i] ^= 0x40
	return c
}
