package sandbox

// What a started process is recorded as is declared once for every
// platform, so that callers of Sweep compile everywhere: the non-Linux
// copy of Swept had drifted and broke the darwin build of the runner.

import "time"

// Record kinds.
const (
	KindInit       = "sandbox-init" // PID 1 of a sandbox: killing it ends the namespace
	KindUnconfined = "unconfined"   // the leader of an unconfined tool's process group
)

// Record is one started process as Config.Procs keeps it: enough to find
// it again after a crash of the harness, and to be sure it is the same
// process (a pid alone may have been reused).
type Record struct {
	PID     int         `json:"pid"`
	Start   uint64      `json:"start"` // /proc/<pid>/stat starttime, clock ticks after boot
	Kind    string      `json:"kind"`
	Program string      `json:"program"`
	Time    time.Time   `json:"time"`
	Cgroup  *callCgroup `json:"cgroup,omitempty"`
}

// Swept is a process of an earlier invocation that Sweep found alive and
// killed, with how many processes went with it.
type Swept struct {
	Record
	Processes int
}
