package replaymatch

import "regexp"

// Claude Code (npm @anthropic-ai/claude-code 2.1.328, `claude -p`, its
// default model). Besides its <system-reminder> blocks (normalise.go: they
// carry the git status, among others), what differs between two runs of
// the same prompt, seen in the request bodies of testdata/claude-code
// (recorded from two folders with two homes):
//
//   - its "# Environment" system message: the primary working directory,
//     the OS version and today's date;
//   - the memory folder its system prompt names: under the user's home,
//     named after the working directory;
//   - the billing header it puts first in the system text
//     ("x-anthropic-billing-header: cc_version=2.1.328.5bd; ..."): the
//     suffix of the version is derived from the prompt, so a changed
//     prompt would be reported there, in text the user never wrote,
//     rather than at the message that changed (which still differs).
func init() {
	Register(Regexp("claude-code-environment", "Claude Code",
		"the working directory, OS version and date of Claude Code's \"# Environment\" system message",
		regexp.MustCompile(`(?m)^ - Primary working directory: .+$|^ - OS Version: .+$|^Today's date is \d{4}-\d{2}-\d{2}\.$`)))
	Register(Regexp("claude-code-memory-dir", "Claude Code",
		"the memory folder Claude Code's system prompt names: under the home, named after the working directory",
		regexp.MustCompile("`[^`\\n]*/\\.claude/projects/[^`\\n]*/memory/?`")))
	Register(Regexp("claude-code-billing-header", "Claude Code",
		"the billing header at the head of Claude Code's system text: its version suffix is derived from the prompt",
		regexp.MustCompile(`(?m)^x-anthropic-billing-header:(?: [a-z_]+=[^;\s]*;)+`)))
}
