package testenv

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// Deps is every package pkg links (itself included), as `go list -deps`
// lists them. It skips t where no go command is on PATH: the build graph
// is a property of the source, so a machine without the toolchain has
// nothing to say about it.
func Deps(t testing.TB, pkg string) []string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go on PATH to list the dependencies with")
	}
	out, err := exec.Command(goBin, "list", "-deps", "-f", "{{.ImportPath}}", pkg).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, ee.Stderr)
		}
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

// LinksNone fails t when pkg links a package whose import path starts with
// one of forbidden, naming each: a package kept free of the runner or of a
// vendor SDK loses that by one import anywhere below it, which no compiler
// error reports.
func LinksNone(t testing.TB, pkg string, forbidden ...string) {
	t.Helper()
	deps := Deps(t, pkg)
	var bad []string
	for _, dep := range deps {
		for _, f := range forbidden {
			if strings.HasPrefix(dep, f) {
				bad = append(bad, dep)
				break
			}
		}
	}
	if len(bad) > 0 {
		t.Errorf("%s links %d of its %d packages from %s (`go list -f '{{.ImportPath}}: {{.Imports}}' -deps %s` shows through what):\n%s",
			pkg, len(bad), len(deps), strings.Join(forbidden, ", "), pkg, strings.Join(bad, "\n"))
	}
	t.Logf("%s: %d packages", pkg, len(deps))
}
