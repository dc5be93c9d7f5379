package proxy

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/session"
)

// TestUpstreamGzip: gzip is asked of the upstream only when the client
// takes it, and then passed on as it came (the client gets the upstream's
// bytes); what is recorded is the answer inflated. Encodings the proxy
// could not inflate to record (br, zstd) are never asked for.
func TestUpstreamGzip(t *testing.T) {
	answer := corpusFile(t, anDir+"basic_response.txt")
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	zw.Write(answer)
	zw.Close()
	asked := make(chan string, 4)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		asked <- r.Header.Get("Accept-Encoding")
		w.Header().Set("Content-Type", sse)
		if r.Header.Get("Accept-Encoding") == "gzip" {
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(zipped.Bytes())
			return
		}
		w.Write(answer)
	}))
	t.Cleanup(up.Close)
	u, err := NewUpstream(up.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, mem, base := startProxy(t, Config{Backend: u})
	for _, tc := range []struct {
		name, accept, asked, encoding string
		want                          []byte
	}{
		{"claude code", "gzip, deflate, br, zstd", "gzip", "gzip", zipped.Bytes()},
		{"weighted", "br;q=1.0, gzip;q=0.5", "gzip", "gzip", zipped.Bytes()},
		{"gzip refused", "gzip;q=0, br", "identity", "", answer},
		{"none", "", "identity", "", answer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := strings.ReplaceAll(tc.name, " ", "-")
			req, _ := http.NewRequest("POST", base+"/s/"+id+"/v1/messages", strings.NewReader(messagesBody(true)))
			req.Header.Set("Content-Type", "application/json")
			if tc.accept != "" {
				req.Header.Set("Accept-Encoding", tc.accept)
			} else {
				// Go's transport would ask for gzip itself.
				req.Header.Set("Accept-Encoding", "identity")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if a := <-asked; a != tc.asked {
				t.Errorf("upstream was asked for %q, want %q", a, tc.asked)
			}
			if resp.Header.Get("Content-Encoding") != tc.encoding || !bytes.Equal(got, tc.want) {
				t.Errorf("client got %d bytes, Content-Encoding %q; want the upstream's %d bytes, %q", len(got), resp.Header.Get("Content-Encoding"), len(tc.want), tc.encoding)
			}
			waitIdle(t, srv)
			evs := mem.Get(id).Events()
			if mc := lastOf(evs, session.KindModelCall); mc.Error != "" || mc.OutputTokens == 0 {
				t.Errorf("model_call = %+v: want the inflated answer parsed", mc)
			}
			if am := lastOf(evs, session.KindAssistantMessage); am.Text == "" {
				t.Errorf("assistant_message has no text: want the inflated answer's")
			}
		})
	}
}
