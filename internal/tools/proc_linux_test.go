//go:build linux

package tools

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// groupMembers returns the live (non-zombie) processes whose process group
// is pgid, read from /proc.
func groupMembers(t *testing.T, pgid int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // exited meanwhile
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces and parens.
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) < 3 || fields[0] == "Z" || fields[0] == "X" {
			continue
		}
		if pg, _ := strconv.Atoi(fields[2]); pg == pgid {
			pids = append(pids, pid)
		}
	}
	return pids
}

// waitGroupGone fails the test unless the process group pgid has no live
// member within a short while (SIGKILL delivery is asynchronous).
func waitGroupGone(t *testing.T, pgid int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		pids := groupMembers(t, pgid)
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process group %d still has live members %v", pgid, pids)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// firstLineInt parses the first line of out as a number (a $$ echoed by a
// test script).
func firstLineInt(t *testing.T, out string) int {
	t.Helper()
	line, _, _ := strings.Cut(out, "\n")
	n, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("first line of output %q is not a pid", out)
	}
	return n
}
