package sandbox

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Network policies.
const (
	NetworkDeny  = "deny"
	NetworkAllow = "allow"
)

// Defaults applied when a Config leaves a limit at zero.
const (
	// DefaultMemory is the memory ceiling of a tool call: the cgroup's
	// memory limit where one is available, else the address-space
	// ceiling (RLIMIT_AS) of each tool process.
	DefaultMemory int64 = 4 << 30
	// DefaultCPU is the CPU-time ceiling (RLIMIT_CPU) of a tool process.
	DefaultCPU = 10 * time.Minute
	// DefaultPids caps the processes (and threads) of one tool call, where
	// a cgroup can count them.
	DefaultPids int64 = 512
	// tmpSize caps the private /tmp of a sandbox.
	tmpSize = "512m"
)

// Environment variables that switch a re-executed agentctl into one of the
// sandbox's hidden modes. They are removed before the tool starts.
const (
	envInit  = "AGENTCTL_SANDBOX_INIT"
	envExec  = "AGENTCTL_SANDBOX_EXEC"
	envProbe = "AGENTCTL_SANDBOX_PROBE"
)

var (
	// ErrUnavailable means this machine cannot set up the namespaces the
	// sandbox needs (no user namespaces for an unprivileged user, a
	// seccomp profile that forbids unshare, not Linux). Tools are refused
	// rather than run unconfined, unless the caller asks for Unconfined.
	ErrUnavailable = errors.New("sandbox: namespaces are unavailable on this machine")

	// ErrNoHost means the running binary did not call Init, so it cannot
	// be re-executed as the sandbox's init.
	ErrNoHost = errors.New("sandbox: this binary cannot host the sandbox init (call sandbox.Init first thing in main or TestMain)")

	// ErrAllow means an allowlist entry is not host:port with a port
	// number and a host name or loopback address.
	ErrAllow = errors.New("sandbox: invalid allowlist entry")
)

// Config says how one tool subprocess is confined. The zero value is the
// default policy: network denied, host file system read-only, default
// limits, the credential folders of DefaultHide hidden.
type Config struct {
	// Unconfined runs the process with only the process-group rules of the
	// caller: no namespaces, no mounts, no limits. It must be asked for.
	Unconfined bool `json:"unconfined,omitempty"`
	// Network is NetworkDeny (the default, also for "") or NetworkAllow.
	Network string `json:"network,omitempty"`
	// Allow lists host:port pairs reachable when the network is denied,
	// through a forwarder (see the package documentation).
	Allow []string `json:"allow,omitempty"`
	// Hide lists absolute paths replaced by an empty read-only folder (or
	// an empty file) inside the sandbox. Nil means DefaultHide("").
	Hide []string `json:"hide,omitempty"`
	// ReadOnly lists absolute host paths (folders) that must be visible,
	// read-only, even where a cover such as the private /tmp or a hidden
	// path went over them: the folder of a custom tool's program.
	ReadOnly []string `json:"read_only,omitempty"`
	// Memory is the memory ceiling in bytes (the call's cgroup memory
	// limit, or RLIMIT_AS where no cgroup is available); 0 means
	// DefaultMemory and a negative value no ceiling.
	Memory int64 `json:"memory,omitempty"`
	// Pids caps the processes of one call (the cgroup's pids.max; there is
	// no fallback without a cgroup); 0 means DefaultPids and a negative
	// value no cap.
	Pids int64 `json:"pids,omitempty"`
	// CPU is the RLIMIT_CPU ceiling; 0 means DefaultCPU and a negative
	// value no ceiling. It is rounded up to whole seconds.
	CPU time.Duration `json:"cpu,omitempty"`
	// Procs, if set, is a folder where every started process (the sandbox
	// init, or an unconfined tool) is recorded with its start time until
	// it has been waited for, so that Sweep can prove after a crash of the
	// harness that none of them still runs. The runner sets it to a folder
	// of the session.
	Procs string `json:"procs,omitempty"`
	// Serve, if set, is a loopback ip:port on which the harness serves the
	// sandboxed process (agentctl's model proxy for an external agent).
	// With the network denied the listening socket is made INSIDE the
	// sandbox's network namespace, by the init before the process starts,
	// and handed to the harness (Launch.Listener): the process reaches
	// the harness at that address and nothing else on the host. A port of
	// 0 picks one (the namespace is empty, so any port is free). With the
	// network shared (NetworkAllow, Unconfined) the harness listens on the
	// host's loopback instead.
	Serve string `json:"serve,omitempty"`
}

