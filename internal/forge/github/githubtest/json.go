package githubtest

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"slipway/internal/forge"
	"slipway/internal/forge/forgetest"
)

// The JSON below follows GitHub's REST reference (docs.github.com/rest):
// the fields a client reads, with GitHub's names, nulls and nesting.

// apiURL is a repository's API address, with a path under it.
func (s *Server) apiURL(r *repo, path string) string {
	u := s.srv.URL + "/repos/" + r.fullName
	if path != "" {
		u += "/" + path
	}
	return u
}

// webURL is a repository's page (the server serves none).
func (s *Server) webURL(r *repo) string { return s.srv.URL + "/" + r.fullName }

func ts(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func tsOrNull(t *time.Time) any {
	if t == nil {
		return nil
	}
	return ts(*t)
}

func strOrNull(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// userJSON is a user or organization (simple-user).
func (s *Server) userJSON(login string, id int64, org bool) map[string]any {
	typ := "User"
	if org {
		typ = "Organization"
	}
	return map[string]any{
		"login": login, "id": id, "node_id": fmt.Sprintf("U_kgDO%06d", id), "type": typ, "site_admin": false,
		"avatar_url": s.srv.URL + "/avatars/" + login, "gravatar_id": "", "url": s.srv.URL + "/users/" + login,
		"html_url": s.srv.URL + "/" + login, "repos_url": s.srv.URL + "/users/" + login + "/repos",
	}
}

func (s *Server) me() map[string]any { return s.userJSON(Login, 1, false) }

func (s *Server) ownerJSON(r *repo) map[string]any {
	if r.owner == Login {
		return s.me()
	}
	return s.userJSON(r.owner, 100+int64(len(r.owner)), true)
}

// repoJSON is a repository (full-repository, with the caller's
// permissions).
func (s *Server) repoJSON(r *repo) map[string]any {
	visibility := "public"
	if r.private {
		visibility = "private"
	}
	host := strings.TrimPrefix(strings.TrimPrefix(s.srv.URL, "http://"), "https://")
	return map[string]any{
		"id": r.id, "node_id": fmt.Sprintf("R_kgDO%06d", r.id), "name": r.name, "full_name": r.fullName,
		"owner": s.ownerJSON(r), "private": r.private, "visibility": visibility,
		"html_url": s.webURL(r), "description": strOrNull(r.description), "fork": false,
		"url": s.apiURL(r, ""), "pulls_url": s.apiURL(r, "pulls{/number}"), "issues_url": s.apiURL(r, "issues{/number}"),
		"hooks_url": s.apiURL(r, "hooks"), "statuses_url": s.apiURL(r, "statuses/{sha}"),
		"clone_url": s.webURL(r) + ".git", "git_url": "git://" + host + "/" + r.fullName + ".git",
		"ssh_url": "git@" + host + ":" + r.fullName + ".git", "svn_url": s.webURL(r),
		"homepage": nil, "size": 0, "stargazers_count": 0, "watchers_count": 0, "forks_count": 0,
		"open_issues_count": r.openItems(), "language": nil, "has_issues": true, "has_projects": true, "has_wiki": true,
		"archived": false, "disabled": false, "is_template": false, "topics": []string{},
		"default_branch": r.defaultBranch, "created_at": ts(r.created), "updated_at": ts(r.updated), "pushed_at": ts(r.pushed),
		"permissions": map[string]bool{"admin": true, "maintain": true, "push": true, "triage": true, "pull": true},
	}
}

func (r *repo) openItems() int {
	n := 0
	for _, i := range r.items {
		if i.state == "open" {
			n++
		}
	}
	return n
}

func (s *Server) labelJSON(r *repo, l *label) map[string]any {
	return map[string]any{"id": l.id, "node_id": fmt.Sprintf("LA_kwDO%06d", l.id), "url": s.apiURL(r, "labels/"+url.PathEscape(l.name)),
		"name": l.name, "color": l.color, "default": false, "description": nil}
}

func (s *Server) labelsJSON(r *repo, i *item) []any {
	out := []any{}
	for _, n := range i.labels {
		out = append(out, s.labelJSON(r, r.labels[strings.ToLower(n)]))
	}
	return out
}

// issueJSON is an issue; a pull request listed among issues has a
// pull_request key (and draft).
func (s *Server) issueJSON(r *repo, i *item) map[string]any {
	n := strconv.Itoa(i.number)
	kind := "issues"
	if i.pr != nil {
		kind = "pull"
	}
	out := map[string]any{
		"id": i.id, "node_id": i.nodeID, "number": i.number, "title": i.title, "body": strOrNull(i.body),
		"url": s.apiURL(r, "issues/"+n), "repository_url": s.apiURL(r, ""), "labels_url": s.apiURL(r, "issues/"+n+"/labels{/name}"),
		"comments_url": s.apiURL(r, "issues/"+n+"/comments"), "events_url": s.apiURL(r, "issues/"+n+"/events"),
		"html_url": s.webURL(r) + "/" + kind + "/" + n, "state": i.state, "state_reason": strOrNull(i.stateReason),
		"user": s.me(), "labels": s.labelsJSON(r, i), "assignee": nil, "assignees": []any{}, "milestone": nil,
		"locked": false, "active_lock_reason": nil, "comments": len(i.comments),
		"created_at": ts(i.created), "updated_at": ts(i.updated), "closed_at": tsOrNull(i.closed), "author_association": "MEMBER",
	}
	if i.pr != nil {
		out["draft"] = i.pr.draft
		out["pull_request"] = map[string]any{
			"url": s.apiURL(r, "pulls/"+n), "html_url": s.webURL(r) + "/pull/" + n,
			"diff_url": s.webURL(r) + "/pull/" + n + ".diff", "patch_url": s.webURL(r) + "/pull/" + n + ".patch",
			"merged_at": tsOrNull(i.pr.mergedAt),
		}
	}
	return out
}

// pullJSON is a pull request.
func (s *Server) pullJSON(r *repo, i *item) map[string]any {
	n := strconv.Itoa(i.number)
	p := i.pr
	branch := func(ref, sha string) map[string]any {
		return map[string]any{"label": r.owner + ":" + ref, "ref": ref, "sha": sha, "user": s.ownerJSON(r), "repo": s.repoJSON(r)}
	}
	mergeable := any(true)
	if p.merged {
		mergeable = nil
	}
	return map[string]any{
		"url": s.apiURL(r, "pulls/"+n), "id": i.id, "node_id": i.nodeID, "number": i.number,
		"html_url": s.webURL(r) + "/pull/" + n, "diff_url": s.webURL(r) + "/pull/" + n + ".diff",
		"patch_url": s.webURL(r) + "/pull/" + n + ".patch", "issue_url": s.apiURL(r, "issues/"+n),
		"commits_url": s.apiURL(r, "pulls/"+n+"/commits"), "review_comments_url": s.apiURL(r, "pulls/"+n+"/comments"),
		"comments_url": s.apiURL(r, "issues/"+n+"/comments"), "statuses_url": s.apiURL(r, "statuses/"+p.headSHA),
		"state": i.state, "locked": false, "title": i.title, "user": s.me(), "body": strOrNull(i.body),
		"labels": s.labelsJSON(r, i), "milestone": nil, "active_lock_reason": nil,
		"created_at": ts(i.created), "updated_at": ts(i.updated), "closed_at": tsOrNull(i.closed), "merged_at": tsOrNull(p.mergedAt),
		"merge_commit_sha": strOrNull(p.mergeSHA), "assignee": nil, "assignees": []any{}, "requested_reviewers": []any{}, "requested_teams": []any{},
		"head": branch(p.head, p.headSHA), "base": branch(p.base, p.baseSHA),
		"author_association": "MEMBER", "auto_merge": nil, "draft": p.draft, "merged": p.merged,
		"mergeable": mergeable, "rebaseable": mergeable, "mergeable_state": "clean", "merged_by": nil,
		"comments": len(i.comments), "review_comments": 0, "maintainer_can_modify": false,
		"commits": 1, "additions": 1, "deletions": 0, "changed_files": 1,
	}
}

// pullSimpleJSON is a pull request as GitHub lists it
// (pull-request-simple): without what only the answer about one pull
// request holds (merged, mergeable, its counts).
func (s *Server) pullSimpleJSON(r *repo, i *item) map[string]any {
	out := s.pullJSON(r, i)
	for _, k := range []string{"merged", "mergeable", "rebaseable", "mergeable_state", "merged_by", "comments", "review_comments",
		"maintainer_can_modify", "commits", "additions", "deletions", "changed_files"} {
		delete(out, k)
	}
	return out
}

func (s *Server) commentJSON(r *repo, i *item, c *comment) map[string]any {
	id := strconv.FormatInt(c.id, 10)
	kind := "issues"
	if i.pr != nil {
		kind = "pull"
	}
	return map[string]any{
		"id": c.id, "node_id": "IC_kwDO" + id, "url": s.apiURL(r, "issues/comments/"+id),
		"html_url": s.webURL(r) + "/" + kind + "/" + strconv.Itoa(i.number) + "#issuecomment-" + id,
		"body":     c.body, "user": s.me(), "created_at": ts(c.created), "updated_at": ts(c.updated),
		"issue_url": s.apiURL(r, "issues/"+strconv.Itoa(i.number)), "author_association": "MEMBER",
	}
}

func (s *Server) statusJSON(r *repo, st *status) map[string]any {
	return map[string]any{
		"url": s.apiURL(r, "statuses/"+st.sha), "avatar_url": s.srv.URL + "/avatars/" + Login, "id": st.id, "node_id": fmt.Sprintf("SC_kwDO%06d", st.id),
		"state": st.state, "description": strOrNull(st.description), "target_url": strOrNull(st.targetURL), "context": st.context,
		"created_at": ts(st.created), "updated_at": ts(st.updated), "creator": s.me(),
	}
}

func (s *Server) checkRunJSON(r *repo, c *checkRun) map[string]any {
	id := strconv.FormatInt(c.id, 10)
	return map[string]any{
		"id": c.id, "head_sha": c.sha, "node_id": "CR_kwDO" + id, "external_id": "", "url": s.apiURL(r, "check-runs/"+id),
		"html_url": s.webURL(r) + "/runs/" + id, "details_url": s.webURL(r) + "/runs/" + id, "status": c.status,
		"conclusion": strOrNull(c.conclusion), "started_at": ts(c.started), "completed_at": tsOrNull(c.completed), "name": c.name,
		"output":        map[string]any{"title": nil, "summary": nil, "text": nil, "annotations_count": 0, "annotations_url": s.apiURL(r, "check-runs/"+id+"/annotations")},
		"check_suite":   map[string]any{"id": c.id + 1},
		"app":           map[string]any{"id": 15368, "slug": "github-actions", "name": "GitHub Actions", "owner": s.userJSON("github", 9919, true)},
		"pull_requests": []any{},
	}
}

func (s *Server) hookJSON(r *repo, h *hook) map[string]any {
	id := strconv.FormatInt(h.id, 10)
	cfg := map[string]any{"url": h.url, "content_type": h.content, "insecure_ssl": "0"}
	if h.secret != "" {
		cfg["secret"] = "********"
	}
	return map[string]any{
		"type": "Repository", "id": h.id, "name": "web", "active": h.active, "events": h.events, "config": cfg,
		"updated_at": ts(h.updated), "created_at": ts(h.created), "url": s.apiURL(r, "hooks/"+id),
		"test_url": s.apiURL(r, "hooks/"+id+"/test"), "ping_url": s.apiURL(r, "hooks/"+id+"/pings"),
		"deliveries_url": s.apiURL(r, "hooks/"+id+"/deliveries"),
		"last_response":  map[string]any{"code": nil, "status": "unused", "message": nil},
	}
}

// Delivery is a webhook delivery of ev as GitHub sends it to a hook with
// content type json: the event's payload (from what the server holds of
// the pull request or issue, made up when it holds none), signed with
// secret in X-Hub-Signature-256 (and the legacy SHA-1 X-Hub-Signature).
func (s *Server) Delivery(repo string, ev forgetest.DeliverySpec, secret string) (http.Header, []byte) {
	s.mu.Lock()
	r := s.mustRepo(repo)
	payload := map[string]any{"repository": s.repoJSON(r), "sender": s.me()}
	if r.owner != Login {
		payload["organization"] = s.ownerJSON(r)
	}
	var name string
	t := now()
	switch ev.Type {
	case forge.EventPullRequest:
		name = "pull_request"
		i := s.item(repo, ev.PR)
		if i == nil || i.pr == nil {
			i = &item{id: s.id(), number: ev.PR, title: fmt.Sprintf("Pull request %d", ev.PR), state: "open", created: t, updated: t,
				pr: &pull{head: fmt.Sprintf("feature-%d", ev.PR), headSHA: ev.SHA, base: r.defaultBranch, baseSHA: r.rootSHA}}
			i.nodeID = fmt.Sprintf("PR_kwDO%06d", i.id)
		}
		c, p := *i, *i.pr
		c.pr = &p
		if ev.SHA != "" {
			p.headSHA = ev.SHA
		}
		action := "opened"
		if ev.Closed || ev.Merged {
			action, c.state, c.closed = "closed", "closed", &t
			if ev.Merged {
				p.merged, p.mergedAt, p.mergeSHA = true, &t, randomHex(20)
			}
		}
		payload["action"], payload["number"], payload["pull_request"] = action, c.number, s.pullJSON(r, &c)
	case forge.EventIssue:
		name = "issues"
		i := s.item(repo, ev.Issue)
		if i == nil || i.pr != nil {
			i = &item{id: s.id(), number: ev.Issue, title: fmt.Sprintf("Issue %d", ev.Issue), body: "Made up by githubtest.", state: "open", created: t, updated: t}
			i.nodeID = fmt.Sprintf("I_kwDO%06d", i.id)
		}
		c := *i
		action := "opened"
		if ev.Closed {
			action, c.state, c.stateReason, c.closed = "closed", "closed", "completed", &t
		}
		payload["action"], payload["issue"] = action, s.issueJSON(r, &c)
	case forge.EventCheck:
		name = "check_run"
		c := &checkRun{id: s.id(), name: "ci", sha: ev.SHA, status: "completed", conclusion: "success", started: t, completed: &t}
		run := s.checkRunJSON(r, c)
		run["check_suite"] = map[string]any{"id": c.id + 1, "head_sha": ev.SHA, "head_branch": nil, "status": "completed", "conclusion": "success"}
		payload["action"], payload["check_run"] = "completed", run
	case forge.EventPing:
		name = "ping"
		payload["zen"] = "Design for failure."
		if len(r.hooks) > 0 {
			h := r.hooks[len(r.hooks)-1]
			payload["hook_id"], payload["hook"] = h.id, s.hookJSON(r, h)
		}
	default:
		name = "push"
		payload["ref"] = "refs/heads/" + r.defaultBranch
		payload["after"] = r.rootSHA
	}
	hookID := int64(0)
	if len(r.hooks) > 0 {
		hookID = r.hooks[len(r.hooks)-1].id
	}
	repoID := r.id
	s.mu.Unlock()

	body, err := json.Marshal(payload)
	if err != nil {
		panic(err)
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "GitHub-Hookshot/githubtest")
	h.Set("X-GitHub-Event", name)
	h.Set("X-GitHub-Delivery", ev.Delivery)
	h.Set("X-GitHub-Hook-ID", strconv.FormatInt(hookID, 10))
	h.Set("X-GitHub-Hook-Installation-Target-Type", "repository")
	h.Set("X-GitHub-Hook-Installation-Target-ID", strconv.FormatInt(repoID, 10))
	if secret != "" {
		h.Set("X-Hub-Signature", "sha1="+sign(sha1.New, secret, body))
		h.Set("X-Hub-Signature-256", "sha256="+sign(sha256.New, secret, body))
	}
	return h, body
}

// Sign is the X-Hub-Signature-256 of body with secret.
func Sign(secret string, body []byte) string { return "sha256=" + sign(sha256.New, secret, body) }

func sign(h func() hash.Hash, secret string, body []byte) string {
	mac := hmac.New(h, []byte(secret))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}
