package bundle

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/vfs"
)

// WriteFile bundles session id of the store into the file path, through
// opts.FS: a temp file beside path is written (see Write), fsync'd, renamed
// over path, and the folder fsync'd. After a failure or a power cut, path
// is the whole new bundle or what it was before (nothing, or an earlier
// bundle), never a part of one, and no temp file is left but after a power
// cut or a kill; the next WriteFile into the folder removes those (see
// removeStale). It returns the bundle's manifest and size.
func WriteFile(ctx context.Context, path string, st recorder.Store, id string, opts Options) (*Manifest, int64, error) {
	fsys := vfs.Or(opts.FS)
	opts.FS = fsys
	dir := filepath.Dir(path)
	tmp, err := vfs.CreateTemp(fsys, dir, tempPrefix(tempFilePrefix)+filepath.Base(path)+".tmp-*")
	if errors.Is(err, fs.ErrNotExist) {
		// The temp file's create says it: no look at the folder beforehand.
		return nil, 0, fmt.Errorf("bundle: write %s: the folder %s does not exist (create it, or pick another -o): %w", path, dir, err)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("bundle: %w", err)
	}
	name := tmp.Name()
	// Locked while it is written; then the temps of killed bundles, which
	// nothing holds, can go.
	lockFd(tmp.Fd())
	removeStale(fsys, dir, tempFilePrefix, false)
	m, err := Write(ctx, newWritebackFile(tmp), st, id, opts)
	var size int64
	if err == nil {
		if err = tmp.Sync(); err != nil {
			err = fmt.Errorf("bundle: %w", err)
		}
	}
	if err == nil {
		fi, serr := tmp.Stat()
		if serr != nil {
			err = fmt.Errorf("bundle: %w", serr)
		} else {
			size = fi.Size()
		}
	}
	if cerr := tmp.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("bundle: %w", cerr)
	}
	if err == nil {
		if rerr := fsys.Rename(name, path); rerr != nil {
			err = fmt.Errorf("bundle: %w", rerr)
		}
	}
	if err != nil {
		fsys.Remove(name)
		return nil, 0, err
	}
	if err := fsys.SyncDir(dir); err != nil {
		// path is the new bundle, which a power cut may yet take back.
		return nil, 0, fmt.Errorf("bundle: %s is written but not durable: %w", path, err)
	}
	return m, size, nil
}
