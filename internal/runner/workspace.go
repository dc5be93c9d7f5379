package runner

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/agentctl/agentctl/internal/spec"
)

// prepareWorkspace gives the session its own workspace: a copy of
// workspace.from, the folder named by workspace.path used in place, or an
// empty folder.
func prepareWorkspace(sp *spec.Spec, ws string) error {
	if sp.Workspace.Path != "" {
		fi, err := os.Stat(ws)
		if err != nil {
			return fmt.Errorf("workspace.path: %w", err)
		}
		if !fi.IsDir() {
			return fmt.Errorf("workspace.path %s is not a folder", ws)
		}
		return nil
	}
	if sp.Workspace.From == "" {
		return os.MkdirAll(ws, 0o755)
	}
	// The folder is the session's own: a copy cut short by a crash is
	// replaced, never merged.
	if err := os.RemoveAll(ws); err != nil {
		return fmt.Errorf("reset the session workspace: %w", err)
	}
	if err := CopyTree(sp.Workspace.From, ws); err != nil {
		return fmt.Errorf("copy workspace.from %s: %w", sp.Workspace.From, err)
	}
	return nil
}

// CopyTree copies a folder with its modes; symlinks are copied as links
// (the path confinement of tools refuses those that point outside).
func CopyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(target, info.Mode().Perm()|0o700)
		case info.Mode()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case info.Mode().IsRegular():
			return copyFile(p, target, info.Mode().Perm())
		}
		return nil // sockets, devices: not part of a workspace
	})
}

func copyFile(src, dst string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// specHash fingerprints the resolved spec (spec.Spec.Hash).
func specHash(sp *spec.Spec) string { return sp.Hash() }
