package github

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strings"

	gh "github.com/google/go-github/v84/github"

	"slipway/internal/forge"
)

// MaxWebhookBody is the largest delivery read: GitHub caps payloads at
// 25 MiB.
const MaxWebhookBody = 25 << 20

// ReadWebhook verifies a GitHub webhook delivery (X-Hub-Signature-256, an
// HMAC-SHA256 of the raw body with the hook's secret) and reads it.
// Pull request, issues, check run, check suite, status and ping events
// are read; any other is EventOther.
func ReadWebhook(h http.Header, body []byte, secret string) (*forge.Event, error) {
	if len(body) > MaxWebhookBody {
		return nil, fmt.Errorf("%w: github: %d bytes, over GitHub's 25 MiB", forge.ErrPayload, len(body))
	}
	if !signed(h.Get("X-Hub-Signature-256"), body, secret) {
		return nil, fmt.Errorf("%w (github: X-Hub-Signature-256)", forge.ErrSignature)
	}
	name := h.Get("X-GitHub-Event")
	if name == "" {
		return nil, fmt.Errorf("%w: github: no X-GitHub-Event header", forge.ErrPayload)
	}
	// A hook made with content type "form" sends the JSON as a form field.
	payload := body
	if ct, _, _ := mime.ParseMediaType(h.Get("Content-Type")); ct == "application/x-www-form-urlencoded" {
		v, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, fmt.Errorf("%w: github: %v", forge.ErrPayload, err)
		}
		payload = []byte(v.Get("payload"))
	}
	var common struct {
		Repository *struct {
			FullName string `json:"full_name"`
		} `json:"repository"`
	}
	if err := json.Unmarshal(payload, &common); err != nil {
		return nil, fmt.Errorf("%w: github: %v", forge.ErrPayload, err)
	}
	e := &forge.Event{Delivery: h.Get("X-GitHub-Delivery"), Type: forge.EventOther}
	if common.Repository != nil {
		e.Repo = common.Repository.FullName
	}
	bad := func(err error) (*forge.Event, error) {
		return nil, fmt.Errorf("%w: github: a %s event: %v", forge.ErrPayload, name, err)
	}
	missing := fmt.Errorf("no %s in it", strings.TrimSuffix(name, "s"))
	switch name {
	case "ping":
		e.Type = forge.EventPing
	case "pull_request":
		var ev gh.PullRequestEvent
		if err := json.Unmarshal(payload, &ev); err != nil {
			return bad(err)
		}
		if ev.PullRequest == nil {
			return bad(missing)
		}
		e.Type, e.PR = forge.EventPullRequest, prOf(ev.PullRequest)
		if e.PR.Number == 0 {
			e.PR.Number = ev.GetNumber()
		}
		// A closed action may come before the pull request reads closed.
		if ev.GetAction() == "closed" && e.PR.State == forge.PROpen {
			e.PR.State = forge.PRClosed
		}
	case "issues":
		var ev gh.IssuesEvent
		if err := json.Unmarshal(payload, &ev); err != nil {
			return bad(err)
		}
		if ev.Issue == nil {
			return bad(missing)
		}
		e.Type, e.Issue = forge.EventIssue, issueOf(ev.Issue)
		if ev.GetAction() == "closed" {
			e.Issue.State = "closed"
		}
	case "check_run":
		var ev gh.CheckRunEvent
		if err := json.Unmarshal(payload, &ev); err != nil {
			return bad(err)
		}
		e.Type, e.SHA = forge.EventCheck, ev.GetCheckRun().GetHeadSHA()
	case "check_suite":
		var ev gh.CheckSuiteEvent
		if err := json.Unmarshal(payload, &ev); err != nil {
			return bad(err)
		}
		e.Type, e.SHA = forge.EventCheck, ev.GetCheckSuite().GetHeadSHA()
	case "status":
		var ev gh.StatusEvent
		if err := json.Unmarshal(payload, &ev); err != nil {
			return bad(err)
		}
		e.Type, e.SHA = forge.EventCheck, ev.GetSHA()
	}
	if e.Type == forge.EventCheck && e.SHA == "" {
		return bad(fmt.Errorf("no head sha in it"))
	}
	return e, nil
}

// signed reports whether signature (the X-Hub-Signature-256 header,
// "sha256=" and the hex HMAC-SHA256 of body) was made with secret. An
// empty secret signs nothing.
func signed(signature string, body []byte, secret string) bool {
	hexSum, ok := strings.CutPrefix(signature, "sha256=")
	if !ok || secret == "" {
		return false
	}
	got, err := hex.DecodeString(hexSum)
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return hmac.Equal(got, mac.Sum(nil))
}
