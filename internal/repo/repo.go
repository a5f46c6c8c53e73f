// Package repo does the host-side git work of a task: a mirror per project,
// a worktree per task on its own branch, and afterwards commit, push and diff
// statistics. Credentials reach git through the environment of the git
// process only; agents never see them, and git never trusts what the agent
// could have written into the worktree (hooks, fsmonitor, a replaced .git).
package repo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Remote is where a project's repository lives and how to reach it.
type Remote struct {
	URL           string
	Username      string
	Token         string
	SSHPrivateKey string
	// Proxy, when set, is an HTTP proxy every https connection goes
	// through (outbound.Tunnel: each one checked where it lands), and no
	// other transport is allowed.
	Proxy string
	// Shallow fetches only each branch's tip (a catalog read at its tip
	// needs no history).
	Shallow bool
}

// Git manages mirrors and worktrees under a data directory.
type Git struct {
	root  string // <data dir>/git
	locks sync.Map
	// fetched is when the last successful fetch of a project (and remote
	// URL) began.
	fetched sync.Map
	// urls is the remote URL each mirror was last set to by this process.
	urls sync.Map
}

// New returns a Git rooted at dataDir/git.
func New(dataDir string) (*Git, error) {
	root, err := filepath.Abs(filepath.Join(dataDir, "git"))
	if err != nil {
		return nil, err
	}
	for _, d := range []string{"mirrors", "worktrees", "auth"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o700); err != nil {
			return nil, fmt.Errorf("repo: %w", err)
		}
	}
	return &Git{root: root}, nil
}

