package otelimport

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/klauspost/compress/zstd"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/agentctl/agentctl/internal/otelsession"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/remote"
	"github.com/agentctl/agentctl/internal/vfs"
)

// Limits on what is read.
const (
	MaxFileBytes    = 1 << 30 // a file or object, compressed or not
	MaxMessageBytes = 64 << 20
	// DefaultMaxDecodedBytes bounds what decoding one message may
	// allocate (Options.MaxDecodedBytes), counted on its bytes before it
	// is decoded (otelsession.DecodeCost): 64 MiB of empty messages would
	// take gigabytes.
	DefaultMaxDecodedBytes = 512 << 20
)

// RecordFile is the record of what was imported, in the home.
const RecordFile = "otlp-imports.json"

// Report is what one import did. Its JSON is the --json output of
// `agentctl import otlp` and only grows.
type Report struct {
	Source   string       `json:"source"`
	Files    []FileReport `json:"files"`
	Sessions []string     `json:"sessions"` // sessions written (new or extended)
	Accepted int          `json:"accepted"` // spans and log records now in sessions
	Rejected int          `json:"rejected"`
	Skipped  int          `json:"skipped"` // files already imported, unchanged
}

// FileReport is one file or object.
type FileReport struct {
	Name     string                  `json:"name"`
	Signal   string                  `json:"signal,omitempty"` // traces, logs
	Messages int                     `json:"messages"`
	Accepted int                     `json:"accepted"`
	Rejected []otelsession.Rejection `json:"rejected,omitempty"`
	// Already: imported before and unchanged; not read.
	Already bool `json:"already,omitempty"`
	// Error: the file (or the rest of it, after Messages) was not read.
	Error string `json:"error,omitempty"`
}

// Incomplete reports whether something was not imported: a file with an
// error or a rejected record.
func (r *Report) Incomplete() bool {
	for _, f := range r.Files {
		if f.Error != "" || len(f.Rejected) > 0 {
			return true
		}
	}
	return false
}

// Options configure an import.
type Options struct {
	// Mapping is handed to the Ingester (Source is set to "import").
	Mapping otelsession.Options
	// Store opens an s3:// source; remote.NewS3 when nil.
	Store func(ctx context.Context, url string) (remote.Store, error)
	// MaxDecodedBytes bounds what decoding one message may allocate; a
	// file holding a larger one is reported with an error, the rest of
	// it not read. DefaultMaxDecodedBytes when 0.
	MaxDecodedBytes int64
}

// source is a place to read files from.
type source interface {
	list(ctx context.Context) ([]entry, error)
	read(ctx context.Context, e entry) ([]byte, error)
}

type entry struct {
	name    string // as reported and recorded: a path or s3:// URL
	key     string // the object key or the path
	size    int64
	version string // the ETag of an object; "" for a file (its hash is taken)
}

