package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/agentctl/agentctl/internal/gitsafe"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/tools"
)

// Commit trailers: every commit of a run branch names its session, the
// event whose effect it records, and, for a call, the call.
const (
	TrailerSession = "Agentctl-Session"
	TrailerSeq     = "Agentctl-Seq"
	TrailerCall    = "Agentctl-Call"
)

// Workspace choices of a resume whose workspace differs from the record.
const (
	// WorkspaceAccept commits what differs and records it (an error event
	// with reason workspace_mismatch and the new git_sha), then goes on.
	WorkspaceAccept = "accept"
	// WorkspaceReset puts the workspace back at the recorded commit,
	// records that (an error event, reason workspace_mismatch), then goes
	// on.
	WorkspaceReset = "reset"
)

// ReasonWorkspaceMismatch marks the error event a resume records when the
// workspace differed from the record and the user chose what to do.
const ReasonWorkspaceMismatch = "workspace_mismatch"

// ReasonGitError ends a run whose workspace could not be committed: going
// on would leave changes out of the record.
const ReasonGitError = "git_error"

// WorkspaceMismatchError is a resume refused because the workspace is not
// the one the log recorded: Paths differ from commit SHA, and no call in
// flight at a crash can explain them (or the branch no longer holds SHA).
type WorkspaceMismatchError struct {
	SessionID string
	SHA       string
	Paths     []gitsafe.Change
	Why       string
	GitDir    string
}

func (e *WorkspaceMismatchError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "resume %s: the workspace does not match the recorded commit %s: %s", e.SessionID, short(e.SHA), e.Why)
	for i, c := range e.Paths {
		if i == 50 {
			fmt.Fprintf(&b, "\n  ... and %d more", len(e.Paths)-50)
			break
		}
		fmt.Fprintf(&b, "\n  %s %s", c.Status, c.Path)
	}
	fmt.Fprintf(&b, "\nlook at them with 'git --git-dir %s diff %s' (git --work-tree=WORKSPACE), then resume with --on-mismatch=reset to put the workspace back at %s, or --on-mismatch=accept to record these changes as a commit and go on", e.GitDir, short(e.SHA), short(e.SHA))
	return b.String()
}

func short(sha string) string { return sha[:min(len(sha), 12)] }

// gitOn reports whether the session keeps its workspace as git state: the
// log says so (a git_sha was recorded), or, before the first user message
// is recorded, the spec does (spec.WantsGit).
func (r *run) gitOn() bool {
	if r.st.GitSHA != "" {
		return true
	}
	return !r.st.Prompted && r.cfg.Spec.WantsGit()
}

// tracker opens the session's git folder once per invocation.
func (r *run) tracker() (*gitsafe.Tracker, error) {
	if r.git != nil {
		return r.git, nil
	}
	tr, err := gitsafe.OpenTracker(filepath.Join(r.cfg.Store.SessionDir(r.id), recorder.GitDir), r.ws, gitsafe.RunBranch(r.id))
	if err != nil {
		return nil, err
	}
	r.git = tr
	return tr, nil
}

// commitWorkspace commits the workspace when it changed, with the
// session's trailers (seq is the event whose effect it records, call the
// call's id or ""), and returns the SHA to record on the event: "" when
// the branch's tip is already the one the log last recorded.
func (r *run) commitWorkspace(ctx context.Context, subject string, seq int64, call string) (string, error) {
	return r.commitChanged(ctx, nil, subject, seq, call)
}

// commitChanged is commitWorkspace when only paths can have changed (nil:
// anything).
func (r *run) commitChanged(ctx context.Context, paths []string, subject string, seq int64, call string) (string, error) {
	tr, err := r.tracker()
	if err != nil {
		return "", err
	}
	trailers := map[string]string{TrailerSession: r.id, TrailerSeq: strconv.FormatInt(seq, 10)}
	if call != "" {
		trailers[TrailerCall] = call
	}
	var sha string
	if paths != nil {
		sha, _, err = tr.CommitPaths(context.WithoutCancel(ctx), paths, subject, trailers, r.now())
	} else {
		sha, _, err = tr.Commit(context.WithoutCancel(ctx), subject, trailers, r.now())
	}
	if err != nil {
		return "", fmt.Errorf("commit the workspace: %w", err)
	}
	if sha == r.st.GitSHA {
		return "", nil
	}
	return sha, nil
}

