// Package sandbox confines the subprocesses of tools (bash and custom
// commands): a fresh network namespace (network denied by default), a mount
// namespace in which the host is read-only and secrets are hidden, a PID
// namespace that dies with the tool, no capabilities, and rlimits.
//
// # How a tool is started
//
// In Go nothing runs between clone and exec, so the sandbox re-executes
// agentctl itself (/proc/self/exe) as the init of new mount, PID, IPC, UTS
// and network namespaces (plus a user namespace mapping the invoking user
// to itself when not root). The hidden mode is chosen by an environment
// variable that Init, called first thing in main and in TestMain, looks
// for. The package's own init function looks for it too, before any other
// package initialises, so every binary that links the package (such as the
// test binary of a package whose tests run tools) can host the sandbox.
//
//	harness ──clone(NEWNS|NEWPID|NEWNET…)──▶ agentctl init (PID 1)
//	                                           │ mounts, lo up, forwarders
//	                                           └─fork/exec──▶ exec hop
//	                                                          │ rlimits, drop caps,
//	                                                          │ no_new_privs
//	                                                          └─exec──▶ tool
//
// The init stays PID 1: it reaps orphans, forwards SIGTERM/SIGINT to
// everything in the namespace and exits with the tool's status (128+signal
// when the tool was killed, with a line on stderr naming the limit). When
// PID 1 exits the kernel kills every process left in the namespace, so even
// a grandchild that called setsid cannot outlive the call. The exec hop is
// a second, short-lived re-execution, so that RLIMIT_AS never applies to
// the long-lived Go init.
//
// # What the tool sees
//
// Every mount is private and read-only; /tmp is a private 512 MiB tmpfs;
// /dev holds only null, zero, full, random, urandom, shm and the fd links;
// /proc is the PID namespace's own with /proc/sys read-only; the paths in
// Config.Hide (by default DefaultHide: ~/.ssh, ~/.aws, ~/.config/gcloud,
// ~/.docker and other credential files, /run, plus the agentctl home the
// caller adds) are empty read-only folders or empty files; the workspace is
// bound back writable at its own path, even when it lives under /tmp or
// under the agentctl home. All capabilities are dropped (also for uid 0),
// so the tool cannot remount, unmount or enter other namespaces.
//
// # Network
//
// With the network denied the tool has only a loopback interface of its
// own: servers on the host, including on 127.0.0.1, are unreachable, and
// there is no DNS. Config.Allow opens TCP host:port pairs through a
// forwarder: the init listens inside the namespace (a loopback address
// as written, or for a host name a loopback address 127.77.0.N that
// /etc/hosts maps the name to) and passes each accepted connection over an
// inherited socket (SCM_RIGHTS) to the harness, which dials the real
// target outside and relays. Only TCP is forwarded, and a bare non-loopback
// IP cannot be allowed (use its host name). NetworkAllow shares the host's
// network instead.
//
// # Limits
//
// RLIMIT_AS (Config.Memory, default 4 GiB), RLIMIT_CPU (Config.CPU, default
// 10m) and no core dumps. cgroups are not used: RLIMIT_AS counts address
// space, not resident memory, and there is no pids limit.
//
// # Example
//
//	func main() {
//		sandbox.Init() // first thing
//		...
//	}
//
//	l, err := sandbox.Config{Network: sandbox.NetworkDeny}.Prepare(ws, ws, []string{"bash", "-c", cmd}, env)
//	if err != nil { ... } // ErrUnavailable: refuse, do not run unconfined
//	defer l.Close()
//	c := exec.Command(l.Path)
//	c.Args, c.Env, c.Dir, c.SysProcAttr, c.ExtraFiles = l.Args, l.Env, l.Dir, l.SysProcAttr, l.ExtraFiles
//	err = c.Start()
//	l.Started()
//
// # Concurrency
//
// Prepare, Available and Check are safe for concurrent use. Available
// probes once per process. A Launch belongs to one process start.
//
// Only Linux is supported; elsewhere Prepare refuses everything but
// Unconfined.
package sandbox
