package giteatest

import (
	"fmt"
	"net/url"
	"strings"
	"time"
)

// The JSON shapes of Gitea's API (modules/structs, the swagger's
// definitions): what the server answers and what its webhooks carry.

type apiUser struct {
	ID            int64     `json:"id"`
	Login         string    `json:"login"`
	LoginName     string    `json:"login_name"`
	SourceID      int64     `json:"source_id"`
	FullName      string    `json:"full_name"`
	Email         string    `json:"email"`
	AvatarURL     string    `json:"avatar_url"`
	HTMLURL       string    `json:"html_url"`
	Language      string    `json:"language"`
	IsAdmin       bool      `json:"is_admin"`
	LastLogin     time.Time `json:"last_login"`
	Created       time.Time `json:"created"`
	Restricted    bool      `json:"restricted"`
	Active        bool      `json:"active"`
	ProhibitLogin bool      `json:"prohibit_login"`
	Location      string    `json:"location"`
	Website       string    `json:"website"`
	Description   string    `json:"description"`
	Visibility    string    `json:"visibility"`
	Followers     int       `json:"followers_count"`
	Following     int       `json:"following_count"`
	StarredRepos  int       `json:"starred_repos_count"`
	UserName      string    `json:"username"`
}

type apiPermission struct {
	Admin bool `json:"admin"`
	Push  bool `json:"push"`
	Pull  bool `json:"pull"`
}

type apiInternalTracker struct {
	EnableTimeTracker                bool `json:"enable_time_tracker"`
	AllowOnlyContributorsToTrackTime bool `json:"allow_only_contributors_to_track_time"`
	EnableIssueDependencies          bool `json:"enable_issue_dependencies"`
}

type apiRepository struct {
	ID                            int64               `json:"id"`
	Owner                         *apiUser            `json:"owner"`
	Name                          string              `json:"name"`
	FullName                      string              `json:"full_name"`
	Description                   string              `json:"description"`
	Empty                         bool                `json:"empty"`
	Private                       bool                `json:"private"`
	Fork                          bool                `json:"fork"`
	Template                      bool                `json:"template"`
	Parent                        *apiRepository      `json:"parent"`
	Mirror                        bool                `json:"mirror"`
	Size                          int                 `json:"size"`
	Language                      string              `json:"language"`
	LanguagesURL                  string              `json:"languages_url"`
	HTMLURL                       string              `json:"html_url"`
	URL                           string              `json:"url"`
	Link                          string              `json:"link"`
	SSHURL                        string              `json:"ssh_url"`
	CloneURL                      string              `json:"clone_url"`
	OriginalURL                   string              `json:"original_url"`
	Website                       string              `json:"website"`
	Stars                         int                 `json:"stars_count"`
	Forks                         int                 `json:"forks_count"`
	Watchers                      int                 `json:"watchers_count"`
	OpenIssues                    int                 `json:"open_issues_count"`
	OpenPulls                     int                 `json:"open_pr_counter"`
	Releases                      int                 `json:"release_counter"`
	DefaultBranch                 string              `json:"default_branch"`
	Archived                      bool                `json:"archived"`
	Created                       time.Time           `json:"created_at"`
	Updated                       time.Time           `json:"updated_at"`
	ArchivedAt                    time.Time           `json:"archived_at"`
	Permissions                   *apiPermission      `json:"permissions,omitempty"`
	HasIssues                     bool                `json:"has_issues"`
	InternalTracker               *apiInternalTracker `json:"internal_tracker,omitempty"`
	HasWiki                       bool                `json:"has_wiki"`
	HasPullRequests               bool                `json:"has_pull_requests"`
	HasProjects                   bool                `json:"has_projects"`
	HasReleases                   bool                `json:"has_releases"`
	HasPackages                   bool                `json:"has_packages"`
	HasActions                    bool                `json:"has_actions"`
	IgnoreWhitespaceConflicts     bool                `json:"ignore_whitespace_conflicts"`
	AllowMerge                    bool                `json:"allow_merge_commits"`
	AllowRebase                   bool                `json:"allow_rebase"`
	AllowRebaseMerge              bool                `json:"allow_rebase_explicit"`
	AllowSquash                   bool                `json:"allow_squash_merge"`
	AllowFastForwardOnly          bool                `json:"allow_fast_forward_only_merge"`
	AllowRebaseUpdate             bool                `json:"allow_rebase_update"`
	DefaultDeleteBranchAfterMerge bool                `json:"default_delete_branch_after_merge"`
	DefaultMergeStyle             string              `json:"default_merge_style"`
	DefaultAllowMaintainerEdit    bool                `json:"default_allow_maintainer_edit"`
	AvatarURL                     string              `json:"avatar_url"`
	Internal                      bool                `json:"internal"`
	MirrorInterval                string              `json:"mirror_interval"`
	ObjectFormatName              string              `json:"object_format_name"`
	MirrorUpdated                 time.Time           `json:"mirror_updated"`
	Topics                        []string            `json:"topics"`
	Licenses                      []string            `json:"licenses"`
}

