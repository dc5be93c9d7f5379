package transcript

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// Format is one format `agentctl import` reads. Each format's own file
// registers it (Register, from its init), so a new format is one file:
// the command's help, Import, Detect and a folder's walk all iterate the
// registry and none of them names a format.
type Format struct {
	// Name is what `agentctl import NAME` and the header's imported_from
	// call it.
	Name string
	// Doc describes the files, for the command's help: one line, or
	// lines joined by "\n".
	Doc string
	// Exts are the file extensions a folder imported as this format is
	// read for ("" when the format reads what Detect claims, any name).
	Exts []string
	// Detect claims a file from its head. It must claim the format's own
	// files and no other format's: `import auto` takes a file only when
	// exactly one format claims it.
	Detect func(h *Head) bool
	// Import reads the file at path: its sessions (sub-agents as
	// children). Nil for a format whose records join sessions already in
	// the home as they are read (otlp, through package otelimport): the
	// command hands its files to that format's own import.
	Import func(path string) ([]*Session, error)
	// Companion, when set, says a file in a folder is brought in by
	// another file's import (a Claude Code sub-agent file by its
	// session's), with why; such a file is not imported on its own.
	Companion func(path string) string
}

// Head is what Detect looks at: the file's first bytes and, for a SQLite
// database, its tables.
type Head struct {
	// Name is the file's base name.
	Name string
	// Bytes are the first HeadBytes of the file (all of a shorter one).
	Bytes []byte
	// Tables are the tables of a SQLite database, sorted; nil for any
	// other file.
	Tables []string
}

// HeadBytes is how much of a file Detect reads.
const HeadBytes = 64 << 10

var (
	regMu    sync.RWMutex
	registry []Format
)

// Register adds a format. It panics on a name already registered or a
// format without a name, Detect or doc: a programming error, found at
// start-up.
func Register(f Format) {
	regMu.Lock()
	defer regMu.Unlock()
	if f.Name == "" || f.Name == FormatAuto || f.Detect == nil || f.Doc == "" {
		panic(fmt.Sprintf("transcript.Register: format %q needs a name (not %q), a doc line and Detect", f.Name, FormatAuto))
	}
	for _, g := range registry {
		if g.Name == f.Name {
			panic(fmt.Sprintf("transcript.Register: format %q registered twice", f.Name))
		}
	}
	registry = append(registry, f)
	slices.SortFunc(registry, func(a, b Format) int { return strings.Compare(a.Name, b.Name) })
}

// Formats lists the registered formats, by name.
func Formats() []Format {
	regMu.RLock()
	defer regMu.RUnlock()
	return slices.Clone(registry)
}

// Names lists the registered formats' names, sorted.
func Names() []string {
	var out []string
	for _, f := range Formats() {
		out = append(out, f.Name)
	}
	return out
}

// Lookup finds a registered format by name.
func Lookup(name string) (Format, bool) {
	for _, f := range Formats() {
		if f.Name == name {
			return f, true
		}
	}
	return Format{}, false
}

// Known is the list of formats an error names: "a, b, c, or auto".
func Known() string {
	return strings.Join(Names(), ", ") + ", or " + FormatAuto
}

// LookupOrAuto is Lookup with an error naming the known formats, for a
// name the user gave (FormatAuto gives the zero Format).
func LookupOrAuto(name string) (Format, error) {
	if name == FormatAuto {
		return Format{Name: FormatAuto}, nil
	}
	if f, ok := Lookup(name); ok {
		return f, nil
	}
	return Format{}, fmt.Errorf("import: format %q is not one this agentctl knows (%s)", name, Known())
}

// Import reads path as format (FormatAuto detects it) and returns its
// sessions: one for most formats, one per sample for Inspect, plus the
// sub-agents as children. A Claude Code file brings in the sub-agent files
// beside it (agent-<id>.jsonl of the same session, or <session
// id>/subagents/), an ATIF file the trajectories its results refer to.
func Import(format, path string) ([]*Session, error) {
	if format == FormatAuto || format == "" {
		f, err := Detect(path)
		if err != nil {
			return nil, err
		}
		format = f
	}
	f, err := LookupOrAuto(format)
	if err != nil {
		return nil, err
	}
	if f.Import == nil {
		return nil, fmt.Errorf("import %s: a %s file is imported with 'agentctl import %s'", path, f.Name, f.Name)
	}
	return f.Import(path)
}

