package remote

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/agentctl/agentctl/internal/vfs"
)

// recordFile is the push record in a remote's folder.
const recordFile = "PUSHED"

const recordMagic = "agentctl remote pushed 1"

// record is what a home pushed to a remote:
//
//	agentctl remote pushed 1
//	H	<id>	<last seq>	<log size>   the session's rows, as sealed then
//	L	<id>	<log size>	<etag>        its log
//	B	<id>                            its bundle
type record struct {
	History map[string][2]int64 // id -> last seq, log size
	Logs    map[string]logRecord
	Bundles map[string]bool
}

type logRecord struct {
	Size int64
	ETag string
}

func loadRecord(dir string) (*record, error) {
	r := &record{History: map[string][2]int64{}, Logs: map[string]logRecord{}, Bundles: map[string]bool{}}
	p := filepath.Join(dir, recordFile)
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return r, nil
	}
	if err != nil {
		return nil, fmt.Errorf("remote: read push record: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if n == 1 {
			if line != recordMagic {
				return nil, fmt.Errorf("remote: push record %s: not a push record (first line %.40q); remove it to push everything again", p, line)
			}
			continue
		}
		f := strings.Split(line, "\t")
		bad := fmt.Errorf("remote: push record %s: line %d: %.60q; remove the file to push everything again", p, n, line)
		switch {
		case f[0] == "H" && len(f) == 4:
			seq, err1 := strconv.ParseInt(f[2], 10, 64)
			size, err2 := strconv.ParseInt(f[3], 10, 64)
			if err1 != nil || err2 != nil {
				return nil, bad
			}
			r.History[f[1]] = [2]int64{seq, size}
		case f[0] == "L" && len(f) == 4:
			size, err := strconv.ParseInt(f[2], 10, 64)
			if err != nil {
				return nil, bad
			}
			r.Logs[f[1]] = logRecord{Size: size, ETag: f[3]}
		case f[0] == "B" && len(f) == 2:
			r.Bundles[f[1]] = true
		default:
			return nil, bad
		}
	}
	return r, sc.Err()
}

// save replaces the record atomically (temp file, fsync, rename).
func (r *record) save(dir string, noSync bool) error {
	var b bytes.Buffer
	b.WriteString(recordMagic + "\n")
	for _, id := range sortedKeys(r.History) {
		v := r.History[id]
		fmt.Fprintf(&b, "H\t%s\t%d\t%d\n", id, v[0], v[1])
	}
	for _, id := range sortedKeys(r.Logs) {
		v := r.Logs[id]
		fmt.Fprintf(&b, "L\t%s\t%d\t%s\n", id, v.Size, v.ETag)
	}
	for _, id := range sortedKeys(r.Bundles) {
		fmt.Fprintf(&b, "B\t%s\n", id)
	}
	return writeAtomic(filepath.Join(dir, recordFile), b.Bytes(), noSync)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// writeAtomic writes b to path through a temp file in its folder
// (vfs.WriteFileAtomicFS), making the folder first.
func writeAtomic(path string, b []byte, noSync bool) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("remote: write %s: %w", path, err)
	}
	if err := vfs.WriteFileAtomicFS(vfs.OS, path, b, 0o600, noSync); err != nil {
		return fmt.Errorf("remote: write %s: %w", path, err)
	}
	return nil
}