type apiLabel struct {
	ID          int64  `json:"id"`
	Name        string `json:"name"`
	Exclusive   bool   `json:"exclusive"`
	IsArchived  bool   `json:"is_archived"`
	Color       string `json:"color"` // without its #
	Description string `json:"description"`
	URL         string `json:"url"`
}

type apiBranchInfo struct {
	Label      string         `json:"label"`
	Ref        string         `json:"ref"`
	SHA        string         `json:"sha"`
	RepoID     int64          `json:"repo_id"`
	Repository *apiRepository `json:"repo"`
}

type apiPullRequest struct {
	ID                      int64          `json:"id"`
	URL                     string         `json:"url"`
	Number                  int64          `json:"number"`
	User                    *apiUser       `json:"user"`
	Title                   string         `json:"title"`
	Body                    string         `json:"body"`
	Labels                  []*apiLabel    `json:"labels"`
	Milestone               any            `json:"milestone"`
	Assignee                *apiUser       `json:"assignee"`
	Assignees               []*apiUser     `json:"assignees"`
	RequestedReviewers      []*apiUser     `json:"requested_reviewers"`
	RequestedReviewersTeams []any          `json:"requested_reviewers_teams"`
	State                   string         `json:"state"`
	Draft                   bool           `json:"draft"`
	IsLocked                bool           `json:"is_locked"`
	Comments                int            `json:"comments"`
	Additions               *int           `json:"additions,omitempty"`
	Deletions               *int           `json:"deletions,omitempty"`
	ChangedFiles            *int           `json:"changed_files,omitempty"`
	HTMLURL                 string         `json:"html_url"`
	DiffURL                 string         `json:"diff_url"`
	PatchURL                string         `json:"patch_url"`
	Mergeable               bool           `json:"mergeable"`
	Merged                  bool           `json:"merged"`
	MergedAt                *time.Time     `json:"merged_at"`
	MergeCommitSHA          *string        `json:"merge_commit_sha"`
	MergedBy                *apiUser       `json:"merged_by"`
	AllowMaintainerEdit     bool           `json:"allow_maintainer_edit"`
	Base                    *apiBranchInfo `json:"base"`
	Head                    *apiBranchInfo `json:"head"`
	MergeBase               string         `json:"merge_base"`
	DueDate                 *time.Time     `json:"due_date"`
	Created                 *time.Time     `json:"created_at"`
	Updated                 *time.Time     `json:"updated_at"`
	Closed                  *time.Time     `json:"closed_at"`
	PinOrder                int            `json:"pin_order"`
}

type apiPullRequestMeta struct {
	Merged   bool       `json:"merged"`
	MergedAt *time.Time `json:"merged_at"`
	Draft    bool       `json:"draft"`
	HTMLURL  string     `json:"html_url"`
}

type apiRepositoryMeta struct {
	ID       int64  `json:"id"`
	Name     string `json:"name"`
	Owner    string `json:"owner"`
	FullName string `json:"full_name"`
}

