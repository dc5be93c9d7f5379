package gemini

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentctl/agentctl/internal/modelapi"
	"github.com/agentctl/agentctl/internal/provider"
)

// TestRegistered: Gemini is one value of the registry of model APIs: a
// spec's provider: gemini finds its client and key variable, the proxy's
// routes find its wire, and the wire reads gemini-cli's real request as
// this package does.
func TestRegistered(t *testing.T) {
	api, err := modelapi.Lookup(Name)
	if err != nil {
		t.Fatal(err)
	}
	if api.KeyEnv != "GEMINI_API_KEY" || api.BaseURL != "https://generativelanguage.googleapis.com" || api.Client == nil || api.Wire == nil {
		t.Fatalf("registered %+v", api)
	}
	p, err := api.Client(modelapi.ClientConfig{Model: "gemini-2.5-flash", BaseURL: "http://127.0.0.1:1"})
	if err != nil || p.Name() != Name {
		t.Fatalf("client %v %v", p, err)
	}
	body, err := os.ReadFile(filepath.Join("testdata", "gemini-cli-0.61.0", "turn2.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		path   string
		stream bool
		op     modelapi.Op
	}{
		{"/v1beta/models/gemini-2.5-flash:streamGenerateContent", true, modelapi.OpGenerate},
		{"/v1beta/models/gemini-2.5-flash:generateContent", false, modelapi.OpGenerate},
		{"/v1/models/gemini-2.5-flash:generateContent", false, modelapi.OpGenerate},
		{"/v1beta/models/gemini-2.5-flash:countTokens", false, modelapi.OpCountTokens},
	} {
		a, rt, vars, ok := modelapi.Match(http.MethodPost, tt.path)
		if !ok || a.Name != APIName || rt.Stream != tt.stream || rt.Op != tt.op || vars["model"] != "gemini-2.5-flash" {
			t.Errorf("Match(%s) = %s %+v %v %v", tt.path, a.Name, rt, vars, ok)
			continue
		}
		r := &modelapi.Call{Body: body, Path: tt.path, Route: rt, Vars: vars}
		if err := a.Wire.ParseRequest(r); err != nil {
			t.Fatal(err)
		}
		method := MethodGenerate
		if tt.stream {
			method = MethodStream
		}
		c, _ := ParseRequest("gemini-2.5-flash", method, body)
		if r.Model != "gemini-2.5-flash" || r.Stream != tt.stream || len(r.Messages) != len(c.Messages) || r.System != c.System || len(r.Tools) != len(c.Tools) {
			t.Errorf("%s: wire parsed %s stream=%v %d messages", tt.path, r.Model, r.Stream, len(r.Messages))
		}
	}
	if _, _, err := modelapi.LookupWire(APIName); err != nil {
		t.Error(err)
	}
	w := httptest.NewRecorder()
	enc := api.Wire.NewEncoder(w, true, "id1", "gemini-2.5-flash")
	enc.Text("hi")
	enc.Finish(provider.Response{Text: "hi", FinishReason: provider.FinishStop})
	if !enc.Began() || w.Header().Get("Content-Type") != "text/event-stream" {
		t.Errorf("encoder: began %v, content type %q", enc.Began(), w.Header().Get("Content-Type"))
	}
	if e := api.Wire.ParseError(400, nil, api.Wire.ErrorBody("replay_divergence", "turn 1 diverges")); e.Type != "replay_divergence" || e.Message != "turn 1 diverges" {
		t.Errorf("error round trip: %+v", e)
	}
}

// TestSetModel: a fork's --model goes into the path, where Gemini names
// the model; the body is left as it is.
func TestSetModel(t *testing.T) {
	var w modelapi.ModelSetter = wire{}
	path, body, err := w.SetModel("/v1beta/models/gemini-2.5-flash:streamGenerateContent", []byte(`{"contents":[]}`), "gemini-2.5-pro")
	if err != nil || path != "/v1beta/models/gemini-2.5-pro:streamGenerateContent" || string(body) != `{"contents":[]}` {
		t.Errorf("SetModel = %s %s %v", path, body, err)
	}
	if _, _, err := w.SetModel("/v1/chat/completions", nil, "x"); err == nil {
		t.Error("SetModel of a path that names no model: no error")
	}
}
