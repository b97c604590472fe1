package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// gitTimeout bounds one git command.
const gitTimeout = 30 * time.Second

// git runs a git command in dir and returns its trimmed stdout. Worktrees
// are what git itself does best, so Airlock uses the git command rather than
// reimplementing any of it.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// Never wait for a person: no pager, no credential or editor prompts.
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_PAGER=cat", "GIT_EDITOR=true")
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			msg = fmt.Sprintf("no answer within %s", gitTimeout)
		}
		return "", fmt.Errorf("git %s: %s", subcommand(args), msg)
	}
	return strings.TrimSpace(stdout.String()), nil
}

// repoRoot returns the top-level directory of the repository dir is in.
func repoRoot(ctx context.Context, dir string) (string, error) {
	root, err := git(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return "", fmt.Errorf("%s is not inside a git repository (%v)", dir, err)
	}
	return root, nil
}

func branchExists(ctx context.Context, repo, branch string) bool {
	_, err := git(ctx, repo, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch)
	return err == nil
}

// dirty reports whether a worktree has changes git would lose on removal:
// modified, staged or untracked files (ignored files are not work).
func dirty(ctx context.Context, worktree string) (bool, error) {
	out, err := git(ctx, worktree, "status", "--porcelain", "--untracked-files=all")
	if err != nil {
		return false, err
	}
	return out != "", nil
}

// stash saves every change of a worktree, untracked files included, as a
// stash entry of the repository, so that removing the worktree loses
// nothing. It returns the stash commit.
func stash(ctx context.Context, worktree, message string) (string, error) {
	args := []string{"stash", "push", "--include-untracked", "--message", message}
	if name, _ := git(ctx, worktree, "config", "user.email"); name == "" {
		// A stash is a commit, and git refuses to make one without an
		// identity; an unconfigured machine must not lose work for that.
		args = append([]string{"-c", "user.name=airlock", "-c", "user.email=airlock@localhost"}, args...)
	}
	if _, err := git(ctx, worktree, args...); err != nil {
		return "", err
	}
	return git(ctx, worktree, "rev-parse", "refs/stash")
}

// subcommand names a git invocation for messages, skipping -c options.
func subcommand(args []string) string {
	for i := 0; i < len(args); i++ {
		if args[i] == "-c" {
			i++
			continue
		}
		return args[i]
	}
	return ""
}
