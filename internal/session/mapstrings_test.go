package session

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestMapStringsCoversEveryField sets every string-bearing field of an
// Event (and of its tool calls) to a text holding a marker word, maps
// them, and fails for each field that still holds the word: a field added
// to Event without a line in MapStrings fails here. A field of a type this
// test does not know fails too, so that someone decides how it is mapped.
func TestMapStringsCoversEveryField(t *testing.T) {
	const word = "PLANTED"
	skip := map[string]bool{"Kind": true} // the record's type, not content
	var e Event
	plant(t, reflect.ValueOf(&e).Elem(), "Event", word, skip)
	e.MapStrings(func(s string) string { return strings.ReplaceAll(s, word, "gone") })
	check(t, reflect.ValueOf(e), "Event", word, skip)
}

var (
	timeType = reflect.TypeOf(time.Time{})
	rawType  = reflect.TypeOf(json.RawMessage(nil))
)

func plant(t *testing.T, v reflect.Value, path, word string, skip map[string]bool) {
	for i := 0; i < v.NumField(); i++ {
		f, ft := v.Field(i), v.Type().Field(i)
		name := path + "." + ft.Name
		switch {
		case skip[ft.Name] || ft.Type == timeType:
		case ft.Type == rawType:
			f.SetBytes([]byte(`{"` + word + `":["` + word + `\n",1]}`))
		case ft.Type.Kind() == reflect.String:
			f.SetString("a " + word + " b")
		case ft.Type.Kind() == reflect.Int64 || ft.Type.Kind() == reflect.Float64:
		case ft.Type.Kind() == reflect.Slice && ft.Type.Elem().Kind() == reflect.Int64:
		case ft.Type.Kind() == reflect.Slice && ft.Type.Elem().Kind() == reflect.Struct:
			f.Set(reflect.MakeSlice(ft.Type, 2, 2))
			for j := 0; j < 2; j++ {
				plant(t, f.Index(j), name, word, skip)
			}
		default:
			t.Errorf("%s has type %s, which this test (and perhaps MapStrings) does not know", name, ft.Type)
		}
	}
}

func check(t *testing.T, v reflect.Value, path, word string, skip map[string]bool) {
	for i := 0; i < v.NumField(); i++ {
		f, ft := v.Field(i), v.Type().Field(i)
		name := path + "." + ft.Name
		switch {
		case skip[ft.Name]:
		case ft.Type == rawType:
			if strings.Contains(string(f.Bytes()), word) || !json.Valid(f.Bytes()) {
				t.Errorf("MapStrings left %s as %s", name, f.Bytes())
			}
		case ft.Type.Kind() == reflect.String:
			if strings.Contains(f.String(), word) {
				t.Errorf("MapStrings does not map %s", name)
			}
		case ft.Type.Kind() == reflect.Slice && ft.Type.Elem().Kind() == reflect.Struct:
			for j := 0; j < f.Len(); j++ {
				check(t, f.Index(j), name, word, skip)
			}
		}
	}
}

// TestMapJSONStrings: escaped strings are mapped by their value, keys as
// well as values; unchanged JSON keeps its bytes.
func TestMapJSONStrings(t *testing.T) {
	f := func(s string) string { return strings.ReplaceAll(s, `p"w`, "[X]") }
	tests := []struct{ in, want string }{
		{`{"a": "no change",  "b": [1, true]}`, `{"a": "no change",  "b": [1, true]}`},
		{`{"cmd":"echo p\"w; ls"}`, `{"cmd":"echo [X]; ls"}`},
		{`{"p\"w":"p\u0022w <&>"}`, `{"[X]":"[X] <&>"}`},
		{`{"a":"p"w"`, `{"a":"[X]"`}, // not JSON: mapped as text
	}
	for _, tt := range tests {
		if got := string(MapJSONStrings(json.RawMessage(tt.in), f)); got != tt.want {
			t.Errorf("MapJSONStrings(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}