// DefaultHide returns the paths hidden from tools: the credential folders
// and files of the invoking user ($HOME) and the given extra paths (the
// agentctl home), made absolute. /run is hidden too, since it holds the
// sockets of host daemons (docker, dbus) that a read-only mount does not
// stop a client from talking to.
func DefaultHide(extra ...string) []string {
	out := []string{"/run", "/var/run"}
	if home, err := os.UserHomeDir(); err == nil && home != "" && home != "/" {
		for _, p := range []string{
			".ssh", ".aws", ".config/gcloud", ".docker", ".kube", ".gnupg",
			".azure", ".config/gh", ".netrc", ".git-credentials", ".npmrc",
			".pypirc", ".cargo/credentials", ".cargo/credentials.toml",
			".config/agentctl",
		} {
			out = append(out, filepath.Join(home, p))
		}
	}
	for _, p := range extra {
		if p == "" {
			continue
		}
		if abs, err := filepath.Abs(p); err == nil {
			out = append(out, abs)
		}
	}
	return out
}

func (c Config) memory() int64 {
	if c.Memory == 0 {
		return DefaultMemory
	}
	return c.Memory
}

func (c Config) pids() int64 {
	switch {
	case c.Pids == 0:
		return DefaultPids
	case c.Pids < 0:
		return -1
	}
	return c.Pids
}

func (c Config) cpuSeconds() int64 {
	d := c.CPU
	if d == 0 {
		d = DefaultCPU
	}
	if d < 0 {
		return -1
	}
	return int64((d + time.Second - 1) / time.Second)
}

func (c Config) networkDenied() bool { return c.Network != NetworkAllow }

// forward is one allowlist entry as the init serves it: inside the network
// namespace it listens on Listen and relays each connection to Target
// outside.
type forward struct {
	Host   string `json:"host"`   // as written, for /etc/hosts
	Target string `json:"target"` // host:port dialled outside
	Listen string `json:"listen"` // loopback ip:port inside
	Alias  bool   `json:"alias"`  // Host is a name mapped in /etc/hosts
}

// forwards validates the allowlist and assigns each distinct host name a
// loopback address of its own (127.77.0.N), so two names on one port do
// not collide. Loopback addresses are served as they are.
func forwards(allow []string) ([]forward, error) {
	var out []forward
	names := map[string]string{}
	for _, a := range allow {
		host, port, err := net.SplitHostPort(a)
		if err != nil || host == "" {
			return nil, fmt.Errorf("%w %q: want host:port", ErrAllow, a)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("%w %q: port %q is not a number from 1 to 65535", ErrAllow, a, port)
		}
		f := forward{Host: host, Target: net.JoinHostPort(host, port)}
		switch ip := net.ParseIP(host); {
		case ip != nil && ip.IsLoopback():
			f.Listen = f.Target
		case ip != nil:
			return nil, fmt.Errorf("%w %q: only host names and loopback addresses can be allowed (the sandbox maps a name to a loopback forwarder; a bare IP would need a route)", ErrAllow, a)
		case strings.EqualFold(host, "localhost"):
			f.Listen = net.JoinHostPort("127.0.0.1", port)
		default:
			addr, ok := names[strings.ToLower(host)]
			if !ok {
				if len(names) >= 250 {
					return nil, fmt.Errorf("%w %q: too many host names", ErrAllow, a)
				}
				addr = fmt.Sprintf("127.77.0.%d", len(names)+1)
				names[strings.ToLower(host)] = addr
			}
			f.Listen, f.Alias = net.JoinHostPort(addr, port), true
		}
		out = append(out, f)
	}
	return out, nil
}

// ValidateAllow checks allowlist entries as Prepare will, so a spec can be
// rejected before anything runs.
func ValidateAllow(allow []string) error {
	_, err := forwards(allow)
	return err
}
