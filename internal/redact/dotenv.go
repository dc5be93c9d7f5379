package redact

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// MaxDotEnv is the largest .env file FromDotEnv reads. A larger one is an
// error rather than a partial read: its values would go unredacted.
const MaxDotEnv = 1 << 20

// ErrDotEnvTooLarge is wrapped by FromDotEnv's error for a .env file of
// more than MaxDotEnv bytes.
var ErrDotEnvTooLarge = errors.New("redact: .env file too large")

// FromDotEnv reads every .env* file directly in dir (.env, .env.local,
// .env.production, …) and returns their values: those of at least 8
// bytes, and those of at least 4 under a secret-looking name. Quotes
// around a value are removed, "export " prefixes and comments ignored. A
// missing dir is not an error.
//
// Each file is read whole. One over MaxDotEnv bytes, or one that cannot be
// read, is an error, joined with the others' (errors.Join); the values of
// the other files are returned all the same. A file is opened without
// following links out of dir (os.Root): a .env* link is read only when it
// resolves to a regular file inside dir, and anything but a regular file
// (a FIFO would block the reader) is skipped; neither is an error.
func FromDotEnv(dir string) ([]Secret, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("redact: read .env files of %s: %w", dir, err)
	}
	var root *os.Root
	var out []Secret
	var errs []error
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, ".env") || e.IsDir() {
			continue
		}
		if root == nil {
			if root, err = os.OpenRoot(dir); err != nil {
				return nil, fmt.Errorf("redact: read .env files of %s: %w", dir, err)
			}
			defer root.Close()
		}
		b, err := readDotEnv(root, dir, name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, parseDotEnv(b)...)
	}
	return out, errors.Join(errs...)
}

// readDotEnv returns the content of dir/name, or nil when it is not a
// regular file inside dir.
func readDotEnv(root *os.Root, dir, name string) ([]byte, error) {
	path := filepath.Join(dir, name)
	// O_NONBLOCK: opening a FIFO must not wait for a writer.
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		fi, lerr := root.Lstat(name)
		if lerr != nil || fi.Mode()&fs.ModeSymlink == 0 {
			if lerr != nil && errors.Is(lerr, fs.ErrNotExist) {
				return nil, nil // removed since the listing
			}
			return nil, fmt.Errorf("redact: read %s: %w; its values are not redacted", path, err)
		}
		// A link os.Root refused: dangling, or out of dir, or absolute.
		// Only the last may still end inside dir.
		rel, ok := inside(dir, path)
		if !ok {
			return nil, nil
		}
		if f, err = root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0); err != nil {
			return nil, nil
		}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("redact: read %s: %w; its values are not redacted", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, nil
	}
	if fi.Size() > MaxDotEnv {
		return nil, fmt.Errorf("redact: %s: %w: %d bytes, over the %d read; its values are not redacted (keep secrets in a smaller .env file)",
			path, ErrDotEnvTooLarge, fi.Size(), MaxDotEnv)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxDotEnv+1))
	if err != nil {
		return nil, fmt.Errorf("redact: read %s: %w; its values are not redacted", path, err)
	}
	if len(b) > MaxDotEnv { // it grew since the stat
		return nil, fmt.Errorf("redact: %s: %w: over the %d read; its values are not redacted (keep secrets in a smaller .env file)",
			path, ErrDotEnvTooLarge, MaxDotEnv)
	}
	return b, nil
}

// inside resolves the link path and returns its target relative to dir
// when the target is inside dir.
func inside(dir, path string) (string, bool) {
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", false
	}
	base, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", false
	}
	rel, err := filepath.Rel(base, target)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	return rel, true
}

// parseDotEnv returns the values of a .env file's KEY=VALUE lines, of any
// length.
func parseDotEnv(b []byte) []Secret {
	var out []Secret
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		} else if i := strings.Index(v, " #"); i >= 0 {
			v = strings.TrimSpace(v[:i])
		}
		if len(v) >= 8 || (len(v) >= MinValue && LooksSecret(k)) {
			out = append(out, Secret{Name: k, Value: v})
		}
	}
	return out
}
