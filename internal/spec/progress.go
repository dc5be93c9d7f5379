package spec

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
)

// codeMarkers are the files whose presence at the top of a workspace makes
// it code-shaped: a repository, or a project manifest of a common build
// tool.
var codeMarkers = []string{
	".git", "go.mod", "package.json", "Cargo.toml", "pyproject.toml", "setup.py", "requirements.txt",
	"pom.xml", "build.gradle", "build.gradle.kts", "Gemfile", "composer.json", "CMakeLists.txt",
	"Makefile", "meson.build", "mix.exs", "deno.json",
}

// WantsGit decides whether a new run keeps its workspace as git state.
// workspace.git says so when set. Unset, it is on when the workspace is
// code-shaped: workspace.from or workspace.path names a folder holding, at
// its top, a .git or a project manifest (codeMarkers: go.mod,
// package.json, Cargo.toml, pyproject.toml, Makefile, ...), and git is on
// PATH. An empty workspace, or one of documents, has none. The decision is
// taken once, at the start: the log records it (a git_sha on the first
// user message), and resume and fork follow the log, not this rule.
func (s *Spec) WantsGit() bool {
	if s.Workspace.Git != nil {
		return *s.Workspace.Git
	}
	src := s.Workspace.From
	if src == "" {
		src = s.Workspace.Path
	}
	if src == "" {
		return false
	}
	if _, err := exec.LookPath("git"); err != nil {
		return false
	}
	for _, m := range codeMarkers {
		if _, err := os.Lstat(filepath.Join(src, m)); err == nil {
			return true
		}
	}
	return false
}

// badProgressName says why name cannot be a progress file, "" when it
// can: a relative, clean, slash-separated path inside the workspace, not
// under .git.
func badProgressName(name string) string {
	switch {
	case name == "":
		return "is empty"
	case strings.HasPrefix(name, "/") || filepath.IsAbs(name):
		return "is absolute; name a path relative to the workspace"
	case path.Clean(name) != name || name == "." || strings.HasPrefix(name, "../") || name == "..":
		return "is not a clean path inside the workspace (no ., .. or double slashes)"
	case strings.ContainsAny(name, "\\\x00\n"):
		return "holds a backslash, NUL or line break"
	}
	for _, c := range strings.Split(name, "/") {
		if strings.EqualFold(c, ".git") {
			return "is under .git"
		}
	}
	return ""
}
