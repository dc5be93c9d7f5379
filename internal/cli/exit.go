package cli

import (
	"errors"
	"fmt"

	"github.com/agentctl/agentctl/internal/history"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
)

// Exit codes. Scripts should treat any code not listed as a failure. 2 is
// left to Go's runtime (an unrecovered panic exits with 2).
const (
	ExitOK               = 0
	ExitError            = 1
	ExitAwaitingApproval = 3
	ExitBudgetExceeded   = 4
	ExitNeedsHuman       = 5
	ExitChecksFailed     = 6
	ExitCorruptLog       = 7
	// ExitIncomplete: an import read some files or records it could not
	// import (each is named in its report); the rest was imported.
	ExitIncomplete = 8
	// ExitRegressed: an eval regressed against its baseline (a scenario
	// regressed, or one is missing and --allow-missing was not given).
	ExitRegressed = 9
	// ExitNotRun: an eval ran nothing: every scenario it selected was not
	// run here (a model's API key or a required command is missing), or
	// some was and --require-all was given.
	ExitNotRun      = 10
	ExitInterrupted = 130
)

// exitCodesHelp is appended to the root help so the table is in one place.
const exitCodesHelp = `Exit status:
  0    done / ok
  1    error (bad input, corrupt log, provider error, ...)
  3    awaiting approval (run 'agentctl approve' or 'deny', then 'resume')
  4    budget exceeded
  5    needs human (a pending side effect could not be reconciled, or the
       workspace differs from the recorded git state: resume --on-mismatch)
  6    checks failed (evaluation, eval suite, replay divergence, crashtest)
  7    corrupt log: a record in the middle of a session log fails its checks
       (not a crash's torn tail, which resume cuts), or the log ends before
       events the history or a checkpoint recorded as durable, or a history
       file fails its checksum; nothing repairs it
  8    import incomplete: a file or record was not imported (the report
       names each, with why); the rest was imported
  9    regressed against the baseline (eval --baseline, eval compare): a
       scenario regressed, or one is missing
  10   eval not run: no scenario could run here (a model's API key or a
       required command is missing), or some could not and --require-all
  130  interrupted (SIGINT/SIGTERM); the session is resumable
Any other code is a failure.`

// ExitCodeFor maps a session's final status to the process exit code.
func ExitCodeFor(s session.Status) int {
	switch s {
	case session.StatusDone:
		return ExitOK
	case session.StatusAwaitingApproval:
		return ExitAwaitingApproval
	case session.StatusBudgetExceeded:
		return ExitBudgetExceeded
	case session.StatusNeedsHuman:
		return ExitNeedsHuman
	case session.StatusFailed:
		return ExitChecksFailed // a failed evaluation; see exitCodeForRun for errors
	case session.StatusInterrupted:
		return ExitInterrupted
	}
	return ExitError
}

// exitError carries a specific exit code up to Main. A nil Err means the
// command already reported everything and only the code matters.
type exitError struct {
	Code int
	Err  error
}

func (e *exitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *exitError) Unwrap() error { return e.Err }

// withCode wraps err so Main exits with code.
func withCode(code int, err error) error { return &exitError{Code: code, Err: err} }

// usageError marks errors in how the command was called; Main prints the
// usage line after them.
type usageError struct{ error }

func codeOf(err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	if errors.Is(err, recorder.ErrCorrupt) || errors.Is(err, history.ErrCorruptFile) {
		return ExitCorruptLog
	}
	return ExitError
}

// corruptHint says what to do about a corrupt log, for every command that
// meets one: the same words and the same exit code wherever it is found.
func corruptHint(err error) string {
	var short *recorder.ShortLogError
	if errors.As(err, &short) {
		return fmt.Sprintf("hint: %s lost its last %d event(s) after they were durable; agentctl does not resume such a log (its side effects would run again) and never repairs it. "+
			"Restore the file from a backup or a bundle, or continue from an event it still holds with 'agentctl replay fork SESSION --from SEQ'",
			short.Path, short.Witness.Seq-short.LastSeq)
	}
	var ce *recorder.CorruptError
	if !errors.As(err, &ce) {
		return ""
	}
	where := "the log"
	if ce.Path != "" {
		where = ce.Path
	}
	return fmt.Sprintf("hint: %s is damaged at byte %d, in the middle (a crash only tears the end, which resume cuts); agentctl never repairs that or skips records. "+
		"'agentctl show SESSION' lists the events before the damage, 'agentctl replay fork SESSION --from SEQ' continues from one of them, "+
		"and the file's backups or a bundle may hold the rest", where, ce.Offset)
}
