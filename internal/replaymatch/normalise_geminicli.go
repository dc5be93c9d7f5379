package replaymatch

import "regexp"

// gemini-cli (npm @google/gemini-cli 0.61, `gemini -p`, the Gemini API).
// What differs between two runs of the same prompt from two folders with
// two homes (seen in the requests internal/cli's proxy_gemini_cli.txtar
// records; internal/proxy/testdata/gemini-cli holds one run's), besides
// the working directory the workspace normaliser replaces:
//
//   - its project temporary folder, under the home and named after the
//     working directory (~/.gemini/tmp/<project>), which the system
//     prompt names for the project memory and the session context for
//     temporary files;
//   - the date of its session context, in the user's locale
//     ("Today's date is Sunday, December 6, 2026 (formatted according to
//     the user's locale).").
func init() {
	Register(Regexp("gemini-cli-project-temp", "gemini-cli",
		"gemini-cli's project temporary folder, under the home and named after the working directory",
		regexp.MustCompile("[^\\s`'\"]*/\\.gemini/tmp/[^\\s`'\"/]+")))
	Register(Regexp("gemini-cli-date", "gemini-cli",
		"the date of gemini-cli's session context, in the user's locale",
		regexp.MustCompile(`Today's date is [^\n]*\(formatted according to the user's locale\)\.`)))
}
