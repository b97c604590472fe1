// Package worktree keeps a task's state on disk: its directory under the
// state directory's tasks/, the lock that processes attached to it share,
// its record (task.json), its git worktree and branch, and the process
// groups its servers run in. Create makes all of it or, if a step fails,
// nothing; Teardown saves what must not be lost (uncommitted work as a git
// stash entry, the task's record under closed-tasks/) and then removes it.
//
// It knows nothing about catalogs or calls; of servers it knows only their
// process groups.
//
// Only the root airlock package imports worktree.
package worktree
