package ui_test

import (
	"bufio"
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/ui"
)

// TestShutdownEndsLiveStreams: a page left open on a running session holds
// an event stream; stopping the server ends it at once instead of waiting
// out Shutdown's timeout (it took 5 s before the requests lived under the
// server's context).
func TestShutdownEndsLiveStreams(t *testing.T) {
	home := newHome(t)
	id := startRunning(t, home)
	srv, err := ui.New(ui.Options{Store: recorder.Store{Root: home}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	req, _ := http.NewRequest("GET", "http://"+ln.Addr().String()+"/api/sessions/"+id+"/events?after=0", nil)
	req.Header.Set("Authorization", "Bearer "+srv.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("events: %s", resp.Status)
	}
	// The stream is open: its first event arrived.
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return within 10 s of its context ending")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("stopping with a live stream open took %v, want well under Shutdown's 5 s", d)
	}
}
