package recorder

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/session"
)

// crashChild creates the log at path and appends from several goroutines
// until it is killed, writing each acknowledged seq on its own line to
// stdout after Append returns. Each line set is one write, so a kill never
// leaves half a line that reads as another number.
func crashChild(path string) {
	w, err := Create(path, session.Event{Kind: session.KindSessionStarted, Name: "crash"}, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	var mu sync.Mutex
	fmt.Fprintln(os.Stdout, 1)
	for g := range 8 {
		go func() {
			for i := 0; ; i++ {
				evs := make([]session.Event, 1+i%3)
				for j := range evs {
					// Mostly small events, and now and then a large one, so
					// that a kill can land inside a write.
					size := (g*31 + i*7 + j) % 300
					if (i+g)%16 == 0 {
						size = 256 << 10
					}
					evs[j] = session.Event{Kind: session.KindUserMessage, Text: strings.Repeat("x", size)}
				}
				got, err := w.Append(evs...)
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(3)
				}
				var sb strings.Builder
				for _, ev := range got {
					fmt.Fprintf(&sb, "%d\n", ev.Seq)
				}
				mu.Lock()
				os.Stdout.WriteString(sb.String())
				mu.Unlock()
			}
		}()
	}
	time.Sleep(time.Hour)
}

// TestCrashRealProcess kills a child process that appends concurrently at
// random moments, then checks that every acknowledged event survived, that
// seqs are dense, and that the log reopens and continues.
func TestCrashRealProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	seed := time.Now().UnixNano()
	if s := os.Getenv("AGENTCTL_RECORDER_SEED"); s != "" { // to rerun a failure
		seed, _ = strconv.ParseInt(s, 10, 64)
	}
	t.Logf("seed %d (rerun with AGENTCTL_RECORDER_SEED=%[1]d)", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	const iterations = 20
	total, torn := 0, 0
	for it := range iterations {
		path := filepath.Join(t.TempDir(), LogFile)
		acked, stderr := runAndKill(t, path, time.Duration(rng.IntN(150))*time.Millisecond, it%2 == 1)

		evs, tail, err := ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			if len(acked) > 0 {
				t.Fatalf("iteration %d: log missing after %d acks", it, len(acked))
			}
			continue
		}
		if err != nil {
			t.Fatalf("iteration %d: ReadFile: %v (child stderr %q)", it, err, stderr)
		}
		n := int64(len(evs))
		for i, ev := range evs {
			if ev.Seq != int64(i+1) {
				t.Fatalf("iteration %d: event %d has seq %d", it, i, ev.Seq)
			}
		}
		if n == 0 || evs[0].Kind != session.KindSessionStarted {
			t.Fatalf("iteration %d: log has %d events and no session_started first", it, n)
		}
		seen := map[int64]bool{}
		for _, s := range acked {
			if seen[s] {
				t.Fatalf("iteration %d: seq %d acknowledged twice", it, s)
			}
			seen[s] = true
			if s < 1 || s > n {
				t.Fatalf("iteration %d: acknowledged seq %d missing from a log of %d events", it, s, n)
			}
		}
		total += len(acked)
		if tail.Torn {
			torn++
		}

		w, rec, err := OpenWriter(path, Options{})
		if err != nil {
			t.Fatalf("iteration %d: OpenWriter: %v", it, err)
		}
		if rec.Truncated != tail.Torn || rec.GoodSize != tail.GoodSize {
			t.Errorf("iteration %d: recovery %+v after reading %+v", it, rec, tail)
		}
		got, err := w.Append(session.Event{Kind: session.KindInterrupted})
		if err != nil || got[0].Seq != n+1 {
			t.Fatalf("iteration %d: Append after reopen = %v, %v; want seq %d", it, seqs(got), err, n+1)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		evs, tail, err = ReadFile(path)
		if err != nil || tail.Torn || int64(len(evs)) != n+1 {
			t.Fatalf("iteration %d: after reopen ReadFile = %d events, %+v, %v; want %d clean", it, len(evs), tail, err, n+1)
		}
	}
	t.Logf("%d iterations, %d acknowledged events checked, %d torn tails", iterations, total, torn)
	if total == 0 {
		t.Fatal("no child acknowledged any event: the test checked nothing")
	}
}

// runAndKill starts a crash child on path, SIGKILLs it after delay, and
// returns the seqs it acknowledged (complete lines only) and its stderr.
// runAndKill starts the child and SIGKILLs it delay after it started or,
// with afterAck, delay after its first acknowledged append (so that a
// slow start on a loaded machine cannot make every kill land before any
// event was written).
func runAndKill(t *testing.T, path string, delay time.Duration, afterAck bool) ([]int64, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+path)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var acked []int64
	done := make(chan error, 1)
	first := make(chan struct{}) // closed at the first ack, or when the output ends
	var once sync.Once
	go func() {
		defer once.Do(func() { close(first) })
		br := bufio.NewReader(out)
		for {
			line, err := br.ReadString('\n')
			if err != nil { // io.EOF; an unterminated line is dropped
				if errors.Is(err, io.EOF) {
					err = nil
				}
				done <- err
				return
			}
			s, err := strconv.ParseInt(strings.TrimSuffix(line, "\n"), 10, 64)
			if err != nil {
				done <- fmt.Errorf("child wrote %q", line)
				return
			}
			acked = append(acked, s)
			if len(acked) == 1 {
				once.Do(func() { close(first) })
			}
		}
	}()
	if afterAck {
		select {
		case <-first:
		case <-time.After(30 * time.Second):
		}
	}
	time.Sleep(delay)
	cmd.Process.Signal(syscall.SIGKILL)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if strings.Contains(stderr.String(), "recorder:") {
		t.Fatalf("child failed: %s", stderr.String())
	}
	return acked, stderr.String()
}
