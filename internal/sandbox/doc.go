// Package sandbox confines the subprocesses of tools (bash and custom
// commands): a fresh network namespace (network denied by default), a
// mount namespace whose root holds only the few host folders programs
// need, a PID namespace that dies with the tool and with the harness, a
// cgroup per call, no capabilities, and rlimits.
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
//	                                           │ pdeathsig, lifeline, cgroup,
//	                                           │ new root, lo up, forwarders,
//	                                           │ drop caps, no_new_privs,
//	                                           │ RLIMIT_CPU (its forking thread)
//	                                           └─fork/exec──▶ tool
//
// The init stays PID 1: it reaps orphans, forwards SIGTERM/SIGINT to
// everything in the namespace and exits with the tool's status (128+signal
// when the tool was killed, with a line on stderr naming the limit). When
// PID 1 exits the kernel kills every process left in the namespace, so even
// a grandchild that called setsid cannot outlive the call. Capabilities and
// no_new_privs belong to a thread: the init drops them on the thread it
// forks from (locked to it from the start), so the tool inherits them
// dropped while the init's other threads keep theirs. The init is not
// dumpable, so the tool, which runs as the same user, cannot open its
// memory through /proc/1 (the kernel's check would look at the main
// thread's empty capability sets and let it).
//
// When no cgroup limits the call's memory, the ceiling is RLIMIT_AS, which
// would also bind the init's own address space; with an allowlist, the
// init relays connections, and its CPU time would count against the tool's
// RLIMIT_CPU. In those cases the init starts an exec hop instead: a second, short-lived re-execution (through
// /proc/self/exe, which still names the agentctl binary after the host's
// root is gone) that applies the limits, drops the privileges and execs
// the tool. Each start of the agentctl binary costs about 5 ms of CPU, so
// the hop is used only where it is needed.

