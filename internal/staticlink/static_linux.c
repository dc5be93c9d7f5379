//go:build linux && cgo && !race && netgo && osusergo && !agentctl_dynamic

// The glibc functions DuckDB references that a static binary cannot
// use as glibc means them (both need glibc's shared libraries at run
// time, hence the linker's warnings). The linker routes DuckDB's calls
// here (-Wl,--wrap in static_linux.go), so glibc's versions, and their
// warnings, are not linked in.

#include <errno.h>
#include <netdb.h>
#include <pwd.h>
#include <stddef.h>
#include <sys/types.h>

static const char *agentctl_dlerror_msg;

// DuckDB's extensions are linked into agentctl; nothing is loaded at run
// time (the database is opened with autoloading off).
void *__wrap_dlopen(const char *file, int mode) {
	(void)file;
	(void)mode;
	agentctl_dlerror_msg = "agentctl is linked statically: DuckDB extensions are built in and none can be loaded at run time";
	return NULL;
}

char *__wrap_dlerror(void) {
	const char *m = agentctl_dlerror_msg;
	agentctl_dlerror_msg = NULL;
	return (char *)m;
}

// DuckDB names the owner of a conflicting lock on a database file with
// getpwuid; it checks for NULL. agentctl's databases are in memory.
struct passwd *__wrap_getpwuid(uid_t uid) {
	(void)uid;
	errno = ENOENT;
	return NULL;
}

// DuckDB's HTTP client (httpfs) resolves host names with getaddrinfo;
// agentctl reads local files only, so a name never resolves here.
int __wrap_getaddrinfo(const char *node, const char *service, const struct addrinfo *hints, struct addrinfo **res) {
	(void)node;
	(void)service;
	(void)hints;
	*res = NULL;
	return EAI_FAIL;
}
