// Package staticlink links the importing binary statically on Linux when
// it is built with -tags netgo,osusergo (see static_linux.go for why those
// tags), and routes the few glibc functions DuckDB references that a
// static binary cannot use to stubs that say so (static_linux.c), so the
// link prints no warnings. Import it for its effect, from a main package:
//
//	import _ "github.com/agentctl/agentctl/internal/staticlink"
//
// cmd/agentctl and bench/floor (the bare DuckDB reference of bench/run,
// which must start the way agentctl does) import it. Without the tags it
// is empty and the binary is linked dynamically.
package staticlink
