package github

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"slipway/internal/forge"
)

// GitHub's REST API cannot change a pull request's draft state: these
// GraphQL mutations do, given the pull request's node id.
const (
	readyMutation = `mutation($input: MarkPullRequestReadyForReviewInput!) { markPullRequestReadyForReview(input: $input) { pullRequest { isDraft } } }`
	draftMutation = `mutation($input: ConvertPullRequestToDraftInput!) { convertPullRequestToDraft(input: $input) { pullRequest { isDraft } } }`
)

// maxGraphQLAnswer bounds the answer read from a mutation (a few bytes
// expected).
const maxGraphQLAnswer = 1 << 20

// setDraft makes the pull request with node id nodeID a draft or ready for
// review, and answers its draft state after.
func (p *provider) setDraft(ctx context.Context, op, nodeID string, draft bool) (bool, error) {
	field, query := "markPullRequestReadyForReview", readyMutation
	if draft {
		field, query = "convertPullRequestToDraft", draftMutation
	}
	body, err := json.Marshal(map[string]any{
		"query":     query,
		"variables": map[string]any{"input": map[string]string{"pullRequestId": nodeID}},
	})
	if err != nil {
		return false, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.graphQL, bytes.NewReader(body))
	if err != nil {
		return false, fmt.Errorf("%w: github: %s: %w", forge.ErrInvalid, op, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "slipway")
	if p.token != "" {
		req.Header.Set("Authorization", "Bearer "+p.token)
	}
	resp, err := p.http.Do(req)
	if err != nil {
		return false, fail(op, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxGraphQLAnswer))
	if err != nil {
		return false, fail(op, err)
	}
	var out struct {
		Data map[string]*struct {
			PullRequest struct {
				IsDraft bool `json:"isDraft"`
			} `json:"pullRequest"`
		} `json:"data"`
		Errors []struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"errors"`
		Message string `json:"message"` // a REST-style error (401, 403)
	}
	jsonErr := json.Unmarshal(data, &out)
	if resp.StatusCode/100 != 2 {
		return false, statusError(op, resp.StatusCode, resp.Header, out.Message)
	}
	if jsonErr != nil {
		return false, fmt.Errorf("%w: github: %s: GraphQL answered something not JSON", forge.ErrUnavailable, op)
	}
	// GraphQL answers its errors with 200 and a type.
	if len(out.Errors) > 0 {
		to := forge.ErrInvalid
		switch out.Errors[0].Type {
		case "NOT_FOUND":
			to = forge.ErrNotFound
		case "FORBIDDEN":
			to = forge.ErrForbidden
		case "RATE_LIMITED":
			to = forge.ErrRateLimited
		}
		return false, fmt.Errorf("%w: github: %s: %s", to, op, clip(out.Errors[0].Message))
	}
	r := out.Data[field]
	if r == nil {
		return false, fmt.Errorf("%w: github: %s: GraphQL answered no %s", forge.ErrUnavailable, op, field)
	}
	return r.PullRequest.IsDraft, nil
}