func (g *Git) lock(projectID string) func() {
	m, _ := g.locks.LoadOrStore(projectID, &sync.Mutex{})
	mu := m.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

// MirrorPath is the bare mirror of a project.
func (g *Git) MirrorPath(projectID string) string {
	return filepath.Join(g.root, "mirrors", projectID+".git")
}

// RemoveMirror removes a mirror that is not wanted any more.
func (g *Git) RemoveMirror(key string) error {
	defer g.lock(key)()
	g.fetched.Range(func(k, _ any) bool {
		if strings.HasPrefix(k.(string), key+"\x00") {
			g.fetched.Delete(k)
		}
		return true
	})
	g.urls.Delete(key)
	return os.RemoveAll(g.MirrorPath(key))
}

// WorktreePath is a task's worktree.
func (g *Git) WorktreePath(taskID string) string { return filepath.Join(g.root, "worktrees", taskID) }

// Error is a git failure with a message fit for a task's error field.
type Error struct {
	Op     string
	Output string
}

func (e *Error) Error() string { return "git " + e.Op + " failed: " + e.Output }

// safeConfig keeps git from running anything the repository or worktree
// could supply. safe.directory: worktrees belong to the agent's user when
// the hub runs as root (agents never run as root); git is always pointed at
// its directories explicitly, and everything it could run is off, so their
// owner does not matter.
var safeConfig = []string{"-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "protocol.ext.allow=never",
	"-c", "credential.helper=", "-c", "core.askPass=", "-c", "safe.directory=*"}

// run runs git with args; auth (may be nil) adds credential environment;
// secrets are scrubbed from any output it returns.
func (g *Git) run(ctx context.Context, op string, dir string, auth *authEnv, args ...string) (string, error) {
	cmd, secrets := command(ctx, dir, auth, args)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	text := scrub(strings.TrimSpace(out.String()), secrets)
	if err != nil {
		if ctx.Err() != nil {
			return text, fmt.Errorf("git %s: %w", op, ctx.Err())
		}
		if text == "" {
			text = err.Error()
		}
		return text, &Error{Op: op, Output: lastLines(text, 6)}
	}
	return text, nil
}

func scrub(s string, secrets []string) string {
	for _, sec := range secrets {
		if sec != "" {
			s = strings.ReplaceAll(s, sec, "[REDACTED]")
		}
	}
	return s
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// authEnv is the environment that hands credentials to one git process.
type authEnv struct {
	env     []string
	secrets []string
	cleanup func()
	shallow bool
}

// auth prepares credentials for r: an askpass script that reads them from
// this process's environment for https, a private key file for ssh.
func (g *Git) auth(r Remote) (*authEnv, error) {
	a := &authEnv{cleanup: func() {}, secrets: []string{r.Token, r.SSHPrivateKey}, shallow: r.Shallow}
	if r.Proxy != "" {
		a.secrets = append(a.secrets, r.Proxy)
		// GIT_CONFIG_COUNT adds to every git command's config: the proxy,
		// and https as the only transport (no file://, ssh or ext).
		a.env = append(a.env, "GIT_CONFIG_COUNT=4", "GIT_CONFIG_KEY_0=http.proxy", "GIT_CONFIG_VALUE_0="+r.Proxy,
			"GIT_CONFIG_KEY_1=protocol.allow", "GIT_CONFIG_VALUE_1=never", "GIT_CONFIG_KEY_2=protocol.https.allow", "GIT_CONFIG_VALUE_2=always",
			"GIT_CONFIG_KEY_3=http.proxyAuthMethod", "GIT_CONFIG_VALUE_3=basic",
			"NO_PROXY=", "no_proxy=") // nothing bypasses it
	}
	if r.Token != "" || r.Username != "" {
		askpass := filepath.Join(g.root, "auth", "askpass.sh")
		script := "#!/bin/sh\ncase \"$1\" in\n  Username*) printf '%s' \"$SLIPWAY_GIT_USERNAME\" ;;\n  *) printf '%s' \"$SLIPWAY_GIT_PASSWORD\" ;;\nesac\n"
		if err := os.WriteFile(askpass, []byte(script), 0o700); err != nil {
			return nil, fmt.Errorf("repo: %w", err)
		}
		user := r.Username
		if user == "" {
			user = "x-access-token"
		}
		a.env = append(a.env, "GIT_ASKPASS="+askpass, "SLIPWAY_GIT_USERNAME="+user, "SLIPWAY_GIT_PASSWORD="+r.Token)
	}
	if r.SSHPrivateKey != "" {
		f, err := os.CreateTemp(filepath.Join(g.root, "auth"), "key-*")
		if err != nil {
			return nil, fmt.Errorf("repo: %w", err)
		}
		key := r.SSHPrivateKey
		if !strings.HasSuffix(key, "\n") {
			key += "\n"
		}
		_, werr := f.WriteString(key)
		f.Close()
		if werr != nil {
			os.Remove(f.Name())
			return nil, fmt.Errorf("repo: %w", werr)
		}
		known := filepath.Join(g.root, "auth", "known_hosts")
		a.env = append(a.env, "GIT_SSH_COMMAND=ssh -i "+shellQuote(f.Name())+" -o IdentitiesOnly=yes -o BatchMode=yes"+
			" -o StrictHostKeyChecking=accept-new -o UserKnownHostsFile="+shellQuote(known))
		a.cleanup = func() { os.Remove(f.Name()) }
	}
	return a, nil
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// Sync makes the project's mirror current. The mirror is a bare repository
// whose remote branches live under refs/remotes/origin/ and whose task
// branches live under refs/heads/: fetching with --prune only ever prunes
// the former, so a task branch not pushed yet is never deleted under a
// running agent.
//
// Concurrent syncs of one project share fetches: a fetch that began after
// a sync was asked for saw everything that sync would have, so a sync
// waiting behind it has nothing left to do (twenty tasks queued on one
// project fetch once or twice, not twenty times).
func (g *Git) Sync(ctx context.Context, projectID string, r Remote) error {
	asked := time.Now()
	defer g.lock(projectID)()
	if began, ok := g.fetched.Load(projectID + "\x00" + r.URL); ok && began.(time.Time).After(asked) {
		return nil
	}
	began := time.Now()
	if err := g.sync(ctx, projectID, r); err != nil {
		return err
	}
	g.fetched.Store(projectID+"\x00"+r.URL, began)
	return nil
}

func (g *Git) sync(ctx context.Context, projectID string, r Remote) error {
	a, err := g.auth(r)
	if err != nil {
		return err
	}
	defer a.cleanup()
	mirror := g.MirrorPath(projectID)
	if _, err := os.Stat(filepath.Join(mirror, "HEAD")); err != nil {
		tmp := mirror + ".tmp"
		os.RemoveAll(tmp)
		if _, err := g.run(ctx, "init", g.root, nil, "init", "-q", "--bare", "--", tmp); err != nil {
			return err
		}
		if _, err := g.run(ctx, "remote add", tmp, nil, "remote", "add", "origin", "--", r.URL); err != nil {
			os.RemoveAll(tmp)
			return err
		}
		if err := g.fetch(ctx, tmp, a); err != nil {
			os.RemoveAll(tmp)
			return err
		}
		return os.Rename(tmp, mirror)
	}
	// The URL may have changed since the mirror was made (or since this
	// process last set it).
	if url, ok := g.urls.Load(projectID); !ok || url.(string) != r.URL {
		if _, err := g.run(ctx, "remote set-url", mirror, nil, "remote", "set-url", "origin", "--", r.URL); err != nil {
			return err
		}
		g.urls.Store(projectID, r.URL)
	}
	return g.fetch(ctx, mirror, a)
}

func (g *Git) fetch(ctx context.Context, dir string, a *authEnv) error {
	args := []string{"fetch", "--prune", "--no-tags"}
	if a != nil && a.shallow {
		args = append(args, "--depth=1")
	}
	_, err := g.run(ctx, "fetch", dir, a, append(args, "origin", "+refs/heads/*:refs/remotes/origin/*")...)
	return err
}

// ErrNoBranch reports a base branch missing from the repository.
var ErrNoBranch = errors.New("branch not found")

// AddWorktree checks out the task branch into the task's worktree: the
// branch from an earlier attempt when there is one, else a new branch from
// the remote's base.
func (g *Git) AddWorktree(ctx context.Context, projectID, taskID, branch, base string) (string, error) {
	defer g.lock(projectID)()
	mirror := g.MirrorPath(projectID)
	baseRef, branchRef := "refs/remotes/origin/"+base, "refs/heads/"+branch
	// One look at both refs: the base must exist; the branch may.
	refs, err := g.run(ctx, "for-each-ref", mirror, nil, "for-each-ref", "--format=%(refname)", "--", baseRef, branchRef)
	if err != nil {
		return "", err
	}
	have := map[string]bool{}
	for _, ref := range strings.Fields(refs) {
		have[ref] = true
	}
	if !have[baseRef] {
		return "", fmt.Errorf("%w: the repository has no branch %q", ErrNoBranch, base)
	}
	path := g.WorktreePath(taskID)
	if _, err := os.Stat(path); err == nil {
		if err := g.removeWorktreeLocked(ctx, mirror, path); err != nil {
			return "", err
		}
	}
	args := []string{"worktree", "add", "-b", branch, "--", path, baseRef}
	if have[branchRef] {
		// The branch exists from an earlier attempt: continue its work.
		args = []string{"worktree", "add", "--", path, branch}
	}
	if _, err := g.run(ctx, "worktree add", mirror, nil, args...); err != nil {
		return "", err
	}
	return path, nil
}

// gitDir is the worktree's administrative directory inside the mirror. Git
// is pointed at it explicitly, so a .git the agent planted is ignored.
func (g *Git) gitDir(projectID, taskID string) string {
	return filepath.Join(g.MirrorPath(projectID), "worktrees", filepath.Base(g.WorktreePath(taskID)))
}

// Commit commits everything the agent changed and returns the commit id;
// changed is false when there was nothing to commit.
func (g *Git) Commit(ctx context.Context, projectID, taskID, message, authorName, authorEmail string) (sha string, changed bool, err error) {
	wt := []string{"--git-dir=" + g.gitDir(projectID, taskID), "--work-tree=" + g.WorktreePath(taskID)}
	dir := g.WorktreePath(taskID)
	// Whatever the agent left at .git is not ours to commit or trust.
	notGit := []string{"--", ".", ":(exclude).git"}
	// A clean worktree (the common case of a task that changed nothing)
	// costs one git call.
	status, err := g.run(ctx, "status", dir, nil, append(append(wt, "status", "--porcelain", "--untracked-files=all"), notGit...)...)
	if err != nil {
		return "", false, err
	}
	if strings.TrimSpace(status) == "" {
		return "", false, nil
	}
	if _, err := g.run(ctx, "add", dir, nil, append(append(wt, "add", "--all"), notGit...)...); err != nil {
		return "", false, err
	}
	if status, err = g.run(ctx, "status", dir, nil, append(wt, "status", "--porcelain", "--untracked-files=no")...); err != nil {
		return "", false, err
	}
	if strings.TrimSpace(status) == "" {
		return "", false, nil
	}
	who := []string{"-c", "user.name=" + authorName, "-c", "user.email=" + authorEmail}
	if _, err := g.run(ctx, "commit", dir, nil, append(append(wt, who...), "commit", "--no-verify", "-q", "-m", message)...); err != nil {
		return "", false, err
	}
	sha, err = g.run(ctx, "rev-parse", dir, nil, append(wt, "rev-parse", "HEAD")...)
	return sha, true, err
}

// Push pushes the branch from the mirror to the remote.
func (g *Git) Push(ctx context.Context, projectID string, r Remote, branch string) error {
	defer g.lock(projectID)()
	a, err := g.auth(r)
	if err != nil {
		return err
	}
	defer a.cleanup()
	ref := "refs/heads/" + branch
	_, err = g.run(ctx, "push", g.MirrorPath(projectID), a, "push", "--", r.URL, ref+":"+ref)
	return err
}

// Ahead returns the branch's head and how many commits it has that the
// remote's base branch has not (0 when the branch does not exist).
func (g *Git) Ahead(ctx context.Context, projectID, base, branch string) (head string, n int, err error) {
	mirror := g.MirrorPath(projectID)
	head, err = g.run(ctx, "rev-parse", mirror, nil, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch)
	if err != nil {
		return "", 0, nil // no such branch
	}
	out, err := g.run(ctx, "rev-list", mirror, nil, "rev-list", "--count", "refs/remotes/origin/"+base+"..refs/heads/"+branch)
	if err != nil {
		return "", 0, err
	}
	n, err = strconv.Atoi(strings.TrimSpace(out))
	return head, n, err
}

var shortstat = regexp.MustCompile(`(\d+) files? changed(?:, (\d+) insertions?\(\+\))?(?:, (\d+) deletions?\(-\))?`)

// DiffStat counts what branch changes relative to base.
func (g *Git) DiffStat(ctx context.Context, projectID, base, branch string) (files, insertions, deletions int, err error) {
	out, err := g.run(ctx, "diff", g.MirrorPath(projectID), nil, "diff", "--shortstat", "refs/remotes/origin/"+base+"...refs/heads/"+branch)
	if err != nil {
		return 0, 0, 0, err
	}
	m := shortstat.FindStringSubmatch(out)
	if m == nil {
		return 0, 0, 0, nil
	}
	// An absent group is "" and counts 0; \d+ fails only past int's range.
	atoi := func(s string) int { n, _ := strconv.Atoi(s); return n }
	return atoi(m[1]), atoi(m[2]), atoi(m[3]), nil
}

// RemoveWorktree deletes a task's worktree; its branch stays in the mirror.
// A worktree that is not there is not an error.
func (g *Git) RemoveWorktree(ctx context.Context, projectID, taskID string) error {
	defer g.lock(projectID)()
	return g.removeWorktreeLocked(ctx, g.MirrorPath(projectID), g.WorktreePath(taskID))
}

func (g *Git) removeWorktreeLocked(ctx context.Context, mirror, path string) error {
	if _, err := os.Stat(mirror); errors.Is(err, os.ErrNotExist) {
		return os.RemoveAll(path) // no mirror, no bookkeeping to keep straight
	}
	// git refuses to remove a worktree it does not know (gone already, or
	// never registered); then removing the directory and pruning covers it.
	if _, err := g.run(ctx, "worktree remove", mirror, nil, "worktree", "remove", "--force", "--", path); err == nil {
		return nil
	}
	if err := os.RemoveAll(path); err != nil {
		return fmt.Errorf("removing worktree %s: %w", path, err)
	}
	_, err := g.run(ctx, "worktree prune", mirror, nil, "worktree", "prune")
	return err
}

// RemoveStrayWorktrees deletes every worktree whose task is not in keep
// (work that ended or moved elsewhere while this process was down) and
// prunes the mirrors' records of them; it returns the tasks it removed.
func (g *Git) RemoveStrayWorktrees(ctx context.Context, keep map[string]bool) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(g.root, "worktrees"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, e := range entries {
		if keep[e.Name()] {
			continue
		}
		if err := os.RemoveAll(filepath.Join(g.root, "worktrees", e.Name())); err != nil {
			return removed, fmt.Errorf("removing worktree %s: %w", e.Name(), err)
		}
		removed = append(removed, e.Name())
	}
	if len(removed) == 0 {
		return nil, nil
	}
	mirrors, err := os.ReadDir(filepath.Join(g.root, "mirrors"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return removed, err
	}
	for _, m := range mirrors {
		if _, err := g.run(ctx, "worktree prune", filepath.Join(g.root, "mirrors", m.Name()), nil, "worktree", "prune"); err != nil {
			return removed, err
		}
	}
	return removed, nil
}

// File is a file read from a repository.
type File struct {
	Path    string
	Content []byte
}

// ErrTooMany reports a directory with more files than a reader takes.
var ErrTooMany = errors.New("too many files")

// Files reads the files under dir (a repository path, "" for all) whose
// names end in one of exts, at the tip of the mirror's copy of branch (Sync
// first): at most max files of at most maxBytes each, byte for byte. It
// returns them by path with the commit they were read at.
func (g *Git) Files(ctx context.Context, projectID, branch, dir string, exts []string, max int, maxBytes int64) ([]File, string, error) {
	return g.FilesWithin(ctx, projectID, branch, dir, exts, max, maxBytes, 0)
}

// ErrTooLarge reports files larger together than a reader takes.
var ErrTooLarge = errors.New("files too large together")

// FilesWithin is Files reading at most maxTotal bytes in all (0: no
// bound); past it, ErrTooLarge.
func (g *Git) FilesWithin(ctx context.Context, projectID, branch, dir string, exts []string, max int, maxBytes, maxTotal int64) ([]File, string, error) {
	defer g.lock(projectID)()
	mirror := g.MirrorPath(projectID)
	commit, err := g.run(ctx, "rev-parse", mirror, nil, "rev-parse", "--verify", "--quiet", "refs/remotes/origin/"+branch+"^{commit}")
	if err != nil {
		return nil, "", fmt.Errorf("%w: %s", ErrNoBranch, branch)
	}
	args := []string{"ls-tree", "-r", "-l", "-z", "--full-tree", commit}
	if dir != "" {
		args = append(args, "--", strings.TrimSuffix(dir, "/")+"/")
	}
	list, err := g.run(ctx, "ls-tree", mirror, nil, args...)
	if err != nil {
		return nil, "", err
	}
	var out []File
	var total int64
	for _, entry := range strings.Split(list, "\x00") {
		// <mode> SP <type> SP <object> SP+ <size> TAB <path>
		meta, path, ok := strings.Cut(entry, "\t")
		fields := strings.Fields(meta)
		if !ok || len(fields) != 4 || fields[1] != "blob" {
			continue
		}
		if !slices.ContainsFunc(exts, func(e string) bool { return strings.HasSuffix(path, e) }) {
			continue
		}
		if len(out) == max {
			return nil, "", fmt.Errorf("%w: more than %d under %s", ErrTooMany, max, dir)
		}
		f := File{Path: path}
		size, err := strconv.ParseInt(fields[3], 10, 64)
		if err != nil || size > maxBytes {
			out = append(out, f) // Content nil: too large to read
			continue
		}
		if total += size; maxTotal > 0 && total > maxTotal {
			return nil, "", fmt.Errorf("%w: more than %d bytes under %s", ErrTooLarge, maxTotal, dir)
		}
		blob, err := g.blob(ctx, mirror, fields[2])
		if err != nil {
			return nil, "", err
		}
		f.Content = blob
		out = append(out, f)
	}
	return out, commit, nil
}

// blob reads an object's bytes as they are (run trims its output).
func (g *Git) blob(ctx context.Context, dir, object string) ([]byte, error) {
	cmd, _ := command(ctx, dir, nil, []string{"cat-file", "blob", object})
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, &Error{Op: "cat-file", Output: lastLines(strings.TrimSpace(stderr.String()), 6)}
	}
	return out, nil
}

// Revert pushes a commit onto the remote's branch that reverts sha (undo of
// a task's published change) and returns it. The branch is fetched first;
// the revert is made in a scratch worktree of the mirror that is removed
// afterwards.
func (g *Git) Revert(ctx context.Context, projectID string, r Remote, branch, sha, authorName, authorEmail string) (string, error) {
	if err := g.Sync(ctx, projectID, r); err != nil {
		return "", err
	}
	defer g.lock(projectID)()
	a, err := g.auth(r)
	if err != nil {
		return "", err
	}
	defer a.cleanup()
	mirror := g.MirrorPath(projectID)
	path := filepath.Join(g.root, "worktrees", "revert-"+filepath.Base(projectID)+"-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	if _, err := g.run(ctx, "worktree add", mirror, nil, "worktree", "add", "--detach", "--", path, "refs/remotes/origin/"+branch); err != nil {
		return "", err
	}
	defer func() { _ = g.removeWorktreeLocked(context.WithoutCancel(ctx), mirror, path) }()
	who := []string{"-c", "user.name=" + authorName, "-c", "user.email=" + authorEmail}
	if _, err := g.run(ctx, "revert", path, nil, append(who, "revert", "--no-edit", "--", sha)...); err != nil {
		return "", err
	}
	head, err := g.run(ctx, "rev-parse", path, nil, "rev-parse", "HEAD")
	if err != nil {
		return "", err
	}
	if _, err := g.run(ctx, "push", path, a, "push", "--", r.URL, "HEAD:refs/heads/"+branch); err != nil {
		return "", err
	}
	return head, nil
}

// DeleteBranch deletes a branch on the remote (and the mirror's copy). A
// branch that is not there is not an error.
func (g *Git) DeleteBranch(ctx context.Context, projectID string, r Remote, branch string) error {
	if err := g.Sync(ctx, projectID, r); err != nil {
		return err
	}
	defer g.lock(projectID)()
	a, err := g.auth(r)
	if err != nil {
		return err
	}
	defer a.cleanup()
	mirror := g.MirrorPath(projectID)
	out, err := g.run(ctx, "push --delete", mirror, a, "push", "--", r.URL, ":refs/heads/"+branch)
	if err != nil && !strings.Contains(out, "remote ref does not exist") {
		return err
	}
	// The mirror's copies go too (absent ones are not an error).
	_, _ = g.run(ctx, "update-ref -d", mirror, nil, "update-ref", "-d", "refs/heads/"+branch)
	_, _ = g.run(ctx, "update-ref -d", mirror, nil, "update-ref", "-d", "refs/remotes/origin/"+branch)
	return nil
}

// Heads is what a look at a remote shows.
type Heads struct {
	// Default is the branch the remote's HEAD names when that branch
	// exists; "" when HEAD names none, or one nothing was pushed to.
	Default string
	// Has reports whether the branch asked about exists.
	Has bool
	// Empty: the remote has no branch at all (nothing pushed yet).
	Empty bool
	// Branches lists some of the remote's branches (up to maxListed), read
	// only when HEAD names no existing branch.
	Branches []string
}

// probeTimeout bounds one look at a remote a tenant named: a host that
// never answers costs a request this long, not a hung handler.
const probeTimeout = 20 * time.Second

// maxListed bounds the branch names Probe keeps.
const maxListed = 50

// Probe asks the remote, without fetching anything, which branch its HEAD
// names and whether branch ("" asks nothing) exists. When HEAD names no
// existing branch it lists some branches instead, so a caller can still
// choose (and say what there is).
func (g *Git) Probe(ctx context.Context, r Remote, branch string) (Heads, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	a, err := g.auth(r)
	if err != nil {
		return Heads{}, err
	}
	defer a.cleanup()
	if !slices.ContainsFunc(a.env, func(e string) bool { return strings.HasPrefix(e, "GIT_SSH_COMMAND=") }) {
		// Never a prompt: an unknown host key or a passphrase fails the look.
		a.env = append(a.env, "GIT_SSH_COMMAND=ssh -o BatchMode=yes")
	}
	args := []string{"ls-remote", "--symref", "--", r.URL, "HEAD"}
	want := ""
	if branch != "" {
		want = "refs/heads/" + branch
		args = append(args, want)
	}
	out, err := g.run(ctx, "ls-remote", g.root, a, args...)
	if err != nil {
		return Heads{}, err
	}
	var h Heads
	symref, headResolves := "", false
	for _, line := range strings.Split(out, "\n") {
		ref, name, ok := strings.Cut(line, "\t")
		switch {
		case !ok:
		case strings.HasPrefix(ref, "ref: refs/heads/"):
			if name == "HEAD" {
				symref = strings.TrimPrefix(ref, "ref: refs/heads/")
			}
		case name == "HEAD":
			headResolves = true
		case want != "" && name == want:
			h.Has = true
		}
	}
	if headResolves {
		// HEAD resolves, so the branch it names exists (a detached HEAD
		// names none).
		h.Default = symref
		h.Has = h.Has || (branch != "" && branch == symref)
		return h, nil
	}
	// HEAD names nothing that exists: see what branches there are.
	listed, err := g.runLimited(ctx, g.root, 64<<10, a, "ls-remote", "--heads", "--", r.URL)
	if err != nil {
		return Heads{}, err
	}
	for _, line := range strings.Split(listed.out, "\n") {
		if _, name, ok := strings.Cut(line, "\t"); ok && strings.HasPrefix(name, "refs/heads/") {
			name = strings.TrimPrefix(name, "refs/heads/")
			h.Has = h.Has || name == branch
			if len(h.Branches) < maxListed {
				h.Branches = append(h.Branches, name)
			}
		}
	}
	h.Empty = len(h.Branches) == 0
	return h, nil
}

// FileChange is one file a change touches.
type FileChange struct {
	Path       string `json:"path"`
	Insertions int    `json:"insertions"`
	Deletions  int    `json:"deletions"`
	Binary     bool   `json:"binary,omitempty"`
}

// Change is what a commit changes relative to its merge base with the
// remote's base branch.
type Change struct {
	Files []FileChange `json:"files"`
	// Patch is the unified diff, cut at the limit asked for.
	Patch     string `json:"patch"`
	Truncated bool   `json:"truncated" doc:"The patch was cut at its limit"`
}

var commitID = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)

// maxChangedFiles bounds the file list of a change.
const maxChangedFiles = 2000

// Diff reads what commit changes against the remote's base branch (from
// their merge base, so later work on the base does not show), fetching
// first when the mirror lacks the commit. The patch stops at maxPatch
// bytes; git's output is never held whole.
func (g *Git) Diff(ctx context.Context, projectID string, r Remote, base, commit string, maxPatch int) (*Change, error) {
	if !commitID.MatchString(commit) {
		return nil, fmt.Errorf("repo: %q is not a commit id", commit)
	}
	mirror := g.MirrorPath(projectID)
	has := func() bool {
		_, err := g.run(ctx, "cat-file", mirror, nil, "cat-file", "-e", commit+"^{commit}")
		return err == nil
	}
	if _, err := os.Stat(filepath.Join(mirror, "HEAD")); err != nil || !has() {
		if err := g.Sync(ctx, projectID, r); err != nil {
			return nil, err
		}
		if !has() {
			return nil, fmt.Errorf("%w: the repository no longer has commit %s", ErrNoBranch, commit)
		}
	}
	span := "refs/remotes/origin/" + base + "..." + commit
	noExternal := []string{"diff", "--no-color", "--no-ext-diff", "--no-textconv", "-M"}
	stat, err := g.runLimited(ctx, mirror, 1<<20, nil, append(noExternal, "--numstat", "-z", span)...)
	if err != nil {
		return nil, err
	}
	c := &Change{Files: []FileChange{}}
	// -z: "ins\tdel\tpath\0", or for a rename "ins\tdel\t\0from\0to\0".
	fields := strings.Split(stat.out, "\x00")
	for i := 0; i < len(fields) && len(c.Files) < maxChangedFiles; i++ {
		counts := strings.SplitN(fields[i], "\t", 3)
		if len(counts) != 3 {
			continue
		}
		f := FileChange{Path: counts[2], Binary: counts[0] == "-"}
		f.Insertions, _ = strconv.Atoi(counts[0])
		f.Deletions, _ = strconv.Atoi(counts[1])
		if f.Path == "" && i+2 < len(fields) {
			f.Path = fields[i+1] + " → " + fields[i+2]
			i += 2
		}
		c.Files = append(c.Files, f)
	}
	patch, err := g.runLimited(ctx, mirror, maxPatch, nil, append(noExternal, span)...)
	if err != nil {
		return nil, err
	}
	c.Patch, c.Truncated = patch.out, patch.cut
	return c, nil
}

type limitedOutput struct {
	out string
	cut bool
}

// command is git with args under safeConfig in dir; auth (may be nil) adds
// credential environment, and the secrets to scrub from what it says.
func command(ctx context.Context, dir string, auth *authEnv, args []string) (*exec.Cmd, []string) {
	cmd := exec.CommandContext(ctx, "git", append(append([]string{}, safeConfig...), args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C")
	if auth == nil {
		return cmd, nil
	}
	cmd.Env = append(cmd.Env, auth.env...)
	return cmd, auth.secrets
}

// runLimited runs git keeping at most max bytes of its stdout; past that
// it stops git. auth may be nil.
func (g *Git) runLimited(ctx context.Context, dir string, max int, auth *authEnv, args ...string) (limitedOutput, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd, secrets := command(ctx, dir, auth, args)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return limitedOutput{}, err
	}
	if err := cmd.Start(); err != nil {
		return limitedOutput{}, err
	}
	buf := make([]byte, max+1)
	n, _ := io.ReadFull(pipe, buf)
	cut := n > max
	if cut {
		n = max
		cancel() // the rest is not wanted
	}
	werr := cmd.Wait()
	if werr != nil && !cut {
		return limitedOutput{}, &Error{Op: args[0], Output: lastLines(scrub(strings.TrimSpace(stderr.String()), secrets), 6)}
	}
	return limitedOutput{out: strings.ToValidUTF8(string(buf[:n]), "\uFFFD"), cut: cut}, nil
}
