package recorder

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/session"
)

// TestFollow: Follow hands over the events so far and then each appended
// one, across frames larger than its read buffer, and ends when the
// session finishes, when its writer lets go without finishing (a
// collector closing a production session), or when ctx is cancelled.
func TestFollow(t *testing.T) {
	big := string(make([]byte, 200<<10)) // larger than the 64 KiB read buffer
	for _, end := range []string{"finished", "closed", "cancelled"} {
		t.Run(end, func(t *testing.T) {
			st := Store{Root: t.TempDir()}
			w, err := st.Create(session.Event{Name: "follow"}, Options{NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var mu sync.Mutex
			var got []session.Event
			done := make(chan error, 1)
			go func() {
				done <- st.Follow(ctx, w.ID, func(e session.Event) error {
					mu.Lock()
					got = append(got, e)
					mu.Unlock()
					return nil
				})
			}()
			waitFor := func(n int) {
				t.Helper()
				for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
					mu.Lock()
					k := len(got)
					mu.Unlock()
					if k >= n {
						return
					}
				}
				t.Fatalf("follow handed over fewer than %d events", n)
			}
			waitFor(1)
			for i := range 3 {
				text := "turn"
				if i == 1 {
					text = big
				}
				if _, err := w.Append(session.Event{Kind: session.KindUserMessage, Text: text}); err != nil {
					t.Fatal(err)
				}
				waitFor(2 + i)
			}
			select {
			case err := <-done:
				t.Fatalf("follow ended (%v) while the session is written", err)
			case <-time.After(3 * FollowPoll):
			}
			switch end {
			case "finished":
				if _, err := w.Append(session.Event{Kind: session.KindSessionFinished, Status: string(session.StatusDone)}); err != nil {
					t.Fatal(err)
				}
				defer w.Close()
			case "closed":
				w.Append(session.Event{Kind: session.KindUserMessage, Text: "last"})
				w.Close()
			case "cancelled":
				cancel()
				defer w.Close()
			}
			select {
			case err := <-done:
				if err != nil && end != "cancelled" {
					t.Fatalf("follow: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("follow did not end")
			}
			want := map[string]int{"finished": 5, "closed": 5, "cancelled": 4}[end]
			if len(got) != want {
				t.Fatalf("%d events, want %d", len(got), want)
			}
			for i, e := range got {
				if e.Seq != int64(i+1) {
					t.Errorf("event %d has seq %d", i, e.Seq)
				}
			}
			if len(got[2].Text) != len(big) {
				t.Errorf("the large event came through with %d bytes, want %d", len(got[2].Text), len(big))
			}
		})
	}
}
