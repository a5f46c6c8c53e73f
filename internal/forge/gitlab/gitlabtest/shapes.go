package gitlabtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"slipway/internal/forge/forgetest"
)

// obj is a JSON object that keeps its keys' order (GitLab's, as in its
// API documentation).
type obj []field

type field struct {
	k string
	v any
}

func (o obj) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.k)
		v, err := json.Marshal(f.v)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// apiTime is a time as the API writes it: ISO 8601 with milliseconds.
func apiTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// hookTime is a time as most webhook payloads write it.
func hookTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

func orNil(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func orEmpty(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}

// user is the token's user, as the API shows a user.
func (s *Server) user() obj {
	return obj{{"id", 1}, {"username", "slipway-bot"}, {"name", "Slipway Bot"}, {"state", "active"}, {"locked", false},
		{"avatar_url", nil}, {"web_url", s.URL + "/slipway-bot"}}
}

func (s *Server) webURL(p *project) string { return s.URL + "/" + p.path }

// projectJSON is a project as GET /projects/:id shows it.
func (s *Server) projectJSON(p *project) obj {
	i := strings.LastIndexByte(p.path, '/')
	group, name := p.path[:i], p.path[i+1:]
	groupName := group[strings.LastIndexByte(group, '/')+1:]
	var parent any
	if j := strings.LastIndexByte(group, '/'); j >= 0 {
		parent = s.namespaces[group[:j]]
	}
	visibility := "public"
	if p.private {
		visibility = "private"
	}
	host, _ := url.Parse(s.URL)
	api := fmt.Sprintf("%s/api/v4/projects/%d", s.URL, p.id)
	return obj{
		{"id", p.id}, {"description", nil}, {"name", name}, {"name_with_namespace", strings.ReplaceAll(p.path, "/", " / ")},
		{"path", name}, {"path_with_namespace", p.path}, {"created_at", apiTime(p.createdAt)},
		{"default_branch", p.defaultBranch}, {"tag_list", []string{}}, {"topics", []string{}},
		{"ssh_url_to_repo", fmt.Sprintf("git@%s:%s.git", host.Hostname(), p.path)},
		{"http_url_to_repo", s.webURL(p) + ".git"}, {"web_url", s.webURL(p)},
		{"readme_url", nil}, {"forks_count", 0}, {"avatar_url", nil}, {"star_count", 0},
		{"last_activity_at", apiTime(p.createdAt)}, {"visibility", visibility},
		{"namespace", obj{{"id", s.namespaces[group]}, {"name", groupName}, {"path", groupName}, {"kind", "group"},
			{"full_path", group}, {"parent_id", parent}, {"avatar_url", nil}, {"web_url", s.URL + "/groups/" + group}}},
		{"container_registry_image_prefix", fmt.Sprintf("registry.%s/%s", host.Hostname(), strings.ToLower(p.path))},
		{"_links", obj{{"self", api}, {"issues", api + "/issues"}, {"merge_requests", api + "/merge_requests"},
			{"repo_branches", api + "/repository/branches"}, {"labels", api + "/labels"}, {"events", api + "/events"},
			{"members", api + "/members"}, {"cluster_agents", api + "/cluster_agents"}}},
		{"empty_repo", false}, {"archived", false}, {"resolve_outdated_diff_discussions", false},
		{"issues_enabled", true}, {"merge_requests_enabled", true}, {"jobs_enabled", true},
		{"creator_id", 1}, {"open_issues_count", openIssues(p)}, {"ci_config_path", nil},
		{"permissions", obj{{"project_access", obj{{"access_level", 40}, {"notification_level", 3}}}, {"group_access", nil}}},
	}
}

func openIssues(p *project) int {
	n := 0
	for _, is := range p.issues {
		if is.State == "opened" {
			n++
		}
	}
	return n
}

// mrJSON is a merge request as GET merge_requests/:iid shows it.
func (s *Server) mrJSON(p *project, m *MergeRequest) obj {
	draft := m.Draft()
	detailed := "mergeable"
	switch {
	case m.State != "opened":
		detailed = "not_open"
	case draft:
		detailed = "draft_status"
	}
	var mergedBy, closedBy any
	if m.State == "merged" {
		mergedBy = s.user()
	}
	if m.State == "closed" {
		closedBy = s.user()
	}
	base := p.branches[m.TargetBranch]
	return obj{
		{"id", m.ID}, {"iid", m.IID}, {"project_id", p.id}, {"title", m.Title}, {"description", m.Description},
		{"state", m.State}, {"created_at", apiTime(m.CreatedAt)}, {"updated_at", apiTime(m.UpdatedAt)},
		{"merged_by", mergedBy}, {"merge_user", mergedBy}, {"merged_at", apiTime(m.MergedAt)},
		{"closed_by", closedBy}, {"closed_at", apiTime(m.ClosedAt)},
		{"target_branch", m.TargetBranch}, {"source_branch", m.SourceBranch},
		{"user_notes_count", len(m.Notes)}, {"upvotes", 0}, {"downvotes", 0},
		{"author", s.user()}, {"assignees", []any{}}, {"assignee", nil}, {"reviewers", []any{}},
		{"source_project_id", p.id}, {"target_project_id", p.id}, {"labels", orEmpty(m.Labels)},
		{"draft", draft}, {"work_in_progress", draft}, {"milestone", nil},
		{"merge_when_pipeline_succeeds", false}, {"merge_status", "can_be_merged"}, {"detailed_merge_status", detailed},
		{"merge_after", nil}, {"sha", m.SHA}, {"merge_commit_sha", orNil(m.MergeCommitSHA)}, {"squash_commit_sha", nil},
		{"discussion_locked", nil}, {"should_remove_source_branch", nil}, {"force_remove_source_branch", false},
		{"prepared_at", apiTime(m.CreatedAt)}, {"reference", fmt.Sprintf("!%d", m.IID)},
		{"references", obj{{"short", fmt.Sprintf("!%d", m.IID)}, {"relative", fmt.Sprintf("!%d", m.IID)},
			{"full", fmt.Sprintf("%s!%d", p.path, m.IID)}}},
		{"web_url", fmt.Sprintf("%s/-/merge_requests/%d", s.webURL(p), m.IID)},
		{"time_stats", obj{{"time_estimate", 0}, {"total_time_spent", 0}, {"human_time_estimate", nil}, {"human_total_time_spent", nil}}},
		{"squash", false}, {"squash_on_merge", false},
		{"task_completion_status", obj{{"count", 0}, {"completed_count", 0}}},
		{"has_conflicts", false}, {"blocking_discussions_resolved", true}, {"subscribed", true}, {"changes_count", "1"},
		{"latest_build_started_at", nil}, {"latest_build_finished_at", nil}, {"first_deployed_to_production_at", nil},
		{"pipeline", nil}, {"head_pipeline", nil},
		{"diff_refs", obj{{"base_sha", orNil(base)}, {"head_sha", m.SHA}, {"start_sha", orNil(base)}}},
		{"merge_error", nil}, {"first_contribution", false}, {"user", obj{{"can_merge", true}}},
	}
}

// mrBasicJSON is a merge request as a list shows it (MergeRequestBasic):
// without what only GET merge_requests/:iid answers.
func (s *Server) mrBasicJSON(p *project, m *MergeRequest) obj {
	only := []string{"subscribed", "changes_count", "latest_build_started_at", "latest_build_finished_at",
		"first_deployed_to_production_at", "pipeline", "head_pipeline", "diff_refs", "merge_error", "first_contribution", "user"}
	var out obj
	for _, f := range s.mrJSON(p, m) {
		if !slices.Contains(only, f.k) {
			out = append(out, f)
		}
	}
	return out
}

// issueJSON is an issue as GET /projects/:id/issues lists it.
func (s *Server) issueJSON(p *project, is *Issue) obj {
	api := fmt.Sprintf("%s/api/v4/projects/%d", s.URL, p.id)
	var closedBy any
	if is.State == "closed" {
		closedBy = s.user()
	}
	return obj{
		{"id", is.ID}, {"iid", is.IID}, {"project_id", p.id}, {"title", is.Title}, {"description", is.Description},
		{"state", is.State}, {"created_at", apiTime(is.CreatedAt)}, {"updated_at", apiTime(is.UpdatedAt)},
		{"closed_at", apiTime(is.ClosedAt)}, {"closed_by", closedBy}, {"labels", orEmpty(is.Labels)},
		{"milestone", nil}, {"assignees", []any{}}, {"author", s.user()}, {"type", "ISSUE"}, {"assignee", nil},
		{"user_notes_count", 0}, {"merge_requests_count", 0}, {"upvotes", 0}, {"downvotes", 0}, {"due_date", nil},
		{"confidential", false}, {"discussion_locked", nil}, {"issue_type", "issue"},
		{"web_url", fmt.Sprintf("%s/-/issues/%d", s.webURL(p), is.IID)},
		{"time_stats", obj{{"time_estimate", 0}, {"total_time_spent", 0}, {"human_time_estimate", nil}, {"human_total_time_spent", nil}}},
		{"task_completion_status", obj{{"count", 0}, {"completed_count", 0}}},
		{"blocking_issues_count", 0}, {"has_tasks", false},
		{"_links", obj{{"self", fmt.Sprintf("%s/issues/%d", api, is.IID)}, {"notes", fmt.Sprintf("%s/issues/%d/notes", api, is.IID)},
			{"award_emoji", fmt.Sprintf("%s/issues/%d/award_emoji", api, is.IID)}, {"project", api}, {"closed_as_duplicate_of", nil}}},
		{"references", obj{{"short", fmt.Sprintf("#%d", is.IID)}, {"relative", fmt.Sprintf("#%d", is.IID)},
			{"full", fmt.Sprintf("%s#%d", p.path, is.IID)}}},
		{"severity", "UNKNOWN"}, {"moved_to_id", nil}, {"imported", false}, {"imported_from", "none"},
		{"service_desk_reply_to", nil},
	}
}

// statusJSON is a commit status as GET .../statuses lists it.
func (s *Server) statusJSON(st *Status) obj {
	finished := any(nil)
	switch st.Status {
	case "success", "failed", "canceled", "skipped":
		finished = apiTime(st.CreatedAt)
	}
	return obj{
		{"id", st.ID}, {"sha", st.SHA}, {"ref", st.Ref}, {"status", st.Status}, {"name", st.Name},
		{"target_url", orNil(st.TargetURL)}, {"description", nil}, {"created_at", apiTime(st.CreatedAt)},
		{"started_at", apiTime(st.CreatedAt)}, {"finished_at", finished}, {"allow_failure", false},
		{"coverage", nil}, {"pipeline_id", st.ID}, {"author", s.user()},
	}
}

// noteJSON is a note as POST merge_requests/:iid/notes answers it.
func (s *Server) noteJSON(p *project, m *MergeRequest, id int, body string, at time.Time) obj {
	return obj{
		{"id", id}, {"type", nil}, {"body", body}, {"author", s.user()}, {"created_at", apiTime(at)},
		{"updated_at", apiTime(at)}, {"system", false}, {"noteable_id", m.ID}, {"noteable_type", "MergeRequest"},
		{"project_id", p.id}, {"resolvable", false}, {"confidential", false}, {"internal", false},
		{"imported", false}, {"imported_from", "none"}, {"noteable_iid", m.IID}, {"commands_changes", obj{}},
	}
}

// hookJSON is a project webhook as POST /projects/:id/hooks answers it
// (never its token).
func (s *Server) hookJSON(p *project, h *Hook) obj {
	o := obj{{"id", h.ID}, {"url", h.URL}, {"name", ""}, {"description", ""}, {"project_id", p.id}}
	for _, e := range hookEvents {
		o = append(o, field{e, h.Events[e]})
	}
	return append(o, field{"push_events_branch_filter", ""}, field{"branch_filter_strategy", "wildcard"},
		field{"enable_ssl_verification", true}, field{"repository_update_events", false},
		field{"alert_status", "executable"}, field{"disabled_until", nil}, field{"url_variables", []any{}},
		field{"created_at", apiTime(h.CreatedAt)}, field{"custom_webhook_template", ""}, field{"custom_headers", []any{}})
}

// hookUser is the user of a webhook payload.
func hookUser() obj {
	return obj{{"id", 1}, {"name", "Slipway Bot"}, {"username", "slipway-bot"}, {"avatar_url", nil}, {"email", "[REDACTED]"}}
}

// hookProject is the project of a webhook payload.
func (s *Server) hookProject(p *project) obj {
	host, _ := url.Parse(s.URL)
	i := strings.LastIndexByte(p.path, '/')
	level := 20
	if p.private {
		level = 0
	}
	ssh := fmt.Sprintf("git@%s:%s.git", host.Hostname(), p.path)
	return obj{
		{"id", p.id}, {"name", p.path[i+1:]}, {"description", nil}, {"web_url", s.webURL(p)}, {"avatar_url", nil},
		{"git_ssh_url", ssh}, {"git_http_url", s.webURL(p) + ".git"}, {"namespace", p.path[:i]},
		{"visibility_level", level}, {"path_with_namespace", p.path}, {"default_branch", p.defaultBranch},
		{"ci_config_path", nil}, {"homepage", s.webURL(p)}, {"url", ssh}, {"ssh_url", ssh},
		{"http_url", s.webURL(p) + ".git"},
	}
}

func (s *Server) hookRepository(p *project) obj {
	i := strings.LastIndexByte(p.path, '/')
	host, _ := url.Parse(s.URL)
	return obj{{"name", p.path[i+1:]}, {"url", fmt.Sprintf("git@%s:%s.git", host.Hostname(), p.path)},
		{"description", nil}, {"homepage", s.webURL(p)}}
}

func hookCommit(s *Server, p *project, sha, title string, at time.Time) obj {
	return obj{{"id", sha}, {"message", title + "\n"}, {"title", title},
		{"timestamp", at.UTC().Format(time.RFC3339)}, {"url", fmt.Sprintf("%s/-/commit/%s", s.webURL(p), sha)},
		{"author", obj{{"name", "Slipway Bot"}, {"email", "[REDACTED]"}}}}
}

// mrHook is a "Merge Request Hook" payload about merge request ev.PR (the
// server's, or one made up when it holds none by that iid).
func (s *Server) mrHook(p *project, ev forgetest.DeliverySpec) obj {
	now := s.now()
	m := &MergeRequest{ID: 1000 + ev.PR, IID: ev.PR, Title: fmt.Sprintf("Change %d", ev.PR), SourceBranch: fmt.Sprintf("change-%d", ev.PR),
		TargetBranch: p.defaultBranch, CreatedAt: now, UpdatedAt: now}
	if ev.PR >= 1 && ev.PR <= len(p.mrs) {
		m = p.mrs[ev.PR-1]
	}
	state, action, stateID := "opened", "open", 1
	switch {
	case ev.Merged:
		state, action, stateID = "merged", "merge", 3
	case ev.Closed:
		state, action, stateID = "closed", "close", 2
	}
	sha := ev.SHA
	if sha == "" {
		sha = m.SHA
	}
	labels := []any{}
	for i, l := range m.Labels {
		labels = append(labels, obj{{"id", 200 + i}, {"title", l}, {"color", "#6699cc"}, {"project_id", p.id},
			{"created_at", hookTime(m.CreatedAt)}, {"updated_at", hookTime(m.CreatedAt)}, {"template", false},
			{"description", nil}, {"type", "ProjectLabel"}, {"group_id", nil}})
	}
	draft := m.Draft()
	attrs := obj{
		{"assignee_id", nil}, {"author_id", 1}, {"created_at", hookTime(m.CreatedAt)}, {"description", m.Description},
		{"draft", draft}, {"head_pipeline_id", nil}, {"id", m.ID}, {"iid", m.IID}, {"last_edited_at", nil},
		{"last_edited_by_id", nil}, {"merge_commit_sha", orNil(m.MergeCommitSHA)}, {"merge_error", nil},
		{"merge_params", obj{{"force_remove_source_branch", "0"}}}, {"merge_status", "can_be_merged"},
		{"merge_user_id", nil}, {"merge_when_pipeline_succeeds", false}, {"milestone_id", nil},
		{"source_branch", m.SourceBranch}, {"source_project_id", p.id}, {"state_id", stateID},
		{"target_branch", m.TargetBranch}, {"target_project_id", p.id}, {"time_estimate", 0}, {"title", m.Title},
		{"updated_at", hookTime(now)}, {"updated_by_id", 1}, {"prepared_at", hookTime(m.CreatedAt)},
		{"assignee_ids", []int{}}, {"blocking_discussions_resolved", true}, {"detailed_merge_status", "mergeable"},
		{"first_contribution", false}, {"human_time_change", nil}, {"human_time_estimate", nil},
		{"human_total_time_spent", nil}, {"labels", labels},
		{"last_commit", hookCommit(s, p, sha, m.Title, now)}, {"reviewer_ids", []int{}},
		{"source", s.hookProject(p)}, {"state", state}, {"target", s.hookProject(p)}, {"time_change", 0},
		{"total_time_spent", 0}, {"url", fmt.Sprintf("%s/-/merge_requests/%d", s.webURL(p), m.IID)},
		{"work_in_progress", draft}, {"approval_rules", []any{}}, {"action", action},
	}
	return obj{
		{"object_kind", "merge_request"}, {"event_type", "merge_request"}, {"user", hookUser()},
		{"project", s.hookProject(p)}, {"object_attributes", attrs}, {"labels", labels},
		{"changes", obj{{"state_id", obj{{"previous", 1}, {"current", stateID}}},
			{"updated_at", obj{{"previous", hookTime(m.UpdatedAt)}, {"current", hookTime(now)}}}}},
		{"repository", s.hookRepository(p)}, {"assignees", []any{}}, {"reviewers", []any{}},
	}
}

// issueHook is an "Issue Hook" payload about issue ev.Issue.
func (s *Server) issueHook(p *project, ev forgetest.DeliverySpec) obj {
	now := s.now()
	is := &Issue{ID: 2000 + ev.Issue, IID: ev.Issue, Title: fmt.Sprintf("Issue %d", ev.Issue), CreatedAt: now, UpdatedAt: now}
	if ev.Issue >= 1 && ev.Issue <= len(p.issues) {
		is = p.issues[ev.Issue-1]
	}
	state, action, stateID, closedAt := "opened", "open", 1, any(nil)
	if ev.Closed {
		state, action, stateID, closedAt = "closed", "close", 2, hookTime(now)
	}
	labels := []any{}
	for i, l := range is.Labels {
		labels = append(labels, obj{{"id", 200 + i}, {"title", l}, {"color", "#6699cc"}, {"project_id", p.id},
			{"created_at", hookTime(is.CreatedAt)}, {"updated_at", hookTime(is.CreatedAt)}, {"template", false},
			{"description", nil}, {"type", "ProjectLabel"}, {"group_id", nil}})
	}
	attrs := obj{
		{"author_id", 1}, {"closed_at", closedAt}, {"confidential", false}, {"created_at", hookTime(is.CreatedAt)},
		{"description", is.Description}, {"discussion_locked", nil}, {"due_date", nil}, {"id", is.ID}, {"iid", is.IID},
		{"last_edited_at", nil}, {"last_edited_by_id", nil}, {"milestone_id", nil}, {"moved_to_id", nil},
		{"duplicated_to_id", nil}, {"project_id", p.id}, {"relative_position", nil}, {"state_id", stateID},
		{"time_estimate", 0}, {"title", is.Title}, {"updated_at", hookTime(now)}, {"updated_by_id", 1},
		{"type", "Issue"}, {"url", fmt.Sprintf("%s/-/issues/%d", s.webURL(p), is.IID)}, {"total_time_spent", 0},
		{"time_change", 0}, {"human_total_time_spent", nil}, {"human_time_change", nil}, {"human_time_estimate", nil},
		{"assignee_ids", []int{}}, {"assignee_id", nil}, {"labels", labels}, {"state", state},
		{"severity", "unknown"}, {"customer_relations_contacts", []any{}}, {"action", action},
	}
	return obj{
		{"object_kind", "issue"}, {"event_type", "issue"}, {"user", hookUser()}, {"project", s.hookProject(p)},
		{"object_attributes", attrs}, {"labels", labels},
		{"changes", obj{{"updated_at", obj{{"previous", hookTime(is.UpdatedAt)}, {"current", hookTime(now)}}}}},
		{"repository", s.hookRepository(p)},
	}
}

// pipelineHook is a "Pipeline Hook" payload: a pipeline on ev.SHA
// succeeded.
func (s *Server) pipelineHook(p *project, ev forgetest.DeliverySpec) obj {
	now := s.now()
	ref := p.defaultBranch
	for b, head := range p.branches {
		if head == ev.SHA {
			ref = b
		}
	}
	id := s.nextID()
	return obj{
		{"object_kind", "pipeline"},
		{"object_attributes", obj{{"id", id}, {"iid", id}, {"name", nil}, {"ref", ref}, {"tag", false},
			{"sha", ev.SHA}, {"before_sha", strings.Repeat("0", 40)}, {"source", "push"}, {"status", "success"},
			{"detailed_status", "passed"}, {"stages", []string{"test"}}, {"created_at", hookTime(now.Add(-time.Minute))},
			{"finished_at", hookTime(now)}, {"duration", 60}, {"queued_duration", 1}, {"variables", []any{}},
			{"url", fmt.Sprintf("%s/-/pipelines/%d", s.webURL(p), id)}}},
		{"merge_request", nil}, {"user", hookUser()}, {"project", s.hookProject(p)},
		{"commit", hookCommit(s, p, ev.SHA, "Change", now)}, {"builds", []any{}},
	}
}

// pushHook is a "Push Hook" payload, as a hook's test delivery sends it:
// the default branch's head.
func (s *Server) pushHook(p *project) obj {
	now := s.now()
	sha := p.branches[p.defaultBranch]
	return obj{
		{"object_kind", "push"}, {"event_name", "push"}, {"before", strings.Repeat("0", 40)}, {"after", sha},
		{"ref", "refs/heads/" + p.defaultBranch}, {"ref_protected", true}, {"checkout_sha", sha}, {"message", nil},
		{"user_id", 1}, {"user_name", "Slipway Bot"}, {"user_username", "slipway-bot"}, {"user_email", ""},
		{"user_avatar", nil}, {"project_id", p.id}, {"project", s.hookProject(p)},
		{"commits", []any{hookCommit(s, p, sha, "Change", now)}}, {"total_commits_count", 1},
		{"push_options", obj{}}, {"repository", s.hookRepository(p)},
	}
}
