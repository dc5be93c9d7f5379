// Package gitsafe is the only place agentctl runs git, and the only place
// it reads a workspace's .git. A workspace is written by an agent, or comes
// from elsewhere (a home unpacked from a CI artifact), so everything under
// its .git is hostile: git config names commands (filter drivers, textconv,
// diff.external, core.fsmonitor, core.sshCommand, hooks), core.worktree
// and a gitdir: link point git at other folders, alternates and symlinks
// lead its object reads out of the workspace, and an index can hold paths
// such as ../../root/.ssh/id_rsa that git diff reads and prints.
//
// # How it holds
//
// A repository's own config is always read by git and cannot be switched
// off, and filter drivers cannot be enumerated to be disabled with -c. So
// git never sees the workspace's git folder. Open builds a private one in
// a temporary folder:
//
//  1. config is written by this package: the repository format and
//     nothing else. No byte of the workspace's config, hooks, info/ or
//     refs is copied.
//  2. HEAD is the workspace's HEAD commit, resolved by Go code (HEAD, loose
//     refs, packed-refs; every ref name and object id validated) and
//     written detached. No refs are copied.
//  3. The workspace's object folder is an alternate of a private, empty
//     object folder, so git reads the workspace's objects and writes its
//     own (the empty blob of an intent-to-add entry) only to the private
//     folder. It is used only when it resolves inside the workspace, every
//     alternates file it names (recursively) resolves inside the workspace,
//     and nothing under them is a symlink or other than a file or folder.
//  4. The index is parsed by Go code, each entry's mode and path checked
//     (no absolute path, no . or .. or .git component), and written back
//     with its entries only: no untracked cache, fsmonitor, split index or
//     cache tree extension reaches git. A split or sparse index is refused.
//  5. shallow is copied when every line is an object id.
//
// git then runs with --work-tree set to the workspace, an environment
// built from nothing but PATH (no GIT_* of the caller: GIT_DIR,
// GIT_WORK_TREE, GIT_CONFIG_PARAMETERS, GIT_EXTERNAL_DIFF, ...), HOME an
// empty folder, GIT_CONFIG_NOSYSTEM, GIT_CONFIG_GLOBAL=/dev/null and
// GIT_ATTR_NOSYSTEM, and -c settings that hold in any child git too
// (hooks, fsmonitor, attributes file, submodules ignored, untracked cache
// off). Diffs use --no-ext-diff, --no-textconv and --ignore-submodules=all
// (a submodule's dirtiness is found by running git inside it, under its
// own config). Untracked nested repositories are not added. A
// .gitattributes in the tree can still name a filter or diff driver, but
// no driver is configured, so none runs. Every git command has a timeout,
// and its output and error text are capped.
//
// A layout that would make git read outside the workspace is refused with
// a *RefusedError saying why, and git is not run at all.
//
// What it cannot do: the checks see the workspace as it is when Open runs.
// An agent still running in its sandbox while a bundle is made could swap a
// folder for a symlink between the check and git's read. Go-side reads go
// through an os.Root and cannot be led out that way; git's cannot.
//
// # Example
//
//	r, err := gitsafe.Open(ws)
//	if err != nil { ... } // ErrNoRepo, *RefusedError, or an I/O error
//	defer r.Close()
//	base := r.RootCommit(ctx)
//	err = r.DiffWorkTree(ctx, base, w)
//
// Head reads the HEAD commit id of a workspace without running git.
//
// # Concurrency
//
// A Repo's methods must not be called concurrently: they share the private
// git folder and its index. Separate Repos are independent.
package gitsafe
