package gitea

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"slipway/internal/forge"
)

// maxWebhookBody bounds a delivery's body.
const maxWebhookBody = 25 << 20

// Gitea's webhook headers, and the names Forgejo sends them under besides.
var (
	signatureHeaders = []string{"X-Gitea-Signature", "X-Forgejo-Signature"}
	eventHeaders     = []string{"X-Gitea-Event", "X-Forgejo-Event"}
	deliveryHeaders  = []string{"X-Gitea-Delivery", "X-Forgejo-Delivery"}
)

// payload is what ReadWebhook reads of a delivery's body: the fields of
// Gitea's PullRequestPayload, IssuePayload and CommitStatusPayload it
// needs (every payload carries the repository).
type payload struct {
	Number      int64 `json:"number"`
	PullRequest *struct {
		Number  int64  `json:"number"`
		Title   string `json:"title"`
		HTMLURL string `json:"html_url"`
		State   string `json:"state"`
		Draft   bool   `json:"draft"`
		Merged  bool   `json:"merged"`
		Head    *ref   `json:"head"`
		Base    *ref   `json:"base"`
	} `json:"pull_request"`
	Issue *struct {
		Number  int64  `json:"number"`
		Title   string `json:"title"`
		Body    string `json:"body"`
		HTMLURL string `json:"html_url"`
		State   string `json:"state"`
		Labels  []struct {
			Name string `json:"name"`
		} `json:"labels"`
		Updated time.Time `json:"updated_at"`
	} `json:"issue"`
	SHA    string `json:"sha"` // a status event's commit
	Commit *struct {
		ID string `json:"id"`
	} `json:"commit"`
	Repository *struct {
		FullName string `json:"full_name"`
	} `json:"repository"`
}

type ref struct {
	Ref string `json:"ref"`
	SHA string `json:"sha"`
}

// ReadWebhook verifies a Gitea or Forgejo delivery (X-Gitea-Signature or
// X-Forgejo-Signature: the hex HMAC-SHA256 of the body under the hook's
// secret) and reads it. Pull request, issue and commit status events are
// read; anything else is EventOther, Gitea's test delivery (a push, Gitea
// has no ping) among them.
func ReadWebhook(h http.Header, body []byte, secret string) (*forge.Event, error) {
	if len(body) > maxWebhookBody {
		return nil, fmt.Errorf("%w: the body is over %d bytes", forge.ErrPayload, maxWebhookBody)
	}
	if !signed(h, body, secret) {
		return nil, forge.ErrSignature
	}
	var p payload
	if t := bytes.TrimSpace(body); len(t) == 0 || t[0] != '{' {
		return nil, fmt.Errorf("%w: the body is not a JSON object", forge.ErrPayload)
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, fmt.Errorf("%w: %v", forge.ErrPayload, err)
	}
	e := &forge.Event{Delivery: header(h, deliveryHeaders), Type: forge.EventOther}
	if p.Repository != nil {
		e.Repo = p.Repository.FullName
	}
	switch header(h, eventHeaders) {
	case "pull_request":
		pr := p.PullRequest
		if pr == nil {
			return nil, fmt.Errorf("%w: a pull request event without its pull request", forge.ErrPayload)
		}
		e.Type = forge.EventPullRequest
		e.PR = &forge.PR{Number: int(pr.Number), URL: pr.HTMLURL, State: forge.PROpen}
		if e.PR.Number == 0 {
			e.PR.Number = int(p.Number)
		}
		e.PR.Title, e.PR.Draft = splitDraft(pr.Title)
		e.PR.Draft = e.PR.Draft || pr.Draft
		switch {
		case pr.Merged:
			e.PR.State = forge.PRMerged
		case pr.State == "closed":
			e.PR.State = forge.PRClosed
		}
		if pr.Head != nil {
			e.PR.Head, e.PR.HeadSHA = pr.Head.Ref, pr.Head.SHA
		}
		if pr.Base != nil {
			e.PR.Base = pr.Base.Ref
		}
	case "issues":
		is := p.Issue
		if is == nil {
			return nil, fmt.Errorf("%w: an issue event without its issue", forge.ErrPayload)
		}
		e.Type = forge.EventIssue
		e.Issue = &forge.Issue{Number: int(is.Number), Title: is.Title, Body: cut(is.Body, forge.MaxBody), URL: is.HTMLURL,
			State: "open", Labels: []string{}, UpdatedAt: is.Updated}
		if e.Issue.Number == 0 {
			e.Issue.Number = int(p.Number)
		}
		if is.State == "closed" {
			e.Issue.State = "closed"
		}
		for _, l := range is.Labels {
			e.Issue.Labels = append(e.Issue.Labels, l.Name)
		}
	case "status":
		e.Type, e.SHA = forge.EventCheck, p.SHA
		if e.SHA == "" && p.Commit != nil {
			e.SHA = p.Commit.ID
		}
		if e.SHA == "" {
			return nil, fmt.Errorf("%w: a status event without its commit", forge.ErrPayload)
		}
	}
	return e, nil
}

// signed reports whether a signature header holds the body's HMAC under
// secret (an empty secret verifies nothing).
func signed(h http.Header, body []byte, secret string) bool {
	if secret == "" {
		return false
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	want := mac.Sum(nil)
	for _, name := range signatureHeaders {
		for _, v := range h.Values(name) {
			got, err := hex.DecodeString(v)
			if err == nil && hmac.Equal(got, want) {
				return true
			}
		}
	}
	return false
}

// header is the first of names h holds.
func header(h http.Header, names []string) string {
	for _, n := range names {
		if v := h.Get(n); v != "" {
			return v
		}
	}
	return ""
}
