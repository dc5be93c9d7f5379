package bundle

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/vfs"
)

// WriteFile bundles session id of the store into the file path, through
// opts.FS: a temp file beside path is written (see Write), fsync'd, renamed
// over path, and the folder fsync'd (vfs.CreateOutput). After a failure or
// a power cut, path is the whole new bundle or what it was before
// (nothing, or an earlier bundle), never a part of one, and no temp file is
// left but after a power cut or a kill; the next WriteFile into the folder
// removes those (see removeStale). A path that is a device or a FIFO
// (/dev/null, a pipe to another program) is written into, never replaced.
// It returns the bundle's manifest and size.
func WriteFile(ctx context.Context, path string, st recorder.Store, id string, opts Options) (*Manifest, int64, error) {
	fsys := vfs.Or(opts.FS)
	opts.FS = fsys
	dir := filepath.Dir(path)
	out, err := vfs.CreateOutputPattern(fsys, path, tempPrefix(tempFilePrefix)+filepath.Base(path)+".tmp-*", 0o600, false)
	if errors.Is(err, fs.ErrNotExist) {
		// The temp file's create says it: no look at the folder beforehand.
		return nil, 0, fmt.Errorf("bundle: write %s: the folder %s does not exist (create it, or pick another -o): %w", path, dir, err)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("bundle: %w", err)
	}
	defer out.Abort()
	w := io.Writer(out)
	if !out.Direct() {
		// Locked while it is written; then the temps of killed bundles,
		// which nothing holds, can go.
		lockFd(out.Fd())
		removeStale(fsys, dir, tempFilePrefix, false)
		w = newWritebackFile(out)
	}
	cw := &vfs.CountWriter{W: w}
	m, err := Write(ctx, cw, st, id, opts)
	if err != nil {
		return nil, 0, err
	}
	if err := out.Commit(); err != nil {
		return nil, 0, fmt.Errorf("bundle: write %s: %w", path, err)
	}
	return m, cw.N, nil
}