// Import reads src (a file, a folder, or s3://bucket/prefix) into st.
func Import(ctx context.Context, st recorder.Store, src string, opts Options) (*Report, error) {
	var s source
	if strings.HasPrefix(src, "s3://") {
		open := opts.Store
		if open == nil {
			open = func(ctx context.Context, url string) (remote.Store, error) { return remote.NewS3(ctx, url) }
		}
		rs, err := open(ctx, src)
		if err != nil {
			return nil, fmt.Errorf("import otlp %s: %w", src, err)
		}
		s = bucket{rs}
	} else {
		fi, err := os.Stat(src)
		if err != nil {
			return nil, fmt.Errorf("import otlp: %w", err)
		}
		s = tree{root: src, dir: fi.IsDir()}
	}
	entries, err := s.list(ctx)
	if err != nil {
		return nil, fmt.Errorf("import otlp %s: %w", src, err)
	}
	done, err := readRecord(st)
	if err != nil {
		return nil, err
	}
	limit := opts.MaxDecodedBytes
	if limit <= 0 {
		limit = DefaultMaxDecodedBytes
	}
	mo := opts.Mapping
	mo.Source, mo.NoBackground = "import", true
	in, err := otelsession.NewIngester(st, mo)
	if err != nil {
		return nil, err
	}
	rep := &Report{Source: src, Sessions: []string{}, Files: []FileReport{}}
	read := map[string]string{}
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			in.Close()
			return nil, err
		}
		fr := FileReport{Name: e.name}
		if e.size > MaxFileBytes {
			fr.Error = fmt.Sprintf("%d bytes, over the %d this agentctl reads", e.size, int64(MaxFileBytes))
			rep.Files = append(rep.Files, fr)
			continue
		}
		if e.version != "" && done[e.name] == e.version {
			rep.Skipped++
			continue
		}
		b, err := s.read(ctx, e)
		if err != nil {
			fr.Error = err.Error()
			rep.Files = append(rep.Files, fr)
			continue
		}
		version := e.version
		if version == "" {
			h := sha256.Sum256(b)
			version = "sha256:" + hex.EncodeToString(h[:])
		}
		if done[e.name] == version {
			rep.Skipped++
			continue
		}
		if err := ingestFile(ctx, in, e.name, b, &fr, limit); err != nil {
			fr.Error = err.Error()
		}
		if fr.Signal == "metrics" {
			fr.Error = ""
		}
		rep.Accepted += fr.Accepted
		rep.Rejected += len(fr.Rejected)
		rep.Files = append(rep.Files, fr)
		if fr.Error == "" {
			read[e.name] = version
		}
	}
	if err := in.Close(); err != nil {
		return nil, fmt.Errorf("import otlp %s: %w", src, err)
	}
	rep.Sessions = append(rep.Sessions, in.Sessions()...)
	if len(read) > 0 {
		for k, v := range read {
			done[k] = v
		}
		if err := writeRecord(st, done); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// ingestFile decodes one file's messages and hands them to in.
func ingestFile(ctx context.Context, in *otelsession.Ingester, name string, b []byte, fr *FileReport, limit int64) error {
	b, err := decompress(b)
	if err != nil {
		return err
	}
	signal := signalOf(name)
	fr.Signal = signal
	if signal == "metrics" {
		fr.Error = "metrics: not imported (sessions come from traces and logs)"
		return nil
	}
	take := func(tr *coltracepb.ExportTraceServiceRequest, lg *collogspb.ExportLogsServiceRequest) error {
		var res otelsession.Result
		var err error
		if tr != nil {
			fr.Signal = "traces"
			res, err = in.Traces(ctx, tr)
		} else {
			fr.Signal = "logs"
			res, err = in.Logs(ctx, lg)
		}
		if err != nil {
			return err
		}
		fr.Messages++
		fr.Accepted += res.Accepted
		fr.Rejected = append(fr.Rejected, res.Rejected...)
		return nil
	}
	bounded := func(cost int64, err error) error {
		if err != nil {
			return err
		}
		if cost > limit {
			return fmt.Errorf("a message that would take %d bytes decoded (counted on its bytes: messages, values, strings), over the %d-byte limit; not read", cost, limit)
		}
		return nil
	}
	t := bytes.TrimLeft(b, " \t\r\n")
	isJSON := len(t) > 0 && t[0] == '{'
	if n := strings.TrimSuffix(strings.TrimSuffix(strings.ToLower(name), ".gz"), ".zst"); !isJSON && (strings.HasSuffix(n, ".json") || strings.HasSuffix(n, ".jsonl")) {
		return fmt.Errorf("not OTLP JSON: the file does not start with a JSON object")
	}
	if isJSON {
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(make([]byte, 0, 1<<20), MaxMessageBytes)
		line := 0
		for sc.Scan() {
			line++
			l := bytes.TrimSpace(sc.Bytes())
			if len(l) == 0 {
				continue
			}
			if err := bounded(otelsession.JSONDecodeCost(l)); err != nil {
				return fmt.Errorf("line %d: %w", line, err)
			}
			sig := signal
			if sig == "" {
				sig = jsonSignal(l)
			}
			switch sig {
			case "traces":
				req, err := otelsession.DecodeTracesJSON(l)
				if err != nil {
					return fmt.Errorf("line %d: %w", line, err)
				}
				if err := take(req, nil); err != nil {
					return fmt.Errorf("line %d: %w", line, err)
				}
			case "logs":
				req, err := otelsession.DecodeLogsJSON(l)
				if err != nil {
					return fmt.Errorf("line %d: %w", line, err)
				}
				if err := take(nil, req); err != nil {
					return fmt.Errorf("line %d: %w", line, err)
				}
			case "metrics":
				fr.Signal = "metrics"
			default:
				return fmt.Errorf("line %d: neither resourceSpans nor resourceLogs", line)
			}
		}
		if err := sc.Err(); err != nil {
			return fmt.Errorf("line %d: %w", line+1, err)
		}
		return nil
	}
	for _, msg := range frames(b) {
		if len(msg) > MaxMessageBytes {
			return fmt.Errorf("a protobuf message of %d bytes, over the %d limit", len(msg), MaxMessageBytes)
		}
		sig := signal
		if err := bounded(decodeCost(sig, msg)); errors.Is(err, otelsession.ErrMalformed) {
			// Not decoded at all: what the decoder would have built
			// before it met the damage is not bounded.
			switch sig {
			case "":
				return fmt.Errorf("neither OTLP protobuf traces nor logs: %w", err)
			default:
				return fmt.Errorf("not OTLP protobuf %s: %w", sig, err)
			}
		} else if err != nil {
			return err
		}
		tr := &coltracepb.ExportTraceServiceRequest{}
		if sig == "" || sig == "traces" {
			if err := proto.Unmarshal(msg, tr); err != nil {
				if sig == "traces" {
					return fmt.Errorf("not OTLP protobuf traces: %w", err)
				}
			} else if sig == "traces" || looksLikeTraces(tr) {
				if err := take(tr, nil); err != nil {
					return err
				}
				continue
			}
		}
		lg := &collogspb.ExportLogsServiceRequest{}
		if err := proto.Unmarshal(msg, lg); err != nil {
			return fmt.Errorf("neither OTLP protobuf traces nor logs: %w", err)
		}
		if err := take(nil, lg); err != nil {
			return err
		}
	}
	return nil
}

// decodeCost is otelsession.DecodeCost of a message of signal sig, or
// when the file does not say, of the signal its bytes can be (the most
// of the two).
func decodeCost(sig string, msg []byte) (int64, error) {
	if sig != "" {
		return otelsession.DecodeCost(sig, msg)
	}
	ct, terr := otelsession.DecodeCost(otelsession.SignalTraces, msg)
	cl, lerr := otelsession.DecodeCost(otelsession.SignalLogs, msg)
	switch {
	case terr != nil && lerr != nil:
		return 0, terr
	case terr != nil:
		return cl, nil
	case lerr != nil:
		return ct, nil
	}
	return max(ct, cl), nil
}

// frames splits a protobuf file: the file exporter's messages, each after
// its length (4 bytes, big-endian), when the lengths cover the file
// exactly; else the whole file is one message.
func frames(b []byte) [][]byte {
	var out [][]byte
	for rest := b; len(rest) > 0; {
		if len(rest) < 4 {
			return [][]byte{b}
		}
		n := binary.BigEndian.Uint32(rest)
		if uint64(n) > uint64(len(rest)-4) {
			return [][]byte{b}
		}
		out = append(out, rest[4:4+n])
		rest = rest[4+n:]
	}
	if len(out) == 0 {
		return [][]byte{b}
	}
	return out
}

// looksLikeTraces tells a traces message from a logs message decoded as
// traces (the two share field numbers): every span has a 16-byte trace id
// and an 8-byte span id.
func looksLikeTraces(req *coltracepb.ExportTraceServiceRequest) bool {
	n := 0
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				if len(s.GetTraceId()) != 16 || len(s.GetSpanId()) != 8 {
					return false
				}
				n++
			}
		}
	}
	return n > 0
}

