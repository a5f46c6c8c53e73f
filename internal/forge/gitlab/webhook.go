package gitlab

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"slipway/internal/forge"
)

// maxWebhookBody bounds a delivery's body (GitLab's own limit on a
// webhook's payload is 25 MiB).
const maxWebhookBody = 25 << 20

// payload is what Slipway reads of a GitLab webhook's body (merge
// request, issue and pipeline events share object_attributes).
type payload struct {
	ObjectKind string `json:"object_kind"`
	Project    struct {
		PathWithNamespace string `json:"path_with_namespace"`
	} `json:"project"`
	Attrs struct {
		IID            int     `json:"iid"`
		State          string  `json:"state"`
		Title          string  `json:"title"`
		Description    string  `json:"description"`
		URL            string  `json:"url"`
		SourceBranch   string  `json:"source_branch"`
		TargetBranch   string  `json:"target_branch"`
		Draft          *bool   `json:"draft"`
		WorkInProgress bool    `json:"work_in_progress"` // before GitLab 13.x's draft
		SHA            string  `json:"sha"`              // a pipeline's commit
		UpdatedAt      string  `json:"updated_at"`
		Labels         []label `json:"labels"`
		LastCommit     struct {
			ID string `json:"id"`
		} `json:"last_commit"`
	} `json:"object_attributes"`
	Labels []label `json:"labels"`
}

type label struct {
	Title string `json:"title"`
}

// ReadWebhook reads a GitLab webhook delivery (forge.ReadWebhook). GitLab
// sends the hook's secret itself in X-Gitlab-Token (it signs nothing):
// the token is compared in constant time, and a body it came with is
// believed as long as it is the event the X-Gitlab-Event header names.
// The delivery's id is its Idempotency-Key (GitLab 17.4 and later: the
// same on every retry of a delivery), else its X-Gitlab-Event-UUID.
// GitLab has no ping: a hook's test delivery is another event (a push),
// read as forge.EventOther.
func ReadWebhook(h http.Header, body []byte, secret string) (*forge.Event, error) {
	if !tokenOK(h.Get("X-Gitlab-Token"), secret) {
		return nil, forge.ErrSignature
	}
	if len(body) > maxWebhookBody {
		return nil, fmt.Errorf("%w: gitlab: the body is over %d bytes", forge.ErrPayload, maxWebhookBody)
	}
	var p payload
	if b := bytes.TrimSpace(body); len(b) == 0 || b[0] != '{' {
		return nil, fmt.Errorf("%w: gitlab: the body is not a JSON object", forge.ErrPayload)
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, fmt.Errorf("%w: gitlab: %v", forge.ErrPayload, err)
	}
	e := &forge.Event{Delivery: h.Get("Idempotency-Key"), Repo: p.Project.PathWithNamespace}
	if e.Delivery == "" {
		e.Delivery = h.Get("X-Gitlab-Event-UUID")
	}
	a := &p.Attrs
	bad := func(what string) (*forge.Event, error) {
		return nil, fmt.Errorf("%w: gitlab: a %q delivery %s", forge.ErrPayload, h.Get("X-Gitlab-Event"), what)
	}
	switch event := h.Get("X-Gitlab-Event"); event {
	case "Merge Request Hook":
		state, ok := map[string]string{"opened": forge.PROpen, "locked": forge.PROpen, "closed": forge.PRClosed, "merged": forge.PRMerged}[a.State]
		switch {
		case p.ObjectKind != "merge_request":
			return bad("is about a " + p.ObjectKind)
		case e.Repo == "" || a.IID <= 0 || !ok:
			return bad("names no project, merge request or state")
		case a.LastCommit.ID != "" && !isSHA(a.LastCommit.ID):
			return bad("has no commit id")
		}
		draft := a.WorkInProgress
		if a.Draft != nil {
			draft = *a.Draft
		}
		title := a.Title
		if draft {
			title = draftless(title)
		}
		e.Type = forge.EventPullRequest
		e.PR = &forge.PR{Number: a.IID, URL: a.URL, Title: title, State: state, Draft: draft,
			Head: a.SourceBranch, Base: a.TargetBranch, HeadSHA: a.LastCommit.ID}
	case "Issue Hook", "Confidential Issue Hook":
		if p.ObjectKind != "issue" {
			return bad("is about a " + p.ObjectKind)
		}
		if e.Repo == "" || a.IID <= 0 || a.State != "opened" && a.State != "closed" {
			return bad("names no project, issue or state")
		}
		labels := a.Labels
		if labels == nil {
			labels = p.Labels
		}
		is := &forge.Issue{Number: a.IID, Title: a.Title, Body: cut(a.Description, forge.MaxBody), URL: a.URL,
			State: "open", Labels: make([]string, 0, len(labels)), UpdatedAt: webhookTime(a.UpdatedAt)}
		if a.State == "closed" {
			is.State = "closed"
		}
		for _, l := range labels {
			is.Labels = append(is.Labels, l.Title)
		}
		e.Type, e.Issue = forge.EventIssue, is
	case "Pipeline Hook":
		if p.ObjectKind != "pipeline" {
			return bad("is about a " + p.ObjectKind)
		}
		if e.Repo == "" || !isSHA(a.SHA) {
			return bad("names no project or commit")
		}
		e.Type, e.SHA = forge.EventCheck, a.SHA
	case "":
		return nil, fmt.Errorf("%w: gitlab: no X-Gitlab-Event header", forge.ErrPayload)
	default:
		e.Type = forge.EventOther
	}
	return e, nil
}

// tokenOK compares a delivery's token with the secret in constant time
// (hashed first, so not even the length shows); an empty secret never
// verifies.
func tokenOK(token, secret string) bool {
	if secret == "" || token == "" {
		return false
	}
	a, b := sha256.Sum256([]byte(token)), sha256.Sum256([]byte(secret))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// isSHA reports a commit id: 40 (SHA-1) or 64 (SHA-256) lower-case hex
// digits.
func isSHA(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range []byte(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// webhookTime reads a time of a webhook's body: ISO 8601, or the older
// "2006-01-02 15:04:05 UTC" some events still send (zero when neither).
func webhookTime(s string) time.Time {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05 MST", "2006-01-02 15:04:05 -0700"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC()
		}
	}
	return time.Time{}
}
