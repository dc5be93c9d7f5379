package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

// echoServe answers each connection on ln with "served:" and the line it
// read, until ln is closed.
func echoServe(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			line, _ := bufio.NewReader(c).ReadString('\n')
			fmt.Fprintf(c, "served:%s", line)
		}()
	}
}

// talkScript connects from inside the sandbox to 127.0.0.1:$1 with bash's
// /dev/tcp, sends a line and prints the answer, or "refused".
const talkScript = `talk() { if exec 3<>/dev/tcp/127.0.0.1/$1; then echo ping >&3; read -r a <&3; echo "$a"; exec 3>&-; else echo refused; fi; }; `

// TestServeInsideNamespace: with Config.Serve and the network denied, the
// sandboxed process reaches the harness's server at ServeAddr, on a
// socket made inside its own network namespace, while a server listening
// on the host's loopback stays unreachable from it. With the network
// shared the harness serves on the host's loopback instead.
func TestServeInsideNamespace(t *testing.T) {
	needSandbox(t)
	host, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	go echoServe(host)
	hostPort := host.Addr().(*net.TCPAddr).Port

	for _, tc := range []struct {
		name     string
		cfg      Config
		hostSeen bool
	}{
		{"denied", Config{Serve: "127.0.0.1:0"}, false},
		{"denied, fixed port", Config{Serve: "127.0.0.1:9999"}, false},
		{"shared network", Config{Serve: "127.0.0.1:0", Network: NetworkAllow}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := hostDir(t)
			l, err := tc.cfg.Prepare(ws, ws, []string{"bash", "-c", talkScript + `talk "$SERVE_PORT"; talk ` + fmt.Sprint(hostPort)}, []string{"PATH=/usr/bin:/bin"})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			_, port, _ := net.SplitHostPort(l.ServeAddr)
			cmd := l.Command(context.Background())
			cmd.Env = append(l.Env, "SERVE_PORT="+port)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := l.Start(cmd); err != nil {
				t.Fatal(err)
			}
			ln, err := l.Listener(10 * time.Second)
			if err != nil {
				cmd.Wait()
				t.Fatalf("Listener: %v (output %q)", err, out.String())
			}
			go echoServe(ln)
			if err := cmd.Wait(); err != nil {
				t.Fatalf("wait: %v (output %q)", err, out.String())
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			if len(lines) < 2 || lines[0] != "served:ping" {
				t.Fatalf("output %q: the first line is not the harness's answer", out.String())
			}
			last := lines[len(lines)-1]
			if tc.hostSeen && last != "served:ping" {
				t.Errorf("shared network: the host's server answered %q, want served:ping", last)
			}
			if !tc.hostSeen && last != "refused" {
				t.Errorf("denied network: the host's loopback server answered %q, want refused", last)
			}
		})
	}
}

// TestServeErrors: a serve address that is not loopback, or that an
// allowlist entry already uses, is refused before anything starts; a
// launch closed before its init handed over a listener says so instead of
// waiting.
func TestServeErrors(t *testing.T) {
	needSandbox(t)
	ws := hostDir(t)
	for _, c := range []Config{
		{Serve: "10.0.0.1:80"},
		{Serve: "localhost:80"},
		{Serve: "127.0.0.1"},
		{Serve: "127.0.0.1:5000", Allow: []string{"127.0.0.1:5000"}},
	} {
		if l, err := c.Prepare(ws, ws, []string{"true"}, nil); !errors.Is(err, ErrServe) {
			if l != nil {
				l.Close()
			}
			t.Errorf("Prepare(Serve %q, Allow %v) = %v, want ErrServe", c.Serve, c.Allow, err)
		}
	}
	l, err := Config{Serve: "127.0.0.1:0"}.Prepare(ws, ws, []string{"true"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	l.Close() // never started: nothing will be handed over
	if _, err := l.Listener(time.Second); !errors.Is(err, ErrNoListener) {
		t.Errorf("Listener after Close without a start = %v, want ErrNoListener", err)
	}
}
