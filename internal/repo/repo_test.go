package repo

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slipway/internal/agenttest"
	"strings"
	"testing"
)

func TestTaskBranchLifecycle(t *testing.T) {
	ctx := context.Background()
	bare := agenttest.BareRepo(t, nil)
	g, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := Remote{URL: bare}
	if err := g.Sync(ctx, "p1", r); err != nil {
		t.Fatal(err)
	}
	if err := g.Sync(ctx, "p1", r); err != nil { // fetch path
		t.Fatal(err)
	}
	if _, err := g.AddWorktree(ctx, "p1", "t1", "slipway/task-1", "nope"); !errors.Is(err, ErrNoBranch) {
		t.Fatalf("missing base: %v", err)
	}
	wt, err := g.AddWorktree(ctx, "p1", "t1", "slipway/task-1", "main")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(wt, "README.md")); string(b) != "hello\n" {
		t.Fatalf("worktree README = %q", b)
	}

	// Nothing changed: nothing to commit.
	if _, changed, err := g.Commit(ctx, "p1", "t1", "msg", "Agent", "agent@x"); err != nil || changed {
		t.Fatalf("empty commit: changed=%v err=%v", changed, err)
	}

	// The agent edits a file, adds one, and plants a hostile .git directory
	// with a hook and an fsmonitor command; none of it may run on the host.
	os.WriteFile(filepath.Join(wt, "README.md"), []byte("hello\nworld\n"), 0o644)
	os.WriteFile(filepath.Join(wt, "new.txt"), []byte("a\nb\n"), 0o644)
	marker := filepath.Join(t.TempDir(), "pwned")
	os.Remove(filepath.Join(wt, ".git"))
	os.MkdirAll(filepath.Join(wt, ".git", "hooks"), 0o755)
	os.WriteFile(filepath.Join(wt, ".git", "config"), []byte("[core]\n\tfsmonitor = touch "+marker+"\n\thooksPath = .git/hooks\n"), 0o644)
	os.WriteFile(filepath.Join(wt, ".git", "hooks", "pre-commit"), []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755)

	sha, changed, err := g.Commit(ctx, "p1", "t1", "Do the thing\n\nTask: t1", "Slipway Agent", "agent@slipway.invalid")
	if err != nil || !changed || len(sha) != 40 {
		t.Fatalf("commit: %q %v %v", sha, changed, err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a hook or fsmonitor planted by the agent ran on the host")
	}
	if err := g.Push(ctx, "p1", r, "slipway/task-1"); err != nil {
		t.Fatal(err)
	}
	// The commit is in the remote, with our author, and without the .git dir.
	if got := agenttest.Git(t, bare, "rev-parse", "refs/heads/slipway/task-1"); got != sha {
		t.Fatalf("remote branch at %s, want %s", got, sha)
	}
	if got := agenttest.Git(t, bare, "log", "-1", "--format=%an <%ae>|%s", sha); got != "Slipway Agent <agent@slipway.invalid>|Do the thing" {
		t.Fatalf("commit = %q", got)
	}
	if files := agenttest.Git(t, bare, "ls-tree", "-r", "--name-only", sha); files != "README.md\nnew.txt" {
		t.Fatalf("committed files = %q", files)
	}
	files, ins, del, err := g.DiffStat(ctx, "p1", "main", "slipway/task-1")
	if err != nil || files != 2 || ins != 3 || del != 0 {
		t.Fatalf("diffstat = %d %d %d %v", files, ins, del, err)
	}

	// A second attempt continues on the existing branch.
	g.RemoveWorktree(ctx, "p1", "t1")
	if _, err := os.Stat(wt); !os.IsNotExist(err) {
		t.Fatal("worktree not removed")
	}
	wt2, err := g.AddWorktree(ctx, "p1", "t1", "slipway/task-1", "main")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(wt2, "new.txt")); string(b) != "a\nb\n" {
		t.Fatal("second attempt did not start from the task branch")
	}
}

