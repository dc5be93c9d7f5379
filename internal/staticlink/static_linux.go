//go:build linux && cgo && !race && netgo && osusergo && !agentctl_dynamic

package staticlink

// With -tags netgo,osusergo (the README's build command) agentctl links
// statically on Linux: every command starts sooner (bench/run's start-up
// row measures it against the dynamic binary a plain `go build` makes),
// which every sandboxed tool call, every crashtest child and every
// `agentctl query` pays.
//
// The tags are the condition because a static glibc binary is only sound,
// and only links without warnings, when nothing needs glibc's NSS or
// dlopen at run time: netgo and osusergo give Go's own resolver and user
// lookups (/etc/hosts, /etc/resolv.conf, /etc/passwd, /etc/group) instead
// of getaddrinfo and getpwuid_r. What DuckDB still pulls in is named in
// static_linux.c: dlopen (extensions are all linked in; loading one fails
// with a message) and getpwuid (only for the owner of a conflicting
// database lock in an error message; agentctl's databases are in memory)
// and getaddrinfo (DuckDB's HTTP client, for remote files agentctl never
// asks it to read).
// Without the tags, or with -tags agentctl_dynamic, the binary is dynamic.

// #cgo LDFLAGS: -static -Wl,--wrap=dlopen -Wl,--wrap=dlerror -Wl,--wrap=getpwuid -Wl,--wrap=getaddrinfo
import "C"
