package sandbox

import (
	"context"
	"os/exec"
)

// Command is the one way to turn a Launch into an exec.Cmd, so no caller
// can copy the fields and lose one of them: the child always leads a
// session (and so a process group) of its own, whatever SysProcAttr the
// platform's Prepare chose, because the harness ends a call by signalling
// that group and Sweep finds stragglers by it. ctx is as for
// exec.CommandContext.
func (l *Launch) Command(ctx context.Context) *exec.Cmd {
	cmd := exec.CommandContext(ctx, l.Path)
	cmd.Args, cmd.Env, cmd.Dir = l.Args, l.Env, l.Dir
	cmd.ExtraFiles = l.ExtraFiles
	cmd.SysProcAttr = ownSession(l.SysProcAttr)
	return cmd
}

// Start starts cmd (from Command) and records it (Started). A process that
// cannot be recorded could outlive a crash of the harness unseen, so it is
// not let run: its group is killed and it is reaped before Start returns
// Started's error. Callers tell that failure, the harness's own, from a
// failed start by cmd.ProcessState, which is set only then.
func (l *Launch) Start(cmd *exec.Cmd) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	if err := l.Started(cmd.Process.Pid); err != nil {
		killGroup(cmd.Process)
		_ = cmd.Wait()
		return err
	}
	return nil
}