// commitCall commits what a call changed, before its result is recorded
// (the result then carries the SHA). A failure is kept in r.gitErr: the
// result is still recorded (the effect happened), and runCalls then ends
// the run.
func (r *run) commitCall(ctx context.Context, cs *callState) string {
	if !r.gitOn() {
		return ""
	}
	sha, err := r.commitChanged(ctx, onlyPaths(cs.Call.Name, cs.Call.Args, r.ws), fmt.Sprintf("call %s (%s)", cs.Call.ID, cs.Call.Name), r.st.LastSeq, cs.Call.ID)
	if err != nil {
		r.gitErr = err
	}
	return sha
}

// onlyPaths is the one workspace path a built-in file tool (write_file,
// edit_file) can change, as git names it, or nil when the call may change
// anything (bash, a custom tool) or its path is not plainly inside the
// workspace: then the whole work tree is staged.
func onlyPaths(tool string, args json.RawMessage, ws string) []string {
	if tool != tools.NameWriteFile && tool != tools.NameEditFile {
		return nil
	}
	var a struct {
		Path string `json:"path"`
	}
	if json.Unmarshal(args, &a) != nil || a.Path == "" {
		return nil
	}
	p := a.Path
	if filepath.IsAbs(p) {
		rel, err := filepath.Rel(ws, p)
		if err != nil {
			return nil
		}
		p = rel
	}
	p = path.Clean(filepath.ToSlash(p))
	if p == "." || p == ".." || strings.HasPrefix(p, "../") || strings.HasPrefix(p, "/") {
		return nil
	}
	return []string{p}
}

// finishDone ends the run done; with git state it first commits what the
// done checks left (build output, a formatted file) and records the
// final commit on the session_finished.
func (r *run) finishDone(ctx context.Context) (Result, error) {
	ev := session.Event{Kind: session.KindSessionFinished, Status: string(session.StatusDone)}
	if r.gitOn() {
		sha, err := r.commitWorkspace(ctx, "done: the checks passed", r.st.LastSeq, "")
		if err != nil {
			return r.fail(ReasonGitError, err)
		}
		if sha == "" {
			sha = r.st.GitSHA
		}
		ev.GitSHA = sha
	}
	err := r.append(ev)
	return r.result(), err
}

