package otelsession

import (
	"fmt"
	"testing"
)

// identity reads the user and tags each convention writes: OpenInference
// (user.id, tag.tags as a JSON string, metadata as a JSON string),
// Langfuse (langfuse.user.id, langfuse.trace.tags as a string array,
// langfuse.trace.metadata.KEY), and the resource.
func TestIdentity(t *testing.T) {
	for _, tt := range []struct {
		name     string
		spans    []attrs
		resource attrs
		want     string
	}{
		{name: "openinference", spans: []attrs{{"user.id": "u1", "tag.tags": `["a","k=v"]`, "metadata": `{"m":"x","n":3,"o":{"p":1}}`}},
			want: "u1 map[a: k:v metadata.m:x metadata.n:3] 0"},
		{name: "langfuse", spans: []attrs{{"langfuse.user.id": "u2", "langfuse.trace.tags": []any{"beta", "team=web"}, "langfuse.trace.metadata.plan": "pro"}},
			want: "u2 map[beta: metadata.plan:pro team:web] 0"},
		{name: "first user stands, tags merge", spans: []attrs{{"tag.tags": `["x"]`}, {"user.id": "first", "tag.tags": `["y"]`}, {"user.id": "second"}},
			want: "first map[x: y:] 0"},
		{name: "resource", spans: []attrs{{}}, resource: attrs{"enduser.id": "u3"}, want: "u3 map[] 0"},
		{name: "bad keys dropped", spans: []attrs{{"tag.tags": `["has space","ok"]`}}, want: " map[ok:] 1"},
		{name: "none", spans: []attrs{{"session.id": "s"}}, want: " map[] 0"},
		// Metadata an instrumentation writes per step differs from span
		// to span: not the session's. What every span says is.
		{name: "per-step metadata", spans: []attrs{{"metadata": `{"langgraph_step":0,"ls_provider":"openai"}`}, {"metadata": `{"langgraph_step":1,"ls_provider":"openai"}`}},
			want: " map[metadata.ls_provider:openai] 0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var ms []mapped
			for _, a := range tt.spans {
				ms = append(ms, mapped{sp: &span{Attrs: a, Resource: tt.resource}})
			}
			user, tags, dropped := identity(ms)
			if got := fmt.Sprint(user, " ", tags, " ", dropped); got != tt.want {
				t.Errorf("identity = %q, want %q", got, tt.want)
			}
		})
	}
}
