package replaymatch

import "regexp"

// Codex CLI (npm @openai/codex 0.171, `codex exec`, Responses API). What
// differs between two runs of the same prompt, seen in the request bodies
// of testdata/codex (recorded from two folders with two homes):
//
//   - the <environment_context> user message it sends before the prompt:
//     the working directory, the workspace roots, today's date, the shell,
//     the time zone and the sandbox profile of the machine it runs on;
//   - the two header lines of each exec_command (its shell) result: a
//     random chunk id and the measured wall time;
//   - the skill roots table of its developer instructions, which names
//     $CODEX_HOME (a path of the user's home).
func init() {
	Register(Regexp("codex-environment-context", "Codex CLI",
		"the working directory, workspace roots, date, shell and time zone Codex sends in an <environment_context> message before the prompt",
		regexp.MustCompile(`(?s)<environment_context>.*?</environment_context>`)))
	Register(Regexp("codex-exec-output-header", "Codex CLI",
		"the random chunk id and the measured wall time that head every result of Codex's shell (exec_command)",
		regexp.MustCompile(`(?m)^Chunk ID: [0-9A-Za-z]+\nWall time: \d+(?:\.\d+)? seconds$`)))
	Register(Regexp("codex-skill-roots", "Codex CLI",
		"the skill roots table of Codex's instructions, which names the user's $CODEX_HOME",
		regexp.MustCompile("(?m)^- `r\\d+` = `[^`\\n]*`$")))
}
