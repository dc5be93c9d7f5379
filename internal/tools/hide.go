package tools

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"github.com/agentctl/agentctl/internal/sandbox"
)

// hidden is what the file tools refuse to touch: the paths the sandbox
// hides from bash and custom tools (the agentctl home, the credential
// folders), so that a built-in running in the harness process sees no more
// than a subprocess in the sandbox does.
//
// Each path is kept as given and with its symlinks resolved: a home reached
// through a link (--home /var/tmp/link) or a dotfile manager's ~/.aws link
// hides its target too. A hidden path that is the workspace or one of its
// parents (the default workspace lies in the home, under
// sessions/<id>/workspace) hides nothing, as in the sandbox, where the
// workspace is mounted back over the hidden home.
type hidden struct {
	root  string   // the resolved workspace root
	paths []string // clean absolute paths, given and resolved
}

// hideList is the hide list of the call's sandbox configuration: the same
// []string the sandbox gets, nil meaning sandbox.DefaultHide() as it does
// there.
func hideList(call Call) []string {
	if call.Sandbox != nil && call.Sandbox.Hide != nil {
		return call.Sandbox.Hide
	}
	return sandbox.DefaultHide()
}

// hiddenMemo holds hiddenFor's answers, by workspace root and hide list.
// Resolving the ~18 default paths costs about 80 system calls, which was
// most of a read_file call's time; they are resolved once per process.
// A resolution cached at the first call is the user's links as they were
// before the agent acted: a link inside the workspace that the agent
// replaces later cannot move a hidden target out from under the hiding.
var hiddenMemo struct {
	sync.Mutex
	m map[string]hidden
}

// hiddenFor resolves the call's hide list against the resolved workspace
// root rroot (memoised, see hiddenMemo).
func hiddenFor(call Call, rroot string) hidden {
	list := hideList(call)
	key := rroot + "\x00" + strings.Join(list, "\x00")
	hiddenMemo.Lock()
	defer hiddenMemo.Unlock()
	if h, ok := hiddenMemo.m[key]; ok {
		return h
	}
	if hiddenMemo.m == nil || len(hiddenMemo.m) >= 64 {
		hiddenMemo.m = map[string]hidden{}
	}
	h := resolveHidden(list, rroot)
	hiddenMemo.m[key] = h
	return h
}

// resolveHidden resolves list against the resolved workspace root rroot.
func resolveHidden(list []string, rroot string) hidden {
	h := hidden{root: rroot}
	add := func(p string) {
		if !filepath.IsAbs(p) || p == string(filepath.Separator) || within(p, rroot) {
			return
		}
		for _, q := range h.paths {
			if q == p {
				return
			}
		}
		h.paths = append(h.paths, p)
	}
	for _, p := range list {
		p = filepath.Clean(p)
		add(p)
		links := 0
		if r, err := resolve(p, &links); err == nil {
			add(r)
		}
	}
	return h
}

// covering returns the hidden path that the resolved absolute path p is or
// lies under.
func (h hidden) covering(p string) (string, bool) {
	for _, q := range h.paths {
		if within(q, p) {
			return q, true
		}
	}
	return "", false
}

// check refuses the resolved path p, given by the model as arg, when it is
// hidden. The error names the hidden folder relative to the workspace (it
// lies inside it, or p would have been refused as an escape).
func (h hidden) check(arg, p string) error {
	q, ok := h.covering(p)
	if !ok {
		return nil
	}
	where := q
	if within(h.root, q) {
		where = relTo(h.root, q)
	}
	return fmt.Errorf("%w: %s (it is in %s, which the sandbox hides too: the agentctl home and credential folders are off limits)", ErrHidden, arg, where)
}

// skip reports whether a walk must leave out the workspace-relative name
// (slash-separated, already free of symlinks: walks do not follow them).
func (h hidden) skip(name string) bool {
	_, ok := h.covering(filepath.Join(h.root, filepath.FromSlash(name)))
	return ok
}