type apiIssue struct {
	ID               int64               `json:"id"`
	URL              string              `json:"url"`
	HTMLURL          string              `json:"html_url"`
	Number           int64               `json:"number"`
	User             *apiUser            `json:"user"`
	OriginalAuthor   string              `json:"original_author"`
	OriginalAuthorID int64               `json:"original_author_id"`
	Title            string              `json:"title"`
	Body             string              `json:"body"`
	Ref              string              `json:"ref"`
	Assets           []any               `json:"assets"`
	Labels           []*apiLabel         `json:"labels"`
	Milestone        any                 `json:"milestone"`
	Assignee         *apiUser            `json:"assignee"`
	Assignees        []*apiUser          `json:"assignees"`
	State            string              `json:"state"`
	IsLocked         bool                `json:"is_locked"`
	Comments         int                 `json:"comments"`
	Created          time.Time           `json:"created_at"`
	Updated          time.Time           `json:"updated_at"`
	Closed           *time.Time          `json:"closed_at"`
	DueDate          *time.Time          `json:"due_date"`
	TimeEstimate     int64               `json:"time_estimate"`
	PullRequest      *apiPullRequestMeta `json:"pull_request"`
	Repository       *apiRepositoryMeta  `json:"repository"`
	PinOrder         int                 `json:"pin_order"`
}

type apiComment struct {
	ID               int64     `json:"id"`
	HTMLURL          string    `json:"html_url"`
	PullRequestURL   string    `json:"pull_request_url"`
	IssueURL         string    `json:"issue_url"`
	User             *apiUser  `json:"user"`
	OriginalAuthor   string    `json:"original_author"`
	OriginalAuthorID int64     `json:"original_author_id"`
	Body             string    `json:"body"`
	Assets           []any     `json:"assets"`
	Created          time.Time `json:"created_at"`
	Updated          time.Time `json:"updated_at"`
}

type apiCommitStatus struct {
	ID          int64     `json:"id"`
	Status      string    `json:"status"` // the state: Gitea names it status
	TargetURL   string    `json:"target_url"`
	Description string    `json:"description"`
	URL         string    `json:"url"`
	Context     string    `json:"context"`
	Creator     *apiUser  `json:"creator"`
	Created     time.Time `json:"created_at"`
	Updated     time.Time `json:"updated_at"`
}

type apiHook struct {
	ID                  int64             `json:"id"`
	Type                string            `json:"type"`
	BranchFilter        string            `json:"branch_filter"`
	Config              map[string]string `json:"config"` // the secret is not shown
	Events              []string          `json:"events"`
	AuthorizationHeader string            `json:"authorization_header"`
	Active              bool              `json:"active"`
	Updated             time.Time         `json:"updated_at"`
	Created             time.Time         `json:"created_at"`
}

// apiError is Gitea's error body (a 404 adds "errors").
type apiError struct {
	Message string `json:"message"`
	URL     string `json:"url"`
}

// Webhook payloads.

type payloadUser struct {
	Name     string `json:"name"`
	Email    string `json:"email"`
	UserName string `json:"username"`
}

type payloadCommit struct {
	ID           string       `json:"id"`
	Message      string       `json:"message"`
	URL          string       `json:"url"`
	Author       *payloadUser `json:"author"`
	Committer    *payloadUser `json:"committer"`
	Verification any          `json:"verification"`
	Timestamp    time.Time    `json:"timestamp"`
	Added        []string     `json:"added"`
	Removed      []string     `json:"removed"`
	Modified     []string     `json:"modified"`
}

type pullRequestPayload struct {
	Action            string          `json:"action"`
	Number            int64           `json:"number"`
	PullRequest       *apiPullRequest `json:"pull_request"`
	RequestedReviewer *apiUser        `json:"requested_reviewer"`
	Repository        *apiRepository  `json:"repository"`
	Sender            *apiUser        `json:"sender"`
	CommitID          string          `json:"commit_id"`
	Review            any             `json:"review"`
}

type issuePayload struct {
	Action     string         `json:"action"`
	Number     int64          `json:"number"`
	Issue      *apiIssue      `json:"issue"`
	Repository *apiRepository `json:"repository"`
	Sender     *apiUser       `json:"sender"`
	CommitID   string         `json:"commit_id"`
}

type commitStatusPayload struct {
	Commit      *payloadCommit `json:"commit"`
	Context     string         `json:"context"`
	CreatedAt   time.Time      `json:"created_at"`
	Description string         `json:"description"`
	ID          int64          `json:"id"`
	Repository  *apiRepository `json:"repository"`
	Sender      *apiUser       `json:"sender"`
	SHA         string         `json:"sha"`
	State       string         `json:"state"`
	TargetURL   string         `json:"target_url"`
	UpdatedAt   *time.Time     `json:"updated_at"`
}

