package otelsession

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/agentctl/agentctl/internal/session"
)

// userKeys are the attributes that name the user a conversation ran for,
// in the order they are read: OpenTelemetry's user.id (OpenInference sets
// it from setUser), Langfuse's, the deprecated enduser.id, the Vercel AI
// SDK's and OpenLLMetry's metadata of that name.
var userKeys = []string{"user.id", "langfuse.user.id", "enduser.id", "ai.telemetry.metadata.userId", "ai.telemetry.metadata.user_id", "traceloop.association.properties.user_id"}

// tagListKeys hold a list of tags: OpenInference's tag.tags (setTags),
// Langfuse's trace and session tags. An item KEY=VALUE is that tag; any
// other item is a tag with an empty value.
var tagListKeys = []string{"tag.tags", "langfuse.trace.tags", "langfuse.session.tags"}

// metadataPrefixes name, one attribute a key, metadata a tool lets users
// filter by: Langfuse's langfuse.trace.metadata.KEY. OpenInference's
// metadata (setMetadata) is one attribute holding a JSON object.
var metadataPrefixes = []string{"langfuse.trace.metadata."}

// identity is the user and the tags a session's spans carry, from the
// span attributes first and the resource's after (the first user found
// stands; tags from every span are merged, the first value of a key
// stands). Metadata becomes tags named metadata.KEY, for its values that
// are strings, numbers or booleans and the same on every span that has
// the key: what an app sets for the conversation (setMetadata puts one
// object on all its spans), not what an instrumentation writes per step
// (LangChain's langgraph_step, checkpoint_ns). The tags are made to fit
// (session.CleanTags): dropped counts those that could not.
func identity(ms []mapped) (user string, tags map[string]string, dropped int) {
	raw := map[string]string{}
	meta, varies := map[string]string{}, map[string]bool{}
	add := func(k, v string) {
		if _, ok := raw[k]; !ok {
			raw[k] = v
		}
	}
	addMeta := func(k, v string) {
		if old, ok := meta[k]; ok && old != v {
			varies[k] = true
		}
		meta[k] = v
	}
	read := func(a attrs) {
		if user == "" {
			user = a.str(userKeys...)
		}
		for _, k := range tagListKeys {
			for _, t := range a.strs(k) {
				if t = strings.TrimSpace(t); t == "" {
					continue
				}
				key, val, _ := strings.Cut(t, "=")
				add(key, val)
			}
		}
		if m := a.str("metadata"); m != "" {
			var obj map[string]any
			if json.Unmarshal([]byte(m), &obj) == nil {
				for k, v := range obj {
					if s, ok := scalar(v); ok {
						addMeta(k, s)
					}
				}
			}
		}
		for k, v := range a {
			for _, p := range metadataPrefixes {
				if rest, ok := strings.CutPrefix(k, p); ok && rest != "" {
					if s, ok := scalar(v); ok {
						addMeta(rest, s)
					}
				}
			}
		}
	}
	for _, m := range ms {
		read(m.sp.Attrs)
	}
	for _, m := range ms {
		read(m.sp.Resource)
	}
	for k, v := range meta {
		if !varies[k] {
			add("metadata."+k, v)
		}
	}
	if len(raw) > 0 {
		tags, dropped = session.CleanTags(raw)
	}
	return session.CleanUserID(user), tags, dropped
}

// scalar is v as a tag's value, when it is one value.
func scalar(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case bool:
		return strconv.FormatBool(x), true
	case int64:
		return strconv.FormatInt(x, 10), true
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), true
	}
	return "", false
}
