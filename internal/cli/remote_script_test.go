package cli_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agentctl/agentctl/internal/remote"
	"github.com/agentctl/agentctl/internal/remote/weedtest"
)

// scriptCondition answers the scripts' own conditions. [weed]: whether
// the scripts against a real S3 server run; they do when
// $AGENTCTL_WEED_BIN is set, and in CI always (where s3server then fails
// if the variable is missing). [npmagents]: .ci/run installed the real
// external agents (AGENTCTL_NPM_AGENTS); set, the scripts that use them
// must pass.
func scriptCondition(cond string) (bool, error) {
	switch cond {
	case "weed":
		return os.Getenv(weedtest.BinEnv) != "" || os.Getenv("CI") != "", nil
	case "npmagents":
		return os.Getenv("AGENTCTL_NPM_AGENTS") != "", nil
	case "npmgemini":
		return os.Getenv("AGENTCTL_NPM_GEMINI") != "", nil
	case "mknod":
		// A device node made in a temp folder (the /dev/null doubles of
		// output_special_files): root, or CAP_MKNOD.
		dir, err := os.MkdirTemp("", "agentctl-mknod-")
		if err != nil {
			return false, err
		}
		defer os.RemoveAll(dir)
		return exec.Command("mknod", filepath.Join(dir, "null"), "c", "1", "3").Run() == nil, nil
	case "tmpfs":
		// A small tmpfs in a private mount namespace (full-disk tests):
		// root, or a user namespace that allows it.
		dir, err := os.MkdirTemp("", "agentctl-tmpfs-")
		if err != nil {
			return false, err
		}
		defer os.Remove(dir)
		return exec.Command("unshare", "-m", "sh", "-c", `mount -t tmpfs -o size=64k tmpfs "$0"`, dir).Run() == nil, nil
	}
	return false, fmt.Errorf("unknown condition %q", cond)
}

// s3server: start SeaweedFS (internal/remote/weedtest) for the rest of the script,
// make the bucket "runs", and set AWS_ENDPOINT_URL, the credentials and
// AGENTCTL_REMOTE=s3://runs/agentctl for the commands that follow.
func s3Server(ts *testscript.TestScript, neg bool, args []string) {
	bin := os.Getenv(weedtest.BinEnv)
	if bin == "" {
		ts.Fatalf("$%s is not set: .ci/run builds SeaweedFS from tools/seaweedfs and sets it", weedtest.BinEnv)
	}
	srv, stop, err := weedtest.StartProcess(bin, ts.MkAbs("."))
	if err != nil {
		ts.Fatalf("s3server: %v", err)
	}
	ts.Defer(stop)
	for k, v := range srv.Env() {
		ts.Setenv(k, v)
	}
	url, err := srv.MakeBucket("runs", "agentctl")
	if err != nil {
		ts.Fatalf("s3server: %v", err)
	}
	ts.Setenv(remote.Env, url)
}

// s3 ls PREFIX | s3 put KEY FILE | s3 get KEY FILE: look at or change the
// bucket of $AGENTCTL_REMOTE behind agentctl's back. ls prints one key per
// line; put's KEY given as @FILE is the key that file holds.
func s3Cmd(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 {
		ts.Fatalf("usage: s3 ls PREFIX | s3 put KEY FILE | s3 get KEY FILE")
	}
	ctx := context.Background()
	st, err := remote.NewS3Static(ts.Getenv(remote.Env), ts.Getenv("AWS_ENDPOINT_URL"), ts.Getenv("AWS_ACCESS_KEY_ID"), ts.Getenv("AWS_SECRET_ACCESS_KEY"))
	ts.Check(err)
	switch args[0] {
	case "ls":
		objs, err := st.List(ctx, args[1])
		ts.Check(err)
		var b strings.Builder
		for _, o := range objs {
			fmt.Fprintln(&b, o.Key)
		}
		fmt.Fprint(ts.Stdout(), b.String())
	case "put":
		key := args[1]
		if f, ok := strings.CutPrefix(key, "@"); ok {
			key = strings.TrimSpace(ts.ReadFile(f)) // a key a script computed
		}
		_, err := st.Put(ctx, key, []byte(ts.ReadFile(args[2])), remote.Cond{})
		ts.Check(err)
	case "get":
		b, _, err := st.Get(ctx, args[1], remote.MaxObjectBytes)
		ts.Check(err)
		ts.Check(os.WriteFile(ts.MkAbs(args[2]), b, 0o644))
	default:
		ts.Fatalf("s3: unknown subcommand %q", args[0])
	}
}
