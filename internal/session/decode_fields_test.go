package session

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestDecoderKnowsEveryField: the fast decoder's field switch is a second
// copy of Event's JSON tags, so this test derives the fields from the tags:
// an event with any one field set must decode on the fast path, to what
// encoding/json decodes. A field added to Event and not to the switch fails
// here instead of silently dropping every event that has it to the slow
// path.
func TestDecoderKnowsEveryField(t *testing.T) {
	typ := reflect.TypeOf(Event{})
	var d Decoder
	for i := range typ.NumField() {
		f := typ.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "" || tag == "-" {
			continue
		}
		e := Event{Seq: 1, Kind: KindError}
		v := reflect.ValueOf(&e).Elem().Field(i)
		switch val := v.Addr().Interface().(type) {
		case *string:
			*val = "v\u00e9\"\\<x>\n"
		case *int64:
			*val = 42
		case *float64:
			*val = 0.125
		case *Kind:
			*val = KindToolResult
		case *time.Time:
			*val = time.Date(2026, 12, 1, 20, 37, 24, 123456789, time.UTC)
		case *json.RawMessage:
			*val = json.RawMessage(`{"a":[1,"b"]}`)
		case *[]ToolCall:
			*val = []ToolCall{{ID: "c1", Name: "bash", Args: json.RawMessage(`{"command":"ls"}`)}}
		case *[]int64:
			*val = []int64{3, 4}
		default:
			t.Fatalf("field %s has type %s, which this test does not know how to set; teach it and the fast decoder", f.Name, f.Type)
		}
		b, err := Encode(e)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := d.fast(b)
		if !ok {
			t.Errorf("field %s (%q): the fast decoder fell back to encoding/json for %s; add the key to parser.field", f.Name, tag, b)
			continue
		}
		want, err := Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("field %s: fast decode = %+v, encoding/json = %+v", f.Name, got, want)
		}
	}
}