// # What the tool sees
//
// The init builds a new root on an empty tmpfs and pivots into it, as
// bubblewrap setups do. It holds, read-only and recursively, the host's
// /usr, /bin, /sbin, /lib, /lib32, /lib64, /libx32, /etc and /opt (those
// that exist; /bin -> usr/bin stays a symlink); a private 512 MiB /tmp; a
// /dev with only null, zero, full, random, urandom, shm and the fd links;
// the PID namespace's own /proc (/proc/sys read-only); the workspace,
// writable at its own path (its parent folders are empty folders of the
// new root, so `ls ..` shows only the way to it); and the Config.ReadOnly
// folders (a custom tool's program folder) at theirs. Both are bound at
// their resolved paths, and the host's symlinks on the way to the paths
// the caller gave are made again (link -> real, when a program is named as
// link/proj/deploy.sh or $HOME lies under a home given through a link), so
// those paths resolve inside as outside. Nothing else of the
// host exists: not /home, /root, /run, /var, /srv, /mnt, /sys, nor the
// agentctl home. $HOME is the workspace (the tools package sets it); the
// invoking user's home folder is not in the sandbox unless it is one of
// the folders above.
//
// Config.Hide (by default DefaultHide: ~/.ssh, ~/.aws, ~/.config/gcloud,
// ~/.docker and other credential files, /run, plus the agentctl home the
// caller adds) matters where a hidden path falls inside that view: inside
// the workspace (workspace: {path: .} with the home in it), a read-only
// folder or a kept folder. A hidden folder is an empty read-only tmpfs, a
// hidden file /dev/null. Prepare adds the resolved target of every hidden
// path (a symlinked ~/.aws, an agentctl home given through a link), since a
// mount over a link would land on its target only by accident. Mounts are
// made shallowest first, so a home hidden around the workspace is covered
// before the workspace is bound into it.
//
// All capabilities are dropped (also for uid 0), so the tool cannot
// remount, unmount or enter other namespaces. No system call is filtered
// (no seccomp).
//
// # Host sockets
//
// A read-only mount does not stop connect(2) on a unix socket, and seccomp
// cannot see a socket's path; a socket that is not in the view cannot be
// reached. The minimal root leaves out every folder where host daemons put
// sockets (/run, /var, /tmp, /home, /root). At every call the init also
// walks the kept folders (but /usr: 150,000 entries, 0.2 s warm, seconds
// cold) and the read-only folders, outside the workspace, and covers every
// socket it finds with /dev/null. `agentctl sandbox check` runs a probe
// sandbox that walks its whole view, /usr included, and reports any socket
// left reachable. Abstract unix sockets belong to the network namespace:
// with the network denied the host's are unreachable; with NetworkAllow
// they are reachable.
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
// network instead (a /etc/resolv.conf that links out of the kept folders,
// such as systemd-resolved's, is made to resolve).
//
// # Serving the process (the model proxy)
//
// Config.Serve gives the sandboxed process one address of the harness's,
// for an external agent's model proxy. With the network denied the init,
// inside the new network namespace and before the process starts, listens
// on that loopback ip:port and sends the listening socket to the harness
// over an inherited SOCK_SEQPACKET socket (SCM_RIGHTS), then closes its own
// copy; Launch.Listener returns it, and the harness's server accepts on it
// directly (no relay: a socket keeps the namespace it was made in). The
// process's connections queue in the backlog from the start, so it may
// connect before the harness calls Accept. Nothing else of the host is
// reachable unless the allowlist opens it. With the network shared the
// harness listens on the host's loopback instead.
//
// # When the harness dies
//
// The init sets a parent-death signal (SIGKILL) first thing, then checks
// a lifeline: the read end of a pipe whose only write end the harness
// holds. At end of file (the harness is gone) the init kills the
// namespace; checked right after the signal is set, it also catches a
// harness that died before. getppid cannot be used for the check: the
// parent is outside the PID namespace, so it is 0. The signal is a
// property of the harness thread that forked the init (Go keeps its
// threads unless a locked goroutine ends), the lifeline of the harness
// process; either alone ends the tool within milliseconds of a kill -9.
//
// With Config.Procs set, Launch.Started records the init's pid, its start
// time (/proc/<pid>/stat) and its cgroup in that folder, and Close removes
// the record once the process has been waited for. Sweep, which resume
// calls before it reconciles, kills every recorded process still alive
// with its recorded start time (a reused pid is left alone), waits until
// it is gone and empties its cgroup.
//
// Unconfined tools (Config.Unconfined) have no init: they get a
// parent-death signal on the direct child only, their own session and
// process group, and a record; Sweep kills the recorded leader and every
// live member of its process group. A child that leaves the group
// (setsid) and outlives the harness is not found.
//
// # Limits
//
// Where a cgroup can be created for the call, it gets one: v2, a child of
// agentctl's own cgroup when memory and pids are enabled in its
// cgroup.subtree_control (memory.max, memory.swap.max 0, pids.max); v1,
// agentctl/<call> under agentctl's cgroups of the memory and pids
// hierarchies (memory.limit_in_bytes and memsw, pids.max). The init joins
// it before anything else runs; Close kills what is left in it (cgroup.kill
// on v2) and removes it. Config.Memory (default 4 GiB) is then the cgroup's
// memory limit, which counts resident memory (a hog is killed by the
// cgroup's OOM killer and the init says so); without a cgroup it is
// RLIMIT_AS, which counts address space. Config.Pids (default 512) caps
// the call's processes and threads only where a pids cgroup exists.
// RLIMIT_CPU (Config.CPU, default 10m) and no core dumps apply everywhere.
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
//	c := l.Command(ctx) // leads its own session and process group
//	c.Stdout, c.Stderr = out, out
//	if err := l.Start(c); err != nil { ... } // c.ProcessState set: started, unrecorded, killed
//	err = c.Wait()
//
// # Concurrency
//
// Prepare, Available, Check and Sweep are safe for concurrent use (Sweep
// of one folder belongs to the holder of the session's lease). Available
// probes once per process, cgroup support is detected once per process. A
// Launch belongs to one process start.
//
// Only Linux is supported; elsewhere Prepare refuses everything but
// Unconfined.
package sandbox
