package replaymatch

import "regexp"

// opencode (npm opencode-ai 1.18.33, `opencode run`, an OpenAI-compatible
// provider over Chat Completions). What differs between two runs of the
// same prompt, seen in the request bodies of testdata/opencode (recorded
// from two folders with two homes): the <env> block at the end of its
// system prompt (working directory, workspace root, git, platform, date).
func init() {
	Register(Regexp("opencode-env", "opencode",
		"the working directory, workspace root, platform and date of the <env> block of opencode's system prompt",
		regexp.MustCompile(`(?s)<env>\n  Working directory: .*?\n</env>`)))
}
