package proxy

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"github.com/agentctl/agentctl/internal/heappeak"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/session"
)

// dropAfterHalf is an upstream that writes the first half of body as a
// chunked SSE answer, then closes the connection: no final chunk, as
// when a provider or the network drops mid-stream.
func dropAfterHalf(t *testing.T, body []byte) *httptest.Server {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", sse)
		w.WriteHeader(200)
		w.Write(body[:len(body)/2])
		w.(http.Flusher).Flush()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		conn.Close()
	}))
	t.Cleanup(up.Close)
	return up
}

// TestUpstreamDropsMidStream: when the upstream's stream breaks off, the
// client must see it broken (curl exits non-zero, Go's reader errors),
// not a clean end of a short answer, and the model_call says what broke.
func TestUpstreamDropsMidStream(t *testing.T) {
	answer := corpusFile(t, anDir+"tool_use_response.txt")
	up := dropAfterHalf(t, answer)
	u, err := NewUpstream(up.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, mem, base := startProxy(t, Config{Backend: u})

	t.Run("go client", func(t *testing.T) {
		resp, err := http.Post(base+"/s/goclient/v1/messages?beta=true", "application/json", strings.NewReader(messagesBody(true)))
		if err != nil {
			t.Fatal(err)
		}
		got, rerr := io.ReadAll(resp.Body)
		resp.Body.Close()
		if rerr == nil {
			t.Fatalf("read the answer: no error after %d of %d bytes: the client saw a clean end of a broken stream", len(got), len(answer))
		}
		if !bytes.Equal(got, answer[:len(answer)/2]) {
			t.Errorf("the client got %d bytes, want the %d the upstream sent", len(got), len(answer)/2)
		}
	})
	t.Run("curl", func(t *testing.T) {
		if _, err := exec.LookPath("curl"); err != nil {
			t.Skip("no curl")
		}
		out, err := exec.Command("curl", "-sS", "-N", "-o", "/dev/null", "-H", "content-type: application/json", "-H", "x-api-key: sk-ant-test",
			"--data-binary", messagesBody(true), base+"/s/curl/v1/messages").CombinedOutput()
		if err == nil {
			t.Fatalf("curl exited 0 on a stream that broke off (%s)", out)
		}
		t.Logf("curl: %v: %s", err, bytes.TrimSpace(out))
	})
	waitIdle(t, srv)
	for _, id := range []string{"goclient", "curl"} {
		mc := lastOf(mem.Get(id).Events(), session.KindModelCall)
		if mc.ErrorType != "connection_error" || !strings.Contains(mc.Error, "broke off after") {
			t.Errorf("session %s: model_call error %q (%s), want the break recorded as connection_error", id, mc.Error, mc.ErrorType)
		}
	}
}

// heapPeak is the most live heap above what it was before, while f runs.
func heapPeak(f func()) uint64 {
	base, peak := heappeak.During(f)
	if peak < base {
		return 0
	}
	return peak - base
}

// TestMemoryBounded: the proxy holds a bounded part of an answer whatever
// its size: a 256 MiB stream, and a gzip bomb (256 MiB of zeros in ~256
// KiB) that it passes on compressed and inflates only as far as it
// records. Both reach the client in full, and are recorded as too large
// to record. Before, the proxy held every byte (and its copies): GBs.
func TestMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 256 MiB")
	}
	const size = 256 << 20
	const bound = 128 << 20
	var bomb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&bomb, gzip.BestCompression)
	zeros := make([]byte, 1<<20)
	for i := 0; i < size/len(zeros); i++ {
		zw.Write(zeros)
	}
	zw.Close()

	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.Header.Get("X-Test-Bomb") != "" {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(bomb.Bytes())
			return
		}
		w.Header().Set("Content-Type", sse)
		fmt.Fprint(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5\",\"content\":[],\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n")
		fmt.Fprint(w, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
		delta := []byte("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"" + strings.Repeat("all work and no play ", 50) + "\"}}\n\n")
		chunk := bytes.Repeat(delta, (64<<10)/len(delta))
		for n := 0; n < size; n += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
		fmt.Fprint(w, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":9}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	}))
	t.Cleanup(up.Close)
	u, err := NewUpstream(up.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, mem, base := startProxy(t, Config{Backend: u})
	for _, tc := range []struct {
		name, session string
		stream        bool
		wantAtLeast   int64 // bytes the client gets
		wantAtMost    int64
	}{
		{"stream", "big", true, size, size + 1<<20},
		{"gzip bomb", "bomb", false, int64(bomb.Len()), int64(bomb.Len())},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got int64
			peak := heapPeak(func() {
				req, _ := http.NewRequestWithContext(context.Background(), "POST", base+"/s/"+tc.session+"/v1/messages", strings.NewReader(messagesBody(tc.stream)))
				req.Header.Set("Content-Type", "application/json")
				// Asked for explicitly, gzip is not inflated by Go's
				// transport: the test reads what the proxy sends.
				req.Header.Set("Accept-Encoding", "gzip")
				if tc.session == "bomb" {
					req.Header.Set("X-Test-Bomb", "1")
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				got, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != 200 {
					t.Fatalf("status %d, read %d bytes: %v", resp.StatusCode, got, err)
				}
			})
			t.Logf("%s: client got %d bytes; heap peak +%d MiB", tc.name, got, peak>>20)
			if got < tc.wantAtLeast || got > tc.wantAtMost {
				t.Errorf("client got %d bytes, want %d..%d", got, tc.wantAtLeast, tc.wantAtMost)
			}
			if peak > bound {
				t.Errorf("heap peak +%d MiB while proxying, want at most %d MiB", peak>>20, bound>>20)
			}
			waitIdle(t, srv)
			mc := lastOf(mem.Get(tc.session).Events(), session.KindModelCall)
			if mc.ErrorType != "response_too_large" || !strings.Contains(mc.Error, "the client got all of it") || !strings.Contains(string(mc.Attrs), `"response_bytes":`) {
				t.Errorf("model_call %q (%s) %s: want it recorded as too large, with its size", mc.Error, mc.ErrorType, mc.Attrs)
			}
		})
	}
}