type pushPayload struct {
	Ref          string           `json:"ref"`
	Before       string           `json:"before"`
	After        string           `json:"after"`
	CompareURL   string           `json:"compare_url"`
	Commits      []*payloadCommit `json:"commits"`
	TotalCommits int              `json:"total_commits"`
	HeadCommit   *payloadCommit   `json:"head_commit"`
	Repository   *apiRepository   `json:"repository"`
	Pusher       *apiUser         `json:"pusher"`
	Sender       *apiUser         `json:"sender"`
}

// Converting what the server holds.

func (s *Server) userJSON(login string) *apiUser {
	id := s.users[login]
	return &apiUser{
		ID: id, Login: login, Email: login + "@noreply.localhost",
		AvatarURL: s.srv.URL + "/avatars/" + login, HTMLURL: s.srv.URL + "/" + login,
		IsAdmin: login == tokenUser, LastLogin: epoch, Created: epoch, Active: true,
		Visibility: "public", UserName: login,
	}
}

func (s *Server) repoJSON(r *repo) *apiRepository {
	open, pulls := 0, 0
	for _, i := range r.issues {
		switch {
		case i.closed:
		case i.pull != nil:
			pulls++
		default:
			open++
		}
	}
	full := r.owner + "/" + r.name
	u, _ := url.Parse(s.srv.URL)
	return &apiRepository{
		ID:                   r.id,
		Owner:                s.userJSON(r.owner),
		Name:                 r.name,
		FullName:             full,
		Description:          r.description,
		Private:              r.private,
		LanguagesURL:         s.apiURL(r, "/languages"),
		HTMLURL:              s.srv.URL + "/" + full,
		URL:                  s.apiURL(r, ""),
		SSHURL:               "git@" + u.Hostname() + ":" + full + ".git",
		CloneURL:             s.srv.URL + "/" + full + ".git",
		OpenIssues:           open,
		OpenPulls:            pulls,
		DefaultBranch:        r.defaultBranch,
		Created:              r.created,
		Updated:              r.created,
		ArchivedAt:           time.Unix(0, 0).UTC(),
		Permissions:          &apiPermission{Admin: true, Push: true, Pull: true},
		HasIssues:            true,
		InternalTracker:      &apiInternalTracker{EnableTimeTracker: true, AllowOnlyContributorsToTrackTime: true, EnableIssueDependencies: true},
		HasWiki:              true,
		HasPullRequests:      true,
		HasProjects:          true,
		HasReleases:          true,
		HasPackages:          true,
		HasActions:           true,
		AllowMerge:           true,
		AllowRebase:          true,
		AllowRebaseMerge:     true,
		AllowSquash:          true,
		AllowFastForwardOnly: true,
		AllowRebaseUpdate:    true,
		DefaultMergeStyle:    "merge",
		ObjectFormatName:     "sha1",
		MirrorUpdated:        time.Unix(0, 0).UTC(),
		Topics:               []string{},
		Licenses:             []string{},
	}
}

func (s *Server) labelJSON(r *repo, l *label) *apiLabel {
	return &apiLabel{ID: l.id, Name: l.name, Color: strings.TrimPrefix(l.color, "#"), Description: l.description,
		URL: s.apiURL(r, fmt.Sprintf("/labels/%d", l.id))}
}

func (s *Server) labelsJSON(r *repo, ids []int64) []*apiLabel {
	out := []*apiLabel{}
	for _, id := range ids {
		if l := r.label(id); l != nil {
			out = append(out, s.labelJSON(r, l))
		}
	}
	return out
}

// htmlURL is an issue's or a pull request's page.
func (s *Server) htmlURL(r *repo, i *issue) string {
	kind := "issues"
	if i.pull != nil {
		kind = "pulls"
	}
	return fmt.Sprintf("%s/%s/%s/%s/%d", s.srv.URL, r.owner, r.name, kind, i.number)
}

