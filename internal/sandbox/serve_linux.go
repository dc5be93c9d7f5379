package sandbox

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultServePort is the port Config.Serve ":0" gets inside a network
// namespace of its own, where every port is free; it is moved past the
// ports of the allowlist.
const DefaultServePort = 4141

var (
	// ErrServe means Config.Serve is not a loopback ip:port.
	ErrServe = errors.New("sandbox: invalid serve address")
	// ErrNoListener means the init ended before it handed over the
	// listener of Config.Serve (it says why on the process's stderr).
	ErrNoListener = errors.New("sandbox: the sandbox init handed over no listener")
)

// serveSide is the harness's end of Config.Serve: a listener made on the
// host, or the socket over which the init sends the one it made inside
// the namespace.
type serveSide struct {
	mu   sync.Mutex
	ln   net.Listener // once known
	ctrl *os.File     // SOCK_SEQPACKET; nil when ln was made on the host
	err  error
}

// parseServe checks a serve address: a loopback IP and a port (0 picks).
func parseServe(addr string) (net.IP, int, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, 0, fmt.Errorf("%w %q: want a loopback ip:port such as 127.0.0.1:0", ErrServe, addr)
	}
	ip := net.ParseIP(host)
	n, perr := strconv.Atoi(port)
	if ip == nil || !ip.IsLoopback() || perr != nil || n < 0 || n > 65535 {
		return nil, 0, fmt.Errorf("%w %q: want a loopback ip:port such as 127.0.0.1:0", ErrServe, addr)
	}
	return ip, n, nil
}

// hostServe listens on the host's loopback, for a process that shares the
// host's network.
func hostServe(addr string) (*serveSide, string, error) {
	if _, _, err := parseServe(addr); err != nil {
		return nil, "", err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("sandbox: listen on %s: %w", addr, err)
	}
	return &serveSide{ln: ln}, ln.Addr().String(), nil
}

// prepareServe arranges Config.Serve for an init: inside a network
// namespace of its own the init listens and sends the listener over a
// socketpair; sharing the host's network the harness listens itself.
func (l *Launch) prepareServe(c Config, ic *initConfig) error {
	if !ic.NetDenied {
		ss, addr, err := hostServe(c.Serve)
		if err != nil {
			return err
		}
		l.serve, l.ServeAddr = ss, addr
		return nil
	}
	ip, port, err := parseServe(c.Serve)
	if err != nil {
		return err
	}
	if port == 0 {
		port = DefaultServePort
		for taken(ic.Forwards, ip, port) {
			port++
		}
	} else if taken(ic.Forwards, ip, port) {
		return fmt.Errorf("%w %q: the allowlist forwards the same address", ErrServe, c.Serve)
	}
	parent, child, err := socketpair()
	if err != nil {
		return fmt.Errorf("sandbox: serve socket: %w", err)
	}
	l.serve = &serveSide{ctrl: parent}
	l.ServeAddr = net.JoinHostPort(ip.String(), strconv.Itoa(port))
	l.childServe = child
	l.ExtraFiles = append(l.ExtraFiles, child)
	ic.Serve, ic.ServeFD = l.ServeAddr, 2+len(l.ExtraFiles)
	return nil
}

func taken(fw []forward, ip net.IP, port int) bool {
	for _, f := range fw {
		h, p, _ := net.SplitHostPort(f.Listen)
		if p == strconv.Itoa(port) && (net.ParseIP(h).Equal(ip) || net.ParseIP(h).IsUnspecified()) {
			return true
		}
	}
	return false
}

// sendListener, in the init, listens on addr inside the namespace and
// sends the listening socket to the harness over fd, then closes its own
// copies: only the harness accepts on it.
func sendListener(fd int, addr string) error {
	unix.CloseOnExec(fd)
	defer unix.Close(fd)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.Sendmsg(fd, []byte{1}, unix.UnixRights(int(f.Fd())), nil, 0)
}

// Listener returns the listener of Config.Serve, waiting up to timeout
// for the init to hand it over (call it after Started). The caller serves
// on it and closes it; Close closes it too. It is safe to call more than
// once and returns the same listener.
func (l *Launch) Listener(timeout time.Duration) (net.Listener, error) {
	if l.serve == nil {
		return nil, fmt.Errorf("sandbox: the launch has no serve address (Config.Serve)")
	}
	return l.serve.listener(timeout)
}

func (s *serveSide) listener(timeout time.Duration) (net.Listener, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln != nil || s.err != nil {
		return s.ln, s.err
	}
	s.ln, s.err = receiveListener(s.ctrl, timeout)
	return s.ln, s.err
}

func receiveListener(ctrl *os.File, timeout time.Duration) (net.Listener, error) {
	deadline := time.Now().Add(timeout)
	for {
		ms := int(time.Until(deadline) / time.Millisecond)
		if ms <= 0 {
			return nil, fmt.Errorf("%w within %s", ErrNoListener, timeout)
		}
		fds := []unix.PollFd{{Fd: int32(ctrl.Fd()), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, ms)
		if errors.Is(err, unix.EINTR) || (err == nil && n == 0) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("sandbox: wait for the listener: %w", err)
		}
		break
	}
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := unix.Recvmsg(int(ctrl.Fd()), buf, oob, 0)
	if err != nil {
		return nil, fmt.Errorf("sandbox: receive the listener: %w", err)
	}
	got := parseRights(oob[:oobn])
	if n == 0 || len(got) != 1 {
		for _, fd := range got {
			unix.Close(fd)
		}
		return nil, ErrNoListener
	}
	f := os.NewFile(uintptr(got[0]), "sandbox-serve")
	defer f.Close()
	ln, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("sandbox: the init's listener: %w", err)
	}
	return ln, nil
}

func (s *serveSide) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln != nil {
		s.ln.Close()
	}
	if s.ctrl != nil {
		s.ctrl.Close()
		s.ctrl = nil
	}
	if s.err == nil && s.ln == nil {
		s.err = ErrNoListener
	}
}
