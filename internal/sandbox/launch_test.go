//go:build unix

package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
)

// TestCommandLeadsGroup: whatever SysProcAttr a platform's Prepare chose,
// the started command leads its own process group, since that group is
// what the harness signals to end a call. The non-Linux Prepare returned
// an empty SysProcAttr, which replaced the tools' Setsid.
func TestCommandLeadsGroup(t *testing.T) {
	ws := t.TempDir()
	argv := []string{"sleep", "30"}
	env := []string{"PATH=/usr/bin:/bin"}
	unconfined, err := Config{Unconfined: true}.Prepare(ws, ws, argv, env)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		launch *Launch
	}{
		{"no SysProcAttr", &Launch{Path: argv[0], Args: argv, Env: env, Dir: ws}},
		{"empty SysProcAttr", &Launch{Path: argv[0], Args: argv, Env: env, Dir: ws, SysProcAttr: &syscall.SysProcAttr{}}},
		{"Setpgid joining another group", &Launch{Path: argv[0], Args: argv, Env: env, Dir: ws, SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pgid: os.Getpid()}}},
		{"Prepare, unconfined (" + runtime.GOOS + ")", unconfined},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer tc.launch.Close()
			cmd := tc.launch.Command(context.Background())
			if err := tc.launch.Start(cmd); err != nil {
				t.Fatal(err)
			}
			pid := cmd.Process.Pid
			defer func() {
				killGroup(cmd.Process)
				_ = cmd.Wait()
			}()
			pgid, err := syscall.Getpgid(pid)
			if err != nil {
				t.Fatal(err)
			}
			if pgid != pid {
				t.Errorf("pgid %d, want the child's own pid %d (the harness's group is %d)", pgid, pid, syscall.Getpgrp())
			}
		})
	}
}

// TestStartUnrecorded: a process that Started cannot record is killed and
// reaped by Start, which says so through cmd.ProcessState.
func TestStartUnrecorded(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("processes are recorded on Linux only")
	}
	ws := t.TempDir()
	blocker := filepath.Join(ws, "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := Config{Unconfined: true, Procs: filepath.Join(blocker, "procs")}.Prepare(ws, ws, []string{"sleep", "30"}, []string{"PATH=/usr/bin:/bin"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cmd := l.Command(context.Background())
	if err := l.Start(cmd); err == nil {
		killGroup(cmd.Process)
		_ = cmd.Wait()
		t.Fatal("Start recorded a process in a folder under a file")
	}
	if cmd.ProcessState == nil || cmd.ProcessState.Success() {
		t.Fatalf("process state %v, want killed and reaped", cmd.ProcessState)
	}
}
