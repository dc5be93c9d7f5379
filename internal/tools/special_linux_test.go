//go:build linux

package tools

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// specialFixture is a workspace holding the files an agent's bash can make
// to hang or sink the harness: a named pipe with no writer, a sparse 20 GiB
// file, a unix socket, a link to /dev/zero, and (where this process may
// mknod, as root can) a real /dev/zero device node inside the workspace.
func specialFixture(t *testing.T) (ws string, device bool) {
	t.Helper()
	ws = t.TempDir()
	writeTree(t, ws, map[string]string{"notes.txt": "needle\n", "zero": "->/dev/zero"})
	if err := syscall.Mkfifo(filepath.Join(ws, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	big, err := os.Create(filepath.Join(ws, "big"))
	if err != nil {
		t.Fatal(err)
	}
	if err := big.Truncate(20 << 30); err != nil {
		t.Fatal(err)
	}
	big.Close()
	ln, err := net.Listen("unix", filepath.Join(ws, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	err = syscall.Mknod(filepath.Join(ws, "dev"), syscall.S_IFCHR|0o666, 1<<8|5) // 1:5 is /dev/zero
	return ws, err == nil
}

// TestSpecialFilesRefused: every file tool refuses what is not a regular
// file, and a file over MaxFileSize, at once and with a clear error: no
// call blocks on the pipe or reads the 20 GiB.
func TestSpecialFilesRefused(t *testing.T) {
	ws, device := specialFixture(t)
	tests := []struct {
		tool string
		args map[string]string
		want string
	}{
		{NameReadFile, map[string]string{"path": "fifo"}, "read fifo: not a regular file (named pipe); the file tools read and write regular files only"},
		{NameEditFile, map[string]string{"path": "fifo", "old": "a", "new": "b"}, "edit fifo: not a regular file (named pipe)"},
		{NameWriteFile, map[string]string{"path": "fifo", "content": "x"}, "write fifo: not a regular file (named pipe)"},
		{NameReadFile, map[string]string{"path": "big"}, "read big: the file is 20.0 GiB, over the read limit of 16.0 MiB; read a part of it with bash"},
		{NameEditFile, map[string]string{"path": "big", "old": "a", "new": "b"}, "edit big: the file is 20.0 GiB, over the read limit of 16.0 MiB"},
		{NameReadFile, map[string]string{"path": "sock"}, "read sock: not a regular file (socket)"},
		{NameWriteFile, map[string]string{"path": "sock", "content": "x"}, "write sock: not a regular file (socket)"},
		{NameReadFile, map[string]string{"path": "zero"}, "path escapes the workspace: zero"},
		{NameEditFile, map[string]string{"path": "zero", "old": "a", "new": "b"}, "path escapes the workspace: zero"},
		{NameGrep, map[string]string{"pattern": "x", "path": "zero"}, "path escapes the workspace: zero"},
	}
	if device {
		tests = append(tests,
			struct {
				tool string
				args map[string]string
				want string
			}{NameReadFile, map[string]string{"path": "dev"}, "read dev: not a regular file (character device)"},
			struct {
				tool string
				args map[string]string
				want string
			}{NameEditFile, map[string]string{"path": "dev", "old": "a", "new": "b"}, "edit dev: not a regular file (character device)"})
	} else {
		t.Log("no device node: this process may not mknod")
	}
	for _, tt := range tests {
		began := time.Now()
		got := run(t, tt.tool, ws, tt.args)
		if got.Status != statusError || !strings.HasPrefix(got.Error, tt.want) {
			t.Errorf("%s(%v) = %+v, want an error starting %q", tt.tool, tt.args, got, tt.want)
		}
		if d := time.Since(began); d > 2*time.Second {
			t.Errorf("%s(%v) took %s", tt.tool, tt.args, d)
		}
	}
	if fi, err := os.Stat(filepath.Join(ws, "big")); err != nil || fi.Size() != 20<<30 {
		t.Errorf("big after the calls: %v, %v; want it untouched", fi, err)
	}
}

// TestGrepSkipsSpecialFiles: grep over the workspace searches the regular
// files and says which others it skipped and why.
func TestGrepSkipsSpecialFiles(t *testing.T) {
	ws, device := specialFixture(t)
	writeTree(t, ws, map[string]string{"limit": strings.Repeat("needle\n", MaxFileSize/7+1)})
	got := run(t, NameGrep, ws, map[string]string{"pattern": "needle"})
	want := "notes.txt:1: needle\n" +
		"[skipped big: the file is 20.0 GiB, over the read limit of 16.0 MiB]\n"
	if device {
		want += "[skipped dev: not a regular file (character device)]\n"
	}
	want += "[skipped fifo: not a regular file (named pipe)]\n" +
		"[skipped limit: the file is 16.0 MiB, over the read limit of 16.0 MiB]\n" +
		"[skipped sock: not a regular file (socket)]\n"
	if got.Status != statusOK || got.Output != want {
		t.Errorf("grep(needle) = %+v, want output\n%s", got, want)
	}
}

// TestFileToolsHonourTimeout: a walk over a large tree stops at the
// call's timeout with "timed out", and at a cancelled context with
// "cancelled", instead of running to its end.
func TestFileToolsHonourTimeout(t *testing.T) {
	ws := t.TempDir()
	files := map[string]string{}
	for i := range 2000 {
		files[fmt.Sprintf("d%02d/f%04d.txt", i%40, i)] = strings.Repeat("hay\n", 256)
	}
	writeTree(t, ws, files)
	grep := func(ctx context.Context, timeout time.Duration) (Result, time.Duration) {
		began := time.Now()
		res := builtinTool(t, NameGrep).Run(ctx, Call{Args: []byte(`{"pattern":"needle"}`), Workspace: ws, Timeout: timeout})
		return res, time.Since(began)
	}
	full, took := grep(context.Background(), 0)
	t.Logf("a full grep takes %s", took)
	if full.Status != statusOK {
		t.Fatalf("grep without a timeout = %+v", full)
	}
	timeout := took / 10
	got, d := grep(context.Background(), timeout)
	if got.Status != statusError || got.Error != fmt.Sprintf("timed out after %s", timeout) || d > took/2 {
		t.Errorf("grep with timeout %s (a full run takes %s) = %+v after %s; want timed out well before the end", timeout, took, got, d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(timeout, cancel)
	got, d = grep(ctx, 0)
	if got.Status != statusCancelled || d > took/2 {
		t.Errorf("grep cancelled after %s (a full run takes %s) = %+v after %s; want cancelled", timeout, took, got, d)
	}
}

// TestReadCapped: a file that grows past MaxFileSize after its size was
// checked is refused, not read on without end.
func TestReadCapped(t *testing.T) {
	f, err := os.Open("/dev/zero")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = readAll(context.Background(), f, "edit", "z")
	if !errors.Is(err, ErrTooBig) || err.Error() != "edit z: the file grew, over the read limit of 16.0 MiB; read a part of it with bash (head -c, tail -c, sed -n) where bash is offered" {
		t.Errorf("readAll(/dev/zero) = %v, want ErrTooBig", err)
	}
}