// verifyWorkspace checks, on resume, that the workspace is the one the log
// recorded: the run branch still holds the last recorded commit, any
// commits after it were made for a call in flight at the crash, and the
// work tree differs from the branch's tip only if such a call may have
// changed it (reconcile then commits what it finds). Anything else is a
// *WorkspaceMismatchError, unless choice says what to do with it.
func (r *run) verifyWorkspace(ctx context.Context, choice string) error {
	want := r.st.GitSHA
	if want == "" {
		return nil
	}
	mismatch := func(why string, paths []gitsafe.Change) error {
		return &WorkspaceMismatchError{SessionID: r.id, SHA: want, Paths: paths, Why: why,
			GitDir: filepath.Join(r.cfg.Store.SessionDir(r.id), recorder.GitDir)}
	}
	tr, err := r.tracker()
	if err != nil {
		return fmt.Errorf("resume %s: open the run's git folder: %w", r.id, err)
	}
	if !tr.HasCommit(ctx, want) {
		why := fmt.Sprintf("the run's git folder %s does not hold it (removed or replaced)", tr.Dir())
		if choice != WorkspaceAccept {
			return mismatch(why, nil)
		}
		// Nothing to compare with or reset to: the workspace as it is
		// becomes the base, and the log says so.
		sha, err := r.commitWorkspace(ctx, "the workspace found on resume, accepted (--on-mismatch=accept)", r.st.LastSeq, "")
		if err != nil {
			return fmt.Errorf("resume %s: %w", r.id, err)
		}
		return r.append(session.Event{Kind: session.KindError, Reason: ReasonWorkspaceMismatch, GitSHA: sha,
			Error: why + "; resume --on-mismatch=accept recorded the workspace as it is as commit " + short(sha)})
	}
	pending := map[string]bool{}
	for _, c := range r.st.Calls {
		if c.Pending() {
			pending[c.ID] = true
		}
	}
	tip, err := tr.Tip(ctx)
	if err != nil {
		return fmt.Errorf("resume %s: %w", r.id, err)
	}
	if tip != want {
		log, err := tr.Log(ctx, 1000)
		if err != nil {
			return fmt.Errorf("resume %s: %w", r.id, err)
		}
		found := false
		for _, c := range log {
			if c.SHA == want {
				found = true
				break
			}
			if c.Trailers[TrailerSession] != r.id || !pending[c.Trailers[TrailerCall]] {
				return mismatch(fmt.Sprintf("the branch %s moved past it to %s, a commit of no call in flight (%q)", tr.Branch(), short(c.SHA), c.Subject), nil)
			}
		}
		if !found {
			return mismatch(fmt.Sprintf("the branch %s no longer leads to it", tr.Branch()), nil)
		}
	}
	changes, err := tr.Changes(ctx, tip)
	if err != nil {
		return fmt.Errorf("resume %s: %w", r.id, err)
	}
	if len(changes) == 0 || len(pending) > 0 {
		return nil
	}
	var paths []string
	for _, c := range changes {
		paths = append(paths, c.Status+" "+c.Path)
	}
	sort.Strings(paths)
	what := fmt.Sprintf("the workspace differed from the recorded commit %s in %d path(s): %s", short(want), len(changes), strings.Join(paths, ", "))
	switch choice {
	case WorkspaceAccept:
		sha, err := r.commitWorkspace(ctx, "changes found on resume, accepted (--on-mismatch=accept)", r.st.LastSeq, "")
		if err != nil {
			return fmt.Errorf("resume %s: %w", r.id, err)
		}
		return r.append(session.Event{Kind: session.KindError, Reason: ReasonWorkspaceMismatch, GitSHA: sha,
			Error: what + "; resume --on-mismatch=accept recorded them as commit " + short(sha)})
	case WorkspaceReset:
		if err := tr.Restore(ctx, tip); err != nil {
			return fmt.Errorf("resume %s: reset the workspace: %w", r.id, err)
		}
		return r.append(session.Event{Kind: session.KindError, Reason: ReasonWorkspaceMismatch,
			Error: what + "; resume --on-mismatch=reset put the workspace back at " + short(tip)})
	case "":
		return mismatch("no call was in flight that could have changed it", changes)
	}
	return errors.New("resume: --on-mismatch is accept or reset")
}

// ForkWorkspace makes the workspace ws and the git state of session
// forkID, forked from parentID at the event that recorded sha: the fork's
// run branch starts at sha (its objects copied from the parent's git
// folder) and ws holds exactly sha's files. No recorded call is run again.
func ForkWorkspace(ctx context.Context, store recorder.Store, parentID, sha, forkID, ws string) error {
	if err := os.MkdirAll(ws, 0o755); err != nil {
		return err
	}
	tr, err := gitsafe.OpenTracker(filepath.Join(store.SessionDir(forkID), recorder.GitDir), ws, gitsafe.RunBranch(forkID))
	if err != nil {
		return err
	}
	parent := filepath.Join(store.SessionDir(parentID), recorder.GitDir)
	if err := tr.Seed(ctx, parent, sha); err != nil {
		return fmt.Errorf("the workspace at commit %s of %s: %w", short(sha), parent, err)
	}
	return nil
}
