package cli_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/rogpeppe/go-internal/testscript"
)

// fakeGemini VAR [KEEP]: start a stand-in of the Gemini API for the rest
// of the script and set VAR to its URL. It scripts one tool call: a
// streamGenerateContent whose last content answers no function calls
// list_directory(".") (list_files when the request offers it: agentctl's
// own tools) and, once the result is back, answers in two text chunks; a generateContent (gemini-cli's side requests: routing,
// next-speaker checks) gets a JSON "{}" answer, countTokens a count. With
// KEEP (or AGENTCTL_GEMINI_KEEP in the test's environment), each request
// and answer is written there, byte for byte (req-N.path, req-N.json,
// resp-N): how internal/modelapi/gemini/testdata/gemini-cli-0.61.0 was
// made.
func fakeGemini(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: fakegemini VAR [KEEP]")
	}
	keep := os.Getenv("AGENTCTL_GEMINI_KEEP")
	if len(args) == 2 {
		keep = ts.MkAbs(args[1])
	}
	if keep != "" {
		ts.Check(os.MkdirAll(keep, 0o755))
	}
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 32<<20))
		mu.Lock()
		n++
		i := n
		mu.Unlock()
		var req struct {
			Contents []struct {
				Parts []map[string]json.RawMessage `json:"parts"`
			} `json:"contents"`
			Tools []struct {
				FunctionDeclarations []struct {
					Name string `json:"name"`
				} `json:"functionDeclarations"`
			} `json:"tools"`
		}
		_ = json.Unmarshal(body, &req)
		// gemini-cli's tool, or agentctl's own (a provider: gemini spec).
		call := `{"name":"list_directory","args":{"dir_path":"."}}`
		for _, t := range req.Tools {
			for _, d := range t.FunctionDeclarations {
				if d.Name == "list_files" {
					call = `{"name":"list_files","args":{"path":"."}}`
				}
			}
		}
		answered := false
		if k := len(req.Contents); k > 0 {
			for _, p := range req.Contents[k-1].Parts {
				if _, ok := p["functionResponse"]; ok {
					answered = true
				}
			}
		}
		usage := func(in, out int) string {
			return fmt.Sprintf(`"usageMetadata":{"promptTokenCount":%d,"candidatesTokenCount":%d,"cachedContentTokenCount":%d,"thoughtsTokenCount":3,"totalTokenCount":%d}`, in, out, in/2, in+out+3)
		}
		var ct, answer string
		switch {
		case strings.HasSuffix(r.URL.Path, ":countTokens"):
			ct, answer = "application/json", `{"totalTokens":42}`
		case strings.HasSuffix(r.URL.Path, ":generateContent"):
			ct, answer = "application/json", `{"candidates":[{"content":{"role":"model","parts":[{"text":"{}"}]},"finishReason":"STOP","index":0}],`+usage(300, 1)+`,"modelVersion":"gemini-2.5-flash","responseId":"fake-side-`+fmt.Sprint(i)+`"}`
		case !answered:
			ct = "text/event-stream"
			answer = "data: " + `{"candidates":[{"content":{"role":"model","parts":[{"functionCall":` + call + `}]},"finishReason":"STOP","index":0}],` + usage(1200, 9) + `,"modelVersion":"gemini-2.5-flash","responseId":"fake-call"}` + "\r\n\r\n"
		default:
			ct = "text/event-stream"
			answer = "data: " + `{"candidates":[{"content":{"role":"model","parts":[{"text":"The folder holds "}]},"index":0}],"modelVersion":"gemini-2.5-flash","responseId":"fake-answer"}` + "\r\n\r\n" +
				"data: " + `{"candidates":[{"content":{"role":"model","parts":[{"text":"one file, a.txt."}]},"finishReason":"STOP","index":0}],` + usage(1300, 8) + `,"modelVersion":"gemini-2.5-flash","responseId":"fake-answer"}` + "\r\n\r\n"
		}
		if keep != "" {
			_ = os.WriteFile(filepath.Join(keep, fmt.Sprintf("req-%d.path", i)), []byte(r.URL.RequestURI()+"\n"), 0o644)
			_ = os.WriteFile(filepath.Join(keep, fmt.Sprintf("req-%d.json", i)), body, 0o644)
			_ = os.WriteFile(filepath.Join(keep, fmt.Sprintf("resp-%d", i)), []byte(answer), 0o644)
		}
		w.Header().Set("Content-Type", ct)
		io.WriteString(w, answer)
	}))
	ts.Defer(srv.Close)
	ts.Setenv(args[0], srv.URL)
}