func (s *Server) pullJSON(r *repo, i *issue) *apiPullRequest {
	pr := i.pull
	rj := s.repoJSON(r)
	page := s.htmlURL(r, i) // Gitea's "url" is the page too
	created, updated := i.created, i.updated
	out := &apiPullRequest{
		ID:                      i.id,
		URL:                     page,
		Number:                  i.number,
		User:                    s.userJSON(tokenUser),
		Title:                   i.title,
		Body:                    i.body,
		Labels:                  s.labelsJSON(r, i.labels),
		RequestedReviewers:      []*apiUser{},
		RequestedReviewersTeams: []any{},
		State:                   state(i.closed),
		Draft:                   wip(i.title),
		Comments:                len(i.comments),
		HTMLURL:                 page,
		DiffURL:                 page + ".diff",
		PatchURL:                page + ".patch",
		Mergeable:               !i.closed,
		Merged:                  pr.merged,
		Base:                    &apiBranchInfo{Label: pr.base, Ref: pr.base, SHA: r.branches[pr.base], RepoID: r.id, Repository: rj},
		Head:                    &apiBranchInfo{Label: pr.head, Ref: pr.head, SHA: pr.headSHA, RepoID: r.id, Repository: rj},
		MergeBase:               r.branches[pr.base],
		Created:                 &created,
		Updated:                 &updated,
		Closed:                  i.closedAt,
	}
	if pr.merged {
		at, sha := pr.mergedAt, pr.mergeSHA
		out.MergedAt, out.MergeCommitSHA, out.MergedBy = &at, &sha, s.userJSON(tokenUser)
	}
	return out
}

func (s *Server) issueJSON(r *repo, i *issue) *apiIssue {
	out := &apiIssue{
		ID: i.id, URL: s.apiURL(r, fmt.Sprintf("/issues/%d", i.number)), HTMLURL: s.htmlURL(r, i), Number: i.number,
		User: s.userJSON(tokenUser), Title: i.title, Body: i.body, Assets: []any{}, Labels: s.labelsJSON(r, i.labels),
		State: state(i.closed), Comments: len(i.comments), Created: i.created, Updated: i.updated, Closed: i.closedAt,
		Repository: &apiRepositoryMeta{ID: r.id, Name: r.name, Owner: r.owner, FullName: r.owner + "/" + r.name},
	}
	if pr := i.pull; pr != nil {
		out.PullRequest = &apiPullRequestMeta{Merged: pr.merged, Draft: wip(i.title), HTMLURL: s.htmlURL(r, i)}
		if pr.merged {
			at := pr.mergedAt
			out.PullRequest.MergedAt = &at
		}
	}
	return out
}

func (s *Server) commentJSON(r *repo, i *issue, c *comment) *apiComment {
	out := &apiComment{ID: c.id, HTMLURL: fmt.Sprintf("%s#issuecomment-%d", s.htmlURL(r, i), c.id), User: s.userJSON(tokenUser),
		Body: c.body, Assets: []any{}, Created: c.created, Updated: c.created}
	if i.pull != nil {
		out.PullRequestURL = s.htmlURL(r, i)
	} else {
		out.IssueURL = s.htmlURL(r, i)
	}
	return out
}

func (s *Server) statusJSON(r *repo, st *status) *apiCommitStatus {
	return &apiCommitStatus{ID: st.id, Status: st.state, TargetURL: st.targetURL, Description: st.description,
		URL: s.apiURL(r, "/statuses/"+st.sha), Context: st.context, Creator: s.userJSON(tokenUser),
		Created: st.created, Updated: st.created}
}

func (s *Server) hookJSON(h *hook) *apiHook {
	return &apiHook{ID: h.id, Type: h.typ, BranchFilter: h.branchFilter,
		Config: map[string]string{"url": h.url, "content_type": h.contentType, "http_method": "post"},
		Events: h.events, Active: h.active, Updated: h.created, Created: h.created}
}

func (s *Server) commitJSON(r *repo, sha, message string) *payloadCommit {
	u := &payloadUser{Name: tokenUser, Email: tokenUser + "@noreply.localhost", UserName: tokenUser}
	return &payloadCommit{ID: sha, Message: message, URL: fmt.Sprintf("%s/%s/%s/commit/%s", s.srv.URL, r.owner, r.name, sha),
		Author: u, Committer: u, Timestamp: epoch, Added: []string{}, Removed: []string{}, Modified: []string{}}
}

// apiURL is a path under the repository's API URL.
func (s *Server) apiURL(r *repo, path string) string {
	return fmt.Sprintf("%s/api/v1/repos/%s/%s%s", s.srv.URL, r.owner, r.name, path)
}

func state(closed bool) string {
	if closed {
		return "closed"
	}
	return "open"
}
