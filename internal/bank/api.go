package bank

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// API speaks a bank's payment API over HTTPS with a bearer token:
//
//	POST {base}/v1/payments/batches             pain.001 (application/xml), X-Message-Id
//	     → 201 {"id", "status": "accepted" | "challenge", "challenge": {"id", "message"}}
//	POST {base}/v1/payments/batches/{id}/tan    {"challenge_id", "tan"} → 200, or 422 {"error"}
//	GET  {base}/v1/payments/batches/{id}/status → 200 pain.002 (application/xml)
//	POST {base}/v1/payments/batches/{id}/cancel → 200, or 409 {"error"}
//
// the shape most banks' corporate payment APIs share (a batch upload, a
// second factor when the bank wants one, an ISO 20022 status report).
type API struct {
	Base   string
	Token  string
	Client *http.Client // nil: a client with a 30 s timeout
}

func (a API) client() *http.Client {
	if a.Client != nil {
		return a.Client
	}
	return &http.Client{Timeout: 30 * time.Second}
}

// do sends a request and reads at most maxReport bytes of the answer.
func (a API) do(ctx context.Context, method, path, contentType string, body []byte, header map[string]string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(a.Base, "/")+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, fmt.Errorf("bank: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+a.Token)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := a.client().Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("bank: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, maxReport+1))
	if err != nil {
		return 0, nil, fmt.Errorf("bank: %w", err)
	}
	if len(out) > maxReport {
		return 0, nil, fmt.Errorf("bank: the answer is larger than %d bytes", maxReport)
	}
	return resp.StatusCode, out, nil
}

// refusal reads a bank's {"error"} (at most 300 characters of it).
func refusal(status int, body []byte) error {
	var e struct {
		Error string `json:"error"`
	}
	_ = json.Unmarshal(body, &e)
	if e.Error == "" {
		e.Error = fmt.Sprintf("HTTP %d", status)
	}
	if len(e.Error) > 300 {
		e.Error = e.Error[:300]
	}
	return fmt.Errorf("%w: %s", ErrRefused, e.Error)
}

func batchPath(ref, tail string) string { return "/v1/payments/batches/" + url.PathEscape(ref) + tail }

// Submit uploads the batch.
func (a API) Submit(ctx context.Context, messageID string, pain001 []byte) (string, *BankChallenge, error) {
	status, body, err := a.do(ctx, http.MethodPost, "/v1/payments/batches", "application/xml", pain001, map[string]string{"X-Message-Id": messageID})
	if err != nil {
		return "", nil, err
	}
	if status != http.StatusCreated && status != http.StatusOK {
		return "", nil, refusal(status, body)
	}
	var out struct {
		ID            string         `json:"id"`
		Status        string         `json:"status"`
		BankChallenge *BankChallenge `json:"challenge"`
	}
	if err := json.Unmarshal(body, &out); err != nil || out.ID == "" {
		return "", nil, fmt.Errorf("bank: the upload's answer does not read: %s", strings.TrimSpace(string(body[:min(len(body), 200)])))
	}
	if out.Status == "challenge" && out.BankChallenge == nil {
		return "", nil, fmt.Errorf("bank: a challenge without its id")
	}
	if out.Status != "challenge" {
		out.BankChallenge = nil
	}
	return out.ID, out.BankChallenge, nil
}

// ConfirmTAN forwards the TAN.
func (a API) ConfirmTAN(ctx context.Context, ref, challengeID, tan string) error {
	b, _ := json.Marshal(map[string]string{"challenge_id": challengeID, "tan": tan})
	status, body, err := a.do(ctx, http.MethodPost, batchPath(ref, "/tan"), "application/json", b, nil)
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return refusal(status, body)
	}
	return nil
}

// Status reads the batch's status report.
func (a API) Status(ctx context.Context, ref string) (map[string]Result, error) {
	status, body, err := a.do(ctx, http.MethodGet, batchPath(ref, "/status"), "", nil, nil)
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		return nil, refusal(status, body)
	}
	return ParseStatusReport(body)
}

// Cancel asks the bank to withdraw the batch.
func (a API) Cancel(ctx context.Context, ref string) error {
	status, body, err := a.do(ctx, http.MethodPost, batchPath(ref, "/cancel"), "application/json", []byte("{}"), nil)
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return refusal(status, body)
	}
	return nil
}
