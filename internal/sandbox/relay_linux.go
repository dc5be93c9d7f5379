package sandbox

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// dialTimeout bounds the harness's connection to an allowed target.
const dialTimeout = 10 * time.Second

// serveForwards listens, inside the network namespace, on each forward's
// loopback address and hands every accepted connection to the harness over
// ctrl (a SOCK_SEQPACKET socket): one message per connection, holding the
// forward's index and the connection's descriptor (SCM_RIGHTS). The
// harness, outside the namespace, dials the target and relays.
func serveForwards(ctrl *os.File, fw []forward) error {
	var mu sync.Mutex
	for i, f := range fw {
		ln, err := net.Listen("tcp", f.Listen)
		if err != nil {
			return err
		}
		go func(i int, ln net.Listener) {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				tc := c.(*net.TCPConn)
				cf, err := tc.File()
				tc.Close()
				if err != nil {
					continue
				}
				mu.Lock()
				err = unix.Sendmsg(int(ctrl.Fd()), []byte{byte(i)}, unix.UnixRights(int(cf.Fd())), nil, 0)
				mu.Unlock()
				cf.Close()
				if err != nil {
					return
				}
			}
		}(i, ln)
	}
	return nil
}

// relay is the harness side of the allowlist forwarder.
type relay struct {
	ctrl  *os.File
	mu    sync.Mutex
	conns map[io.Closer]bool
	done  bool
	wg    sync.WaitGroup
}

func startRelay(ctrl *os.File, fw []forward) *relay {
	r := &relay{ctrl: ctrl, conns: map[io.Closer]bool{}}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		buf := make([]byte, 1)
		oob := make([]byte, unix.CmsgSpace(4))
		for {
			n, oobn, _, _, err := unix.Recvmsg(int(ctrl.Fd()), buf, oob, 0)
			if err != nil {
				if errors.Is(err, unix.EINTR) {
					continue
				}
				return
			}
			if n == 0 && oobn == 0 {
				return // the init exited
			}
			fds := parseRights(oob[:oobn])
			if len(fds) != 1 || int(buf[0]) >= len(fw) {
				for _, fd := range fds {
					unix.Close(fd)
				}
				continue
			}
			f := os.NewFile(uintptr(fds[0]), "sandbox-conn")
			inner, err := net.FileConn(f)
			f.Close()
			if err != nil {
				continue
			}
			target := fw[buf[0]].Target
			r.wg.Add(1)
			go func() {
				defer r.wg.Done()
				r.pipe(inner, target)
			}()
		}
	}()
	return r
}

func parseRights(oob []byte) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for _, m := range msgs {
		if got, err := unix.ParseUnixRights(&m); err == nil {
			fds = append(fds, got...)
		}
	}
	return fds
}

func (r *relay) track(c io.Closer) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		c.Close()
		return false
	}
	r.conns[c] = true
	return true
}

func (r *relay) untrack(c io.Closer) {
	r.mu.Lock()
	delete(r.conns, c)
	r.mu.Unlock()
	c.Close()
}

func (r *relay) pipe(inner net.Conn, target string) {
	if !r.track(inner) {
		return
	}
	defer r.untrack(inner)
	outer, err := net.DialTimeout("tcp", target, dialTimeout)
	if err != nil {
		return
	}
	if !r.track(outer) {
		return
	}
	defer r.untrack(outer)
	var wg sync.WaitGroup
	wg.Add(2)
	cp := func(dst, src net.Conn) {
		defer wg.Done()
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
	}
	go cp(outer, inner)
	go cp(inner, outer)
	wg.Wait()
}

// close stops accepting and closes every relayed connection, then waits
// for the relay goroutines.
func (r *relay) close() {
	r.mu.Lock()
	if r.done {
		r.mu.Unlock()
		return
	}
	r.done = true
	for c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
	_ = unix.Shutdown(int(r.ctrl.Fd()), unix.SHUT_RDWR)
	r.wg.Wait()
	r.ctrl.Close()
}