func TestErrorsAreClearAndScrubbed(t *testing.T) {
	ctx := context.Background()
	g, _ := New(t.TempDir())
	err := g.Sync(ctx, "p2", Remote{URL: filepath.Join(t.TempDir(), "missing.git"), Username: "u", Token: "tok-SECRET-123"})
	var ge *Error
	if !errors.As(err, &ge) || ge.Op != "fetch" {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(err.Error(), "tok-SECRET-123") {
		t.Fatal("the token leaked into the error")
	}
	if _, err := os.Stat(g.MirrorPath("p2")); !os.IsNotExist(err) {
		t.Fatal("a failed clone left a mirror behind")
	}
}

// A fetch while another task's branch exists only locally (not pushed yet)
// leaves that branch alone.
func TestFetchKeepsUnpushedTaskBranches(t *testing.T) {
	ctx := context.Background()
	bare := agenttest.BareRepo(t, nil)
	g, _ := New(t.TempDir())
	r := Remote{URL: bare}
	if err := g.Sync(ctx, "p", r); err != nil {
		t.Fatal(err)
	}
	wt, err := g.AddWorktree(ctx, "p", "a", "slipway/task-a", "main")
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Sync(ctx, "p", r); err != nil { // another task starts meanwhile
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(wt, "x.txt"), []byte("x\n"), 0o644)
	sha, changed, err := g.Commit(ctx, "p", "a", "m", "A", "a@x")
	if err != nil || !changed {
		t.Fatalf("commit: %v %v", changed, err)
	}
	if parent := agenttest.Git(t, g.MirrorPath("p"), "rev-parse", sha+"^"); parent != agenttest.Git(t, bare, "rev-parse", "main") {
		t.Fatalf("the task commit's parent is %s, not main: the branch was lost and recreated", parent)
	}
	if files, _, _, err := g.DiffStat(ctx, "p", "main", "slipway/task-a"); err != nil || files != 1 {
		t.Fatalf("diffstat = %d, %v", files, err)
	}
}

// TestConcurrentSyncsStayFresh: syncs of one project share fetches, yet a
// sync asked for after a push always sees the pushed commit.
func TestConcurrentSyncsStayFresh(t *testing.T) {
	ctx := context.Background()
	bare := agenttest.BareRepo(t, nil)
	g, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := Remote{URL: bare}
	seed := t.TempDir()
	agenttest.Git(t, seed, "clone", "-q", bare, ".")
	for i := 0; i < 5; i++ {
		// A new commit lands on the remote's main...
		if err := os.WriteFile(filepath.Join(seed, "n.txt"), []byte(strings.Repeat("x", i+1)), 0o644); err != nil {
			t.Fatal(err)
		}
		agenttest.Git(t, seed, "add", ".")
		agenttest.Git(t, seed, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c")
		agenttest.Git(t, seed, "push", "-q", "origin", "HEAD:main")
		want := agenttest.Git(t, seed, "rev-parse", "HEAD")
		// ...and every sync asked for after it sees it, however they share.
		errs := make(chan error, 8)
		for j := 0; j < 8; j++ {
			go func() { errs <- g.Sync(ctx, "p1", r) }()
		}
		for j := 0; j < 8; j++ {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		if got := agenttest.Git(t, g.MirrorPath("p1"), "rev-parse", "refs/remotes/origin/main"); got != want {
			t.Fatalf("round %d: the mirror's main is %s, want %s", i, got, want)
		}
	}
}

// Probe reads a remote's HEAD and branches without fetching, over the
// real smart HTTP protocol with credentials, and says what went wrong
// when it cannot.
func TestProbeReadsTheRemote(t *testing.T) {
	ctx := context.Background()
	g, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	bare := agenttest.BareRepo(t, nil)
	agenttest.Git(t, bare, "symbolic-ref", "HEAD", "refs/heads/master")
	agenttest.Git(t, bare, "branch", "-m", "main", "master")
	agenttest.Git(t, bare, "branch", "dev", "master")
	url := agenttest.HTTPSRemote(t, bare, "bot", "s3cret-token")
	r := Remote{URL: url, Username: "bot", Token: "s3cret-token"}

	h, err := g.Probe(ctx, r, "")
	if err != nil || h.Default != "master" || h.Empty || h.Has {
		t.Fatalf("HEAD: %+v, %v", h, err)
	}
	for branch, want := range map[string]bool{"dev": true, "master": true, "main": false, "de": false} {
		if h, err := g.Probe(ctx, r, branch); err != nil || h.Has != want || h.Default != "master" {
			t.Errorf("branch %q: %+v, %v (want has=%v)", branch, h, err, want)
		}
	}

	// Wrong credentials: an error that names the failure and never the token.
	_, err = g.Probe(ctx, Remote{URL: url, Username: "bot", Token: "wrong-token"}, "")
	if err == nil || !strings.Contains(err.Error(), "Authentication failed") || strings.Contains(err.Error(), "wrong-token") {
		t.Fatalf("bad credentials: %v", err)
	}

	// HEAD naming a branch nothing was pushed to (git init --bare on a
	// master default, then a push of main): no default, the branches
	// listed, and asking about a branch still answers.
	unborn := agenttest.BareRepo(t, nil)
	agenttest.Git(t, unborn, "symbolic-ref", "HEAD", "refs/heads/master")
	if h, err := g.Probe(ctx, Remote{URL: unborn}, "no-such-branch"); err != nil || h.Default != "" || h.Empty || h.Has ||
		len(h.Branches) != 1 || h.Branches[0] != "main" {
		t.Fatalf("unborn HEAD, a missing branch: %+v, %v", h, err)
	}
	if h, err := g.Probe(ctx, Remote{URL: unborn}, "main"); err != nil || !h.Has || h.Empty {
		t.Fatalf("unborn HEAD, main: %+v, %v", h, err)
	}

	// A repository nothing was pushed to yet is empty, not an error.
	empty := filepath.Join(t.TempDir(), "empty.git")
	agenttest.Git(t, "", "init", "-q", "--bare", "-b", "trunk", empty)
	if h, err := g.Probe(ctx, Remote{URL: empty}, "trunk"); err != nil || !h.Empty || h.Has {
		t.Fatalf("empty: %+v, %v", h, err)
	}
}

// Diff shows what a task's commit changed against its base: per-file
// counts (renames and binary files too) and the patch, cut at its limit.
func TestDiffOfACommit(t *testing.T) {
	ctx := context.Background()
	bare := agenttest.BareRepo(t, map[string]string{"README.md": "hello\n", "old.txt": "moving\n"})
	g, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := Remote{URL: bare}
	if err := g.Sync(ctx, "p1", r); err != nil {
		t.Fatal(err)
	}
	wt, err := g.AddWorktree(ctx, "p1", "t1", "slipway/task-1", "main")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(wt, "README.md"), []byte("hello\nworld\n"), 0o644)
	os.WriteFile(filepath.Join(wt, "logo.bin"), []byte{0, 1, 2, 0, 3}, 0o644)
	os.Rename(filepath.Join(wt, "old.txt"), filepath.Join(wt, "new.txt"))
	sha, changed, err := g.Commit(ctx, "p1", "t1", "change", "Agent", "agent@x")
	if err != nil || !changed {
		t.Fatalf("commit: %v %v", changed, err)
	}
	c, err := g.Diff(ctx, "p1", r, "main", sha, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]FileChange{}
	for _, f := range c.Files {
		files[f.Path] = f
	}
	if f := files["README.md"]; f.Insertions != 1 || f.Deletions != 0 {
		t.Errorf("README.md: %+v", f)
	}
	if f, ok := files["logo.bin"]; !ok || !f.Binary {
		t.Errorf("logo.bin: %+v", f)
	}
	if _, ok := files["old.txt → new.txt"]; !ok || len(c.Files) != 3 {
		t.Errorf("files: %+v", c.Files)
	}
	if c.Truncated || !strings.Contains(c.Patch, "+world") || !strings.Contains(c.Patch, "rename from old.txt") {
		t.Errorf("patch (truncated %v):\n%s", c.Truncated, c.Patch)
	}
	cut, err := g.Diff(ctx, "p1", r, "main", sha, 40)
	if err != nil || !cut.Truncated || len(cut.Patch) != 40 {
		t.Fatalf("cut patch: %d bytes, truncated %v, %v", len(cut.Patch), cut.Truncated, err)
	}
	if _, err := g.Diff(ctx, "p1", r, "main", "HEAD; rm -rf /", 100); err == nil {
		t.Fatal("a commit id that is not one was taken")
	}
	if _, err := g.Diff(ctx, "p1", r, "main", strings.Repeat("a", 40), 100); !errors.Is(err, ErrNoBranch) {
		t.Fatalf("an unknown commit: %v", err)
	}
}
