package crashtest

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestDuplicatedLines holds the workspace oracle to what a duplicate is:
// an effect done twice, never an effect not done by a run that stopped for
// a human. The workspaces are real folders hashed as a crash test does.
func TestDuplicatedLines(t *testing.T) {
	// file is the workspace's one file before the call, the uncrashed
	// run's after it, at the crash, and at the end of the crashed run.
	tests := []struct {
		name            string
		before, after   string
		atCrash, final  string
		stoppedForHuman bool
		want            int
	}{
		// echo x >> file on a file without a final newline changes its
		// last line: not done at all is no duplicate.
		{"no newline, crash before the call, not done", "base", "basex\n", "base", "base", true, 0},
		{"no newline, done once in the tool", "base", "basex\n", "basex\n", "basex\n", true, 0},
		{"no newline, done in the tool and again by resume", "base", "basex\n", "basex\n", "basex\nx\n", true, 1},
		{"no newline, done once by the resume", "base", "basex\n", "base", "basex\n", true, 0},
		{"newline, not done", "base\n", "base\nx\n", "base\n", "base\n", true, 0},
		{"newline, done once", "base\n", "base\nx\n", "base\nx\n", "base\nx\n", true, 0},
		{"newline, done twice", "base\n", "base\nx\n", "base\nx\n", "base\nx\nx\n", true, 1},
		// a run that went on to the end is held to the uncrashed end.
		{"done, twice", "base\n", "base\nx\n", "base\nx\n", "base\nx\nx\n", false, 1},
		{"done, as uncrashed", "base\n", "base\nx\n", "base\n", "base\nx\n", false, 0},
	}
	lines := func(t *testing.T, content string) map[string]int {
		t.Helper()
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "file"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		_, l, err := hashTree(dir)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := duplicatedLines(lines(t, tt.final), lines(t, tt.after), lines(t, tt.atCrash), tt.stoppedForHuman)
			if got != tt.want {
				t.Errorf("duplicatedLines = %d, want %d", got, tt.want)
			}
		})
	}
}

// TestChildEnv: the children run with the failpoint, leave the Parquet
// history alone (cli's sealSession reads NoSealEnv; crashtest_no_seal.txtar
// holds that side) and skip fsync unless Options.Fsync keeps it.
func TestChildEnv(t *testing.T) {
	has := func(env []string, kv string) bool { return slices.Contains(env, kv) }
	env := Options{}.childEnv("after:3")
	if !has(env, "AGENTCTL_FAILPOINT=after:3") || !has(env, NoSealEnv+"=1") || !has(env, NoSyncEnv+"=1") {
		t.Errorf("child environment lacks the failpoint, %s or %s", NoSealEnv, NoSyncEnv)
	}
	if env := (Options{Fsync: true}).childEnv(""); has(env, NoSyncEnv+"=1") || !has(env, NoSealEnv+"=1") {
		t.Errorf("with Fsync the child skips fsync, or seals")
	}
}