// Detect names the format of the file at path: the one registered
// format whose signature claims its head. A file none claims, or more
// than one, is an error naming every format: the user names it then.
func Detect(path string) (string, error) {
	h, err := ReadHead(path)
	if err != nil {
		return "", err
	}
	var claimed []string
	for _, f := range Formats() {
		if f.Detect(h) {
			claimed = append(claimed, f.Name)
		}
	}
	switch len(claimed) {
	case 1:
		return claimed[0], nil
	case 0:
		return "", fmt.Errorf("import: cannot tell the format of %s from its content; name it (%s)", path, strings.Join(Names(), ", "))
	}
	return "", fmt.Errorf("import: cannot tell the format of %s: it looks like each of %s; name it (%s)", path, strings.Join(claimed, " and "), strings.Join(Names(), ", "))
}

// ReadHead reads what Detect looks at in the file at path.
func ReadHead(path string) (*Head, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, HeadBytes)
	n := 0
	for n < len(buf) {
		m, err := f.Read(buf[n:])
		n += m
		if err != nil || m == 0 {
			break
		}
	}
	h := &Head{Name: filepath.Base(path), Bytes: buf[:n]}
	if IsSQLite(h.Bytes) {
		tables, err := sqliteTables(path)
		if err != nil {
			return nil, fmt.Errorf("import %s: a SQLite database whose tables cannot be read: %w", path, err)
		}
		h.Tables = tables
	}
	return h, nil
}

// IsSQLite reports whether b starts as a SQLite database file does.
func IsSQLite(b []byte) bool { return bytes.HasPrefix(b, []byte("SQLite format 3\x00")) }

// HasTables reports whether h is a SQLite database holding every table
// named.
func (h *Head) HasTables(names ...string) bool {
	if h.Tables == nil {
		return false
	}
	for _, n := range names {
		if !slices.Contains(h.Tables, n) {
			return false
		}
	}
	return true
}

// TopKeys reads the head as a JSON object and returns its keys, in
// order, with their values (nil for a value the head cuts short, after
// which it stops). ok is false when the head is not a JSON object.
func (h *Head) TopKeys() (keys []string, vals map[string]json.RawMessage, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(bytes.TrimPrefix(h.Bytes, []byte("\ufeff"))))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, nil, false
	}
	keys, vals = objectKeys(dec)
	return keys, vals, true
}

// FirstElementKeys reads the head as a JSON array and returns the keys of
// its first element, an object (ok false otherwise).
func (h *Head) FirstElementKeys() (keys []string, vals map[string]json.RawMessage, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(bytes.TrimPrefix(h.Bytes, []byte("\ufeff"))))
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return nil, nil, false
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, nil, false
	}
	keys, vals = objectKeys(dec)
	return keys, vals, true
}

func objectKeys(dec *json.Decoder) ([]string, map[string]json.RawMessage) {
	var keys []string
	vals := map[string]json.RawMessage{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			break
		}
		k, ok := t.(string)
		if !ok {
			break
		}
		keys = append(keys, k)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			vals[k] = nil
			break
		}
		vals[k] = v
	}
	return keys, vals
}

// Lines reads the head as JSON lines: each complete line's object (a line
// the head cuts short is left out; so is a blank one). ok is false when a
// complete line is not a JSON object, or there is none.
func (h *Head) Lines() (lines []map[string]json.RawMessage, ok bool) {
	b := bytes.TrimPrefix(h.Bytes, []byte("\ufeff"))
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			break // cut short by the head (or the file's last line without a newline: judged on the rest)
		}
		line := bytes.TrimSpace(b[:i])
		b = b[i+1:]
		if len(line) == 0 {
			continue
		}
		var m map[string]json.RawMessage
		if line[0] != '{' || json.Unmarshal(line, &m) != nil {
			return nil, false
		}
		lines = append(lines, m)
	}
	if rest := bytes.TrimSpace(b); len(lines) == 0 && len(rest) > 0 && rest[0] == '{' {
		// A one-line file without its newline, or a first line longer
		// than the head (a pasted prompt): the keys before the cut.
		dec := json.NewDecoder(bytes.NewReader(rest))
		if t, err := dec.Token(); err == nil && t == json.Delim('{') {
			keys, vals := objectKeys(dec)
			if len(keys) > 0 {
				lines = append(lines, vals)
			}
		}
	}
	return lines, len(lines) > 0
}

// StringOf is the string value of key in m ("" when absent or not a
// string).
func StringOf(m map[string]json.RawMessage, key string) string {
	var s string
	if v, ok := m[key]; ok && json.Unmarshal(v, &s) == nil {
		return s
	}
	return ""
}

// hasKeys reports whether m holds every key.
func hasKeys(m map[string]json.RawMessage, keys ...string) bool {
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			return false
		}
	}
	return true
}
