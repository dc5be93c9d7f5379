package recorder

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// leaseChild takes the lease of dir, says so, and holds it until killed.
func leaseChild(dir string) {
	l, err := AcquireLease(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	if os.Getenv(leaseForkEnv) != "" {
		// What a fork that has not exec'd yet holds: a copy of the lease
		// descriptor, here kept by a child for half a second.
		c := exec.Command("sleep", "0.5")
		c.ExtraFiles = []*os.File{l.f}
		if err := c.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
	}
	fmt.Println("ready")
	time.Sleep(time.Hour)
}

func TestLeaseHeldByOtherProcess(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), leaseChildEnv+"="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("child said %q, %v", line, err)
	}
	pid := cmd.Process.Pid

	_, err = AcquireLease(dir)
	var held *LeaseHeldError
	if !errors.As(err, &held) || !errors.Is(err, ErrLeaseHeld) {
		t.Fatalf("AcquireLease while a child holds it = %v, want *LeaseHeldError", err)
	}
	if held.Holder.PID != pid || held.Holder.AcquiredAt.IsZero() {
		t.Errorf("LeaseHeldError.Holder = %+v, want pid %d", held.Holder, pid)
	}
	if want := fmt.Sprintf("recorder: session is being written by pid %d on host ", pid); !strings.HasPrefix(err.Error(), want) ||
		!strings.Contains(err.Error(), "wait for it to finish or stop it") {
		t.Errorf("error = %q, want it to start %q and give a hint", err, want)
	}

	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	l, err := AcquireLease(dir)
	if err != nil {
		t.Fatalf("AcquireLease after the holder died = %v", err)
	}
	if l.Previous == nil || l.Previous.PID != pid {
		t.Errorf("Lease.Previous = %+v, want the dead child (pid %d)", l.Previous, pid)
	}
	if l.Info.PID != os.Getpid() {
		t.Errorf("Lease.Info.PID = %d, want %d", l.Info.PID, os.Getpid())
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	l, err = AcquireLease(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if l.Previous != nil {
		t.Errorf("Lease.Previous after a clean release = %+v, want nil", l.Previous)
	}
}

func TestLeaseSameProcess(t *testing.T) {
	dir := t.TempDir()
	l, err := AcquireLease(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = AcquireLease(dir)
	var held *LeaseHeldError
	if !errors.As(err, &held) || held.Holder.PID != os.Getpid() {
		t.Fatalf("second AcquireLease in one process = %v, want *LeaseHeldError naming pid %d", err, os.Getpid())
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err != nil {
		t.Errorf("second Release = %v, want nil", err)
	}
	l2, err := AcquireLease(dir)
	if err != nil {
		t.Fatalf("AcquireLease after Release = %v", err)
	}
	l2.Release()
}

// TestLeaseOfDeadHolderHeldByItsChild: a holder killed while a child it
// forked still holds a copy of the lease descriptor (a fork that has not
// exec'd yet) does not keep the session locked: AcquireLease waits for the
// child instead of reporting the dead holder as writing.
func TestLeaseOfDeadHolderHeldByItsChild(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), leaseChildEnv+"="+dir, leaseForkEnv+"=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("child said %q, %v", line, err)
	}
	pid := cmd.Process.Pid
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	l, err := AcquireLease(dir)
	if err != nil {
		t.Fatalf("AcquireLease after the holder died, its child still holding the file = %v", err)
	}
	defer l.Release()
	if l.Previous == nil || l.Previous.PID != pid {
		t.Errorf("Lease.Previous = %+v, want the dead holder (pid %d)", l.Previous, pid)
	}
}

// TestLeaseReleasedWhileAChildHoldsACopy: a lease released by this process
// while a child it forked (another goroutine starting a tool, say) still
// holds a copy of the descriptor is neither live nor held for long.
func TestLeaseReleasedWhileAChildHoldsACopy(t *testing.T) {
	dir := t.TempDir()
	l, err := AcquireLease(dir)
	if err != nil {
		t.Fatal(err)
	}
	c := exec.Command("sleep", "0.4")
	c.ExtraFiles = []*os.File{l.f}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Wait()
	if !Live(dir) {
		t.Fatal("Live while this process holds the lease = false")
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if Live(dir) {
		t.Error("Live after the release, a child holding a copy = true, want false once the copy is gone")
	}
	l2, err := AcquireLease(dir)
	if err != nil {
		t.Fatalf("AcquireLease after the release = %v", err)
	}
	l2.Release()
}
