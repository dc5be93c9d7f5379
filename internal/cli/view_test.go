package cli

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestViewFlags: view's arguments land in its options through the run
// hook; the forms that name no session, or two, are usage errors.
func TestViewFlags(t *testing.T) {
	for _, tt := range []struct {
		name    string
		args    []string
		want    viewOptions
		wantErr string
	}{
		{name: "session", args: []string{"3f2a", "-o", "x.html", "--open"}, want: viewOptions{Session: "3f2a", Output: "x.html", Open: true}},
		{name: "bundle", args: []string{"--bundle", "b.tar.zst"}, want: viewOptions{Bundle: "b.tar.zst"}},
		{name: "compare", args: []string{"--compare", "a", "b", "--output", "c.html"}, want: viewOptions{Compare: []string{"a", "b"}, Output: "c.html"}},
		{name: "nothing", args: nil, wantErr: "give a SESSION, --bundle FILE or --compare A B"},
		{name: "session and bundle", args: []string{"3f2a", "--bundle", "b.tar.zst"}, wantErr: "give a SESSION, --bundle FILE or --compare A B"},
		{name: "two sessions without --compare", args: []string{"a", "b"}, wantErr: "give a SESSION"},
		{name: "compare one", args: []string{"--compare", "a"}, wantErr: "give two sessions"},
		{name: "compare with bundle", args: []string{"--compare", "a", "b", "--bundle", "x.tar.zst"}, wantErr: "give two sessions"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cmd, got := capture(newViewCmd)()
			cmd.SetArgs(tt.args)
			cmd.SetOut(new(strings.Builder))
			cmd.SetErr(new(strings.Builder))
			err := cmd.ExecuteContext(context.Background())
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("options = %+v, want %+v", *got, tt.want)
			}
		})
	}
}

// TestRelHref: links from the page to a file are relative, escaped, and
// never read as a scheme, whatever the recorded names.
func TestRelHref(t *testing.T) {
	root := t.TempDir()
	for _, tt := range []struct{ out, target, want string }{
		{"p/view.html", "p/s/artifacts/call_1.txt", "./s/artifacts/call_1.txt"},
		{"p/view.html", "home/sessions/x/artifacts/call 1.txt", "../home/sessions/x/artifacts/call%201.txt"},
		{"view.html", "javascript:alert(1)", "./javascript:alert%281%29"},
		{"view.html", "a#b?c.txt", "./a%23b%3Fc.txt"},
	} {
		got, ok := relHref(filepath.Join(root, tt.out), filepath.Join(root, tt.target))
		if !ok || got != tt.want {
			t.Errorf("relHref(%s, %s) = %q, %v, want %q", tt.out, tt.target, got, ok, tt.want)
		}
	}
	for id, want := range map[string]string{"3f2a": "./3f2a.html", "../x": "./..%2Fx.html", "javascript:x": "./javascript:x.html"} {
		if got := sessionHref(id); got != want {
			t.Errorf("sessionHref(%q) = %q, want %q", id, got, want)
		}
	}
}
