package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// sweepWait bounds how long Sweep waits for a killed process to be gone.
const sweepWait = 5 * time.Second

// writeRecord stores r in dir as <pid>.json, whole or not at all.
func writeRecord(dir string, r Record) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	b, err := json.Marshal(r)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, strconv.Itoa(r.PID)+".json")
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return "", err
	}
	return path, nil
}

// recordOf fills a Record for a process just started.
func recordOf(pid int, kind, program string, cg *callCgroup) (Record, error) {
	st, err := procStat(pid)
	if err != nil {
		return Record{}, fmt.Errorf("read the start time of pid %d: %w", pid, err)
	}
	return Record{PID: pid, Start: st.start, Kind: kind, Program: program, Time: time.Now().UTC(), Cgroup: cg}, nil
}

// same reports whether the process r names is still alive (not a zombie)
// and is the one recorded, by its start time.
func (r Record) same() bool {
	st, err := procStat(r.PID)
	return err == nil && st.start == r.Start && st.state != 'Z' && st.state != 'X'
}

// groupMembers lists the live processes of process group pgid.
func groupMembers(pgid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := procStat(pid); err == nil && st.pgrp == pgid && st.state != 'Z' && st.state != 'X' {
			out = append(out, pid)
		}
	}
	return out
}

// Sweep proves that no process recorded in dir (Config.Procs) is still
// running, before a resumed session reconciles what those processes were
// doing: every recorded process that is alive and has the recorded start
// time is killed (a sandbox init takes its whole PID namespace with it;
// an unconfined tool takes its process group), what is left in its
// cgroup is killed, and Sweep waits until all of it is gone. Records are
// removed. It returns what it killed, and an error when something could
// not be killed in time: the caller must then not go on.
//
// Only the owner of the session (the holder of its lease) may call it.
func Sweep(dir string) ([]Swept, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sandbox: read the process records: %w", err)
	}
	var out []Swept
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		if !strings.HasSuffix(e.Name(), ".json") {
			os.Remove(path) // a record cut short by a crash while written
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return out, fmt.Errorf("sandbox: read %s: %w", path, err)
		}
		var r Record
		if err := json.Unmarshal(b, &r); err != nil || r.PID <= 1 {
			return out, fmt.Errorf("sandbox: %s is not a process record (%v); check for processes of an earlier run by hand, then remove it", path, err)
		}
		n, err := sweepOne(r)
		if err != nil {
			return out, fmt.Errorf("sandbox: %s (pid %d, recorded in %s): %w", r.Program, r.PID, path, err)
		}
		if n > 0 {
			out = append(out, Swept{Record: r, Processes: n})
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return out, err
		}
	}
	return out, nil
}

func sweepOne(r Record) (int, error) {
	n := 0
	if r.same() {
		if err := syscall.Kill(r.PID, syscall.SIGKILL); err == nil {
			n++
		}
	}
	if r.Kind == KindUnconfined {
		// The group outlives its leader; its number cannot be reused while
		// a member lives, so every member is one of ours.
		for _, pid := range groupMembers(r.PID) {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				n++
			}
		}
	}
	n += r.Cgroup.kill(sweepWait)
	deadline := time.Now().Add(sweepWait)
	for r.same() || (r.Kind == KindUnconfined && len(groupMembers(r.PID)) > 0) {
		if time.Now().After(deadline) {
			return n, fmt.Errorf("still alive %s after SIGKILL; kill it by hand, then resume again", sweepWait)
		}
		time.Sleep(10 * time.Millisecond)
	}
	r.Cgroup.remove()
	return n, nil
}
