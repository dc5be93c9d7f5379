package bundle

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/klauspost/compress/zstd"

	"github.com/agentctl/agentctl/redact"
)

// frameSize is the chunk of the workspace tar that becomes one zstd frame
// when the workspace is compressed on several goroutines: about the window
// of `zstd -3`, so frames lose little ratio by starting without history.
const frameSize = 2 << 20

// writeWorkspace writes the folder ws to w as a tar.zst stream. Regular
// files, folders and symlinks (as links) are kept; sockets and devices are
// left out. Owners are not recorded. Files named .env* are redacted. With
// opts.Concurrency above 1 the stream is a sequence of independent frames
// compressed in parallel (see frameWriter); else one frame.
func writeWorkspace(ctx context.Context, w io.Writer, ws string, red *redact.Redactor, opts Options) (err error) {
	var enc io.WriteCloser
	if opts.Concurrency > 1 {
		z, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(opts.Level), zstd.WithEncoderConcurrency(opts.Concurrency),
			zstd.WithWindowSize(frameSize), zstd.WithLowerEncoderMem(true))
		if err != nil {
			return fmt.Errorf("bundle: workspace: %w", err)
		}
		enc = newFrameWriter(w, z, opts.Concurrency, frameSize)
	} else {
		z, err := zstd.NewWriter(w, zstd.WithEncoderLevel(opts.Level), zstd.WithEncoderConcurrency(1),
			zstd.WithWindowSize(frameSize), zstd.WithLowerEncoderMem(true))
		if err != nil {
			return fmt.Errorf("bundle: workspace: %w", err)
		}
		enc = z
	}
	tw := tar.NewWriter(enc)
	buf := make([]byte, 64<<10)
	walkErr := filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(ws, p)
		if err != nil || rel == "." {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		} else if !info.IsDir() && !info.Mode().IsRegular() {
			return nil
		}
		hdr, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		if info.IsDir() {
			hdr.Name += "/"
		}
		hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "", ""
		hdr.Format = tar.FormatPAX
		if !info.Mode().IsRegular() {
			return tw.WriteHeader(hdr)
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		var r io.Reader = io.LimitReader(in, info.Size())
		if strings.HasPrefix(d.Name(), ".env") && info.Size() <= 1<<20 {
			b, err := io.ReadAll(r)
			if err != nil {
				return err
			}
			b = []byte(red.String(string(b)))
			hdr.Size = int64(len(b))
			r = bytes.NewReader(b)
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		n, err := io.CopyBuffer(tw, r, buf)
		if err == nil && n != hdr.Size {
			err = fmt.Errorf("%s shrank while it was read", p)
		}
		return err
	})
	if walkErr != nil {
		enc.Close()
		return fmt.Errorf("bundle: workspace %s: %w", ws, walkErr)
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("bundle: workspace: %w", err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("bundle: workspace: %w", err)
	}
	return nil
}

// gitArgs keep a workspace's own git configuration from running anything:
// the workspace was written by an agent, and git config can name commands.
var gitArgs = []string{"-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "core.pager=cat",
	"-c", "diff.external=", "-c", "core.quotepath=off"}

func git(ctx context.Context, ws string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "git", append(append([]string{"-C", ws}, gitArgs...), args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0")
	return cmd
}

// initializerCommit is the commit the run started from: the workspace SHA
// of its first checkpoint, else the repository's first commit. It is empty
// when ws is not a git repository with a commit.
func initializerCommit(ws, checkpoints string) string {
	if _, err := os.Stat(filepath.Join(ws, ".git")); err != nil {
		return ""
	}
	if _, first := checkpointSHAs(checkpoints); first != "" {
		if git(context.Background(), ws, "cat-file", "-e", first+"^{commit}").Run() == nil {
			return first
		}
	}
	out, err := git(context.Background(), ws, "rev-list", "--max-parents=0", "HEAD").Output()
	if err != nil {
		return ""
	}
	lines := strings.Fields(string(out))
	if len(lines) == 0 {
		return ""
	}
	return lines[len(lines)-1]
}

// gitDiff writes the diff of the working tree against base, then a
// new-file diff for each untracked file that is not ignored. No external
// diff or textconv program runs.
func gitDiff(ctx context.Context, ws, base string, w io.Writer) error {
	fmt.Fprintf(w, "# git diff %s (working tree, untracked files included)\n", base)
	cmd := git(ctx, ws, "diff", "--no-ext-diff", "--no-textconv", "--no-color", "--binary", base, "--")
	cmd.Stdout = w
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("git diff %s: %v: %s", base, err, strings.TrimSpace(stderr.String()))
	}
	out, err := git(ctx, ws, "ls-files", "--others", "--exclude-standard", "-z").Output()
	if err != nil {
		return fmt.Errorf("git ls-files: %w", err)
	}
	for i, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if name == "" {
			continue
		}
		if i >= 10000 {
			fmt.Fprintf(w, "# more untracked files left out\n")
			break
		}
		cmd := git(ctx, ws, "diff", "--no-index", "--no-ext-diff", "--no-textconv", "--no-color", "--binary", "--", "/dev/null", name)
		cmd.Stdout = w
		if err := cmd.Run(); err != nil {
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 { // 1: the files differ
				return fmt.Errorf("git diff %s: %w", name, err)
			}
		}
	}
	if lr, ok := w.(*lineRedactor); ok {
		return lr.flush()
	}
	return nil
}