// signalOf names the signal a file's name says it holds ("" when it does
// not say): the S3 exporter's traces_/logs_/metrics_ files, a file
// exporter's path as configured.
func signalOf(name string) string {
	base := strings.ToLower(filepath.Base(name))
	switch {
	case strings.Contains(base, "metric"):
		return "metrics"
	case strings.Contains(base, "log"):
		return "logs"
	case strings.Contains(base, "trace"), strings.Contains(base, "span"):
		return "traces"
	}
	return ""
}

func jsonSignal(line []byte) string {
	var head map[string]json.RawMessage
	if json.Unmarshal(line, &head) != nil {
		return ""
	}
	switch {
	case head["resourceSpans"] != nil || head["resource_spans"] != nil:
		return "traces"
	case head["resourceLogs"] != nil || head["resource_logs"] != nil:
		return "logs"
	case head["resourceMetrics"] != nil || head["resource_metrics"] != nil:
		return "metrics"
	}
	return ""
}

// decompress undoes gzip or zstd (told by their magic), reading at most
// MaxFileBytes.
func decompress(b []byte) ([]byte, error) {
	var r io.Reader
	switch {
	case bytes.HasPrefix(b, []byte{0x1f, 0x8b}):
		z, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		r = z
	case bytes.HasPrefix(b, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		z, err := zstd.NewReader(bytes.NewReader(b), zstd.WithDecoderMaxMemory(MaxFileBytes))
		if err != nil {
			return nil, fmt.Errorf("zstd: %w", err)
		}
		defer z.Close()
		r = z
	default:
		return b, nil
	}
	out, err := io.ReadAll(io.LimitReader(r, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("decompress: %w", err)
	}
	if len(out) > MaxFileBytes {
		return nil, fmt.Errorf("decompresses to more than %d bytes", int64(MaxFileBytes))
	}
	return out, nil
}

// tree is a file or a folder.
type tree struct {
	root string
	dir  bool
}

func (t tree) list(ctx context.Context) ([]entry, error) {
	if !t.dir {
		fi, err := os.Stat(t.root)
		if err != nil {
			return nil, err
		}
		abs, _ := filepath.Abs(t.root)
		return []entry{{name: abs, key: t.root, size: fi.Size()}}, nil
	}
	var out []entry
	err := filepath.WalkDir(t.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != t.root && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		// A named pipe, a device or a socket is listed so that reading it
		// says why it was not imported; a link is not followed.
		special := d.Type()&(fs.ModeNamedPipe|fs.ModeDevice|fs.ModeCharDevice|fs.ModeSocket) != 0
		if (!d.Type().IsRegular() && !special) || strings.HasPrefix(d.Name(), ".") || !otlpName(d.Name()) {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		abs, _ := filepath.Abs(p)
		out = append(out, entry{name: abs, key: p, size: fi.Size()})
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, err
}

// otlpName: the files of a folder that may hold OTLP (by extension).
func otlpName(n string) bool {
	n = strings.TrimSuffix(strings.TrimSuffix(strings.ToLower(n), ".gz"), ".zst")
	for _, ext := range []string{".json", ".jsonl", ".pb", ".binpb", ".proto", ".otlp"} {
		if strings.HasSuffix(n, ext) {
			return true
		}
	}
	return false
}

func (t tree) read(ctx context.Context, e entry) ([]byte, error) {
	f, err := vfs.OpenRegular(e.key)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxFileBytes {
		return nil, fmt.Errorf("over %d bytes", int64(MaxFileBytes))
	}
	return b, nil
}

// bucket is an S3 prefix.
type bucket struct{ st remote.Store }

func (b bucket) list(ctx context.Context) ([]entry, error) {
	objs, err := b.st.List(ctx, "")
	if err != nil {
		return nil, err
	}
	base := strings.TrimSuffix(b.st.String(), "/") + "/"
	var out []entry
	for _, o := range objs {
		if strings.Contains(o.Key, "..") || !otlpName(o.Key) {
			continue
		}
		out = append(out, entry{name: base + o.Key, key: o.Key, size: o.Size, version: fmt.Sprintf("etag:%s:%d", o.ETag, o.Size)})
	}
	return out, nil
}

func (b bucket) read(ctx context.Context, e entry) ([]byte, error) {
	body, _, err := b.st.Get(ctx, e.key, e.size)
	return body, err
}

// readRecord reads what earlier imports recorded.
func readRecord(st recorder.Store) (map[string]string, error) {
	b, err := os.ReadFile(filepath.Join(st.Root, RecordFile))
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("import otlp: read %s: %w", RecordFile, err)
	}
	var rec struct {
		Imported map[string]string `json:"imported"`
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("import otlp: %s is damaged (%v); remove it to import everything again (nothing is added twice)", filepath.Join(st.Root, RecordFile), err)
	}
	if rec.Imported == nil {
		rec.Imported = map[string]string{}
	}
	return rec.Imported, nil
}

func writeRecord(st recorder.Store, done map[string]string) error {
	b, err := json.MarshalIndent(map[string]any{"imported": done}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(st.Root, 0o755); err != nil {
		return err
	}
	if err := vfs.WriteFileAtomic(filepath.Join(st.Root, RecordFile), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("import otlp: record what was imported: %w", err)
	}
	return nil
}
