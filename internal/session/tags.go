package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"
)

// The bounds of a session's tags and user (FORMAT.md, "Tags and user"):
// they are kept in every header and every row of the sessions view, and
// come from sources as hostile as a span from the network.
const (
	MaxTags        = 64
	MaxTagKeyLen   = 64
	MaxTagValueLen = 256
	MaxUserIDLen   = 256
)

// ValidTagKey reports whether k may name a tag: 1 to MaxTagKeyLen of a-z,
// 0-9, '_', '.' and '-', so that a key reads the same in a URL, a shell
// flag and SQL (tags['eval.suite']).
func ValidTagKey(k string) bool {
	if k == "" || len(k) > MaxTagKeyLen {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// ParseTag reads a tag given as KEY=VALUE (run --tag, proxy --tag,
// sessions --tag). The value may be empty and may hold '='.
func ParseTag(s string) (key, value string, err error) {
	k, v, ok := strings.Cut(s, "=")
	if !ok {
		return "", "", fmt.Errorf("tag %q is not KEY=VALUE (e.g. --tag env=ci)", s)
	}
	if err := checkTag(k, v); err != nil {
		return "", "", err
	}
	return k, v, nil
}

// ParseTags reads several KEY=VALUE tags; a key given twice keeps the
// last value, as a later flag overrides an earlier one.
func ParseTags(list []string) (map[string]string, error) {
	if len(list) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, s := range list {
		k, v, err := ParseTag(s)
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, ValidateTags(out)
}

func checkTag(k, v string) error {
	if !ValidTagKey(k) {
		return fmt.Errorf("tag key %q must be 1 to %d characters of a-z, 0-9, '_', '.' and '-'", k, MaxTagKeyLen)
	}
	if len(v) > MaxTagValueLen {
		return fmt.Errorf("tag %s: value is %d bytes, at most %d", k, len(v), MaxTagValueLen)
	}
	if !utf8.ValidString(v) {
		return fmt.Errorf("tag %s: value is not UTF-8", k)
	}
	return nil
}

// ValidateTags checks tags a user wrote (a spec's tags:, --tag): each key
// and value, and how many there are.
func ValidateTags(tags map[string]string) error {
	if len(tags) > MaxTags {
		return fmt.Errorf("%d tags, at most %d", len(tags), MaxTags)
	}
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		if err := checkTag(k, tags[k]); err != nil {
			return err
		}
	}
	return nil
}

// ValidateUserID checks a user id a user gave.
func ValidateUserID(u string) error {
	if len(u) > MaxUserIDLen || !utf8.ValidString(u) {
		return fmt.Errorf("user id must be UTF-8 of at most %d bytes", MaxUserIDLen)
	}
	return nil
}

// CleanTags makes tags from a source agentctl does not control (an
// OpenTelemetry span) fit the bounds instead of refusing them: keys are
// lowercased and a key still invalid is dropped, a value is cut to
// MaxTagValueLen at a character boundary, and tags past MaxTags (in key
// order) are dropped. dropped counts the tags left out, so that the
// header can say some were.
func CleanTags(in map[string]string) (out map[string]string, dropped int) {
	for _, k := range slices.Sorted(maps.Keys(in)) {
		key := strings.ToLower(k)
		if !ValidTagKey(key) || len(out) >= MaxTags {
			dropped++
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[key] = cut(strings.ToValidUTF8(in[k], "\uFFFD"), MaxTagValueLen)
	}
	return out, dropped
}

// CleanUserID cuts a user id from a source agentctl does not control to
// MaxUserIDLen.
func CleanUserID(u string) string {
	return cut(strings.ToValidUTF8(u, "\uFFFD"), MaxUserIDLen)
}

// cut returns s cut to at most n bytes at a character boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// MergeTags returns base with over laid on it (over wins for a key both
// have): a spec's tags under the command line's.
func MergeTags(base, over map[string]string) map[string]string {
	if len(base) == 0 && len(over) == 0 {
		return nil
	}
	out := maps.Clone(base)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, over)
	return out
}

// WithTags returns the header attrs attrs (a JSON object, or empty) with
// tags and user_id added, and attrs unchanged when there are neither (or
// attrs is not an object). The existing keys keep their bytes and order.
// Tags attrs already holds stay, under the new ones (a fork's header
// copied from its parent, with the tags of the run that made it), and
// user replaces the one it holds.
func WithTags(attrs json.RawMessage, tags map[string]string, user string) json.RawMessage {
	if len(tags) == 0 && user == "" {
		return attrs
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(attrs, &obj) == nil {
		_, hasTags := obj["tags"]
		_, hasUser := obj["user_id"]
		if hasTags || hasUser {
			// Rewritten whole: a JSON object must not name a key twice.
			old := HeaderTags(Event{Kind: KindSessionStarted, Attrs: attrs})
			if t := MergeTags(old, tags); len(t) > 0 {
				obj["tags"], _ = json.Marshal(t)
			}
			if user != "" {
				obj["user_id"], _ = json.Marshal(user)
			}
			b, err := json.Marshal(obj)
			if err == nil {
				return b
			}
		}
	}
	var add bytes.Buffer
	if len(tags) > 0 {
		b, _ := json.Marshal(tags) // a map's keys in order
		add.WriteString(`"tags":`)
		add.Write(b)
	}
	if user != "" {
		if add.Len() > 0 {
			add.WriteByte(',')
		}
		b, _ := json.Marshal(user)
		add.WriteString(`"user_id":`)
		add.Write(b)
	}
	body := bytes.TrimSpace(attrs)
	if len(body) == 0 {
		return json.RawMessage("{" + add.String() + "}")
	}
	if len(body) < 2 || body[0] != '{' || body[len(body)-1] != '}' {
		return attrs // not an object: nothing of it is replaced
	}
	inner := bytes.TrimSpace(body[1 : len(body)-1])
	out := make([]byte, 0, len(body)+add.Len()+1)
	out = append(out, '{')
	if len(inner) > 0 {
		out = append(out, inner...)
		out = append(out, ',')
	}
	out = append(out, add.Bytes()...)
	return append(out, '}')
}

// HeaderTags returns the tags of a session's header (nil when none).
func HeaderTags(h Event) map[string]string {
	var a struct {
		Tags map[string]string `json:"tags"`
	}
	if h.Kind != KindSessionStarted || len(h.Attrs) == 0 || json.Unmarshal(h.Attrs, &a) != nil {
		return nil
	}
	return a.Tags
}

// HeaderUserID returns the user_id of a session's header ("" when none).
func HeaderUserID(h Event) string {
	var a struct {
		User string `json:"user_id"`
	}
	if h.Kind != KindSessionStarted || len(h.Attrs) == 0 || json.Unmarshal(h.Attrs, &a) != nil {
		return ""
	}
	return a.User
}
