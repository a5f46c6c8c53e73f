// Package banktest is a bank for tests: a local server that speaks the
// payment API bank.API calls (a pain.001 upload, a TAN challenge when the
// test asks for one, a pain.002 status report of the outcomes the test
// decides, cancellation before anything is decided), and the pain.002
// reports a bank gives for a file upload.
package banktest

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"

	"slipway/internal/bank"
)

// Bank is the test bank's state.
type Bank struct {
	URL   string
	Token string
	// TAN, when set, is asked for before a batch executes.
	TAN string

	mu       sync.Mutex
	batches  map[string]*batch
	outcomes map[string]bank.Result // by end-to-end id
	seq      int
	// TANs are the TANs the bank was sent, in order.
	TANs []string
}

type batch struct {
	id, messageID string
	endToEnd      []string
	state         string // challenge, accepted, cancelled
	challenge     string
}

// New starts a test bank with a token; it stops when the test ends.
func New(t testing.TB, token string) *Bank {
	b := &Bank{Token: token, batches: map[string]*batch{}, outcomes: map[string]bank.Result{}}
	srv := httptest.NewServer(http.HandlerFunc(b.serve))
	t.Cleanup(srv.Close)
	b.URL = srv.URL
	return b
}

// Decide sets what the bank did with a transfer.
func (b *Bank) Decide(endToEndID string, r bank.Result) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.outcomes[endToEndID] = r
}

// Batches is how many batches the bank took.
func (b *Bank) Batches() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.batches)
}

func reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (b *Bank) serve(w http.ResponseWriter, r *http.Request) {
	if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte("Bearer "+b.Token)) != 1 {
		reply(w, http.StatusUnauthorized, map[string]string{"error": "unknown token"})
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	path := strings.TrimPrefix(r.URL.Path, "/v1/payments/batches")
	switch {
	case r.Method == http.MethodPost && path == "":
		doc, _ := io.ReadAll(io.LimitReader(r.Body, 16<<20))
		msg, e2e, err := readPain001(doc)
		if err != nil || msg != r.Header.Get("X-Message-Id") {
			reply(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("not a pain.001 of message %q: %v", r.Header.Get("X-Message-Id"), err)})
			return
		}
		for _, old := range b.batches {
			if old.messageID == msg { // an upload repeated: the same batch
				b.answer(w, old)
				return
			}
		}
		b.seq++
		bt := &batch{id: fmt.Sprintf("bt_%d", b.seq), messageID: msg, endToEnd: e2e, state: "accepted"}
		if b.TAN != "" {
			bt.state, bt.challenge = "challenge", fmt.Sprintf("ch_%d", b.seq)
		}
		b.batches[bt.id] = bt
		b.answer(w, bt)
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/tan"):
		bt := b.batches[strings.TrimSuffix(strings.TrimPrefix(path, "/"), "/tan")]
		var in struct {
			ChallengeID string `json:"challenge_id"`
			TAN         string `json:"tan"`
		}
		_ = json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&in)
		b.TANs = append(b.TANs, in.TAN)
		switch {
		case bt == nil:
			reply(w, http.StatusNotFound, map[string]string{"error": "no such batch"})
		case bt.state != "challenge" || in.ChallengeID != bt.challenge:
			reply(w, http.StatusConflict, map[string]string{"error": "no challenge is open"})
		case subtle.ConstantTimeCompare([]byte(in.TAN), []byte(b.TAN)) != 1:
			reply(w, http.StatusUnprocessableEntity, map[string]string{"error": "the TAN is wrong"})
		default:
			bt.state = "accepted"
			reply(w, http.StatusOK, map[string]string{"status": "accepted"})
		}
	case r.Method == http.MethodGet && strings.HasSuffix(path, "/status"):
		bt := b.batches[strings.TrimSuffix(strings.TrimPrefix(path, "/"), "/status")]
		if bt == nil {
			reply(w, http.StatusNotFound, map[string]string{"error": "no such batch"})
			return
		}
		results := map[string]bank.Result{}
		for _, e := range bt.endToEnd {
			if o, ok := b.outcomes[e]; ok && bt.state == "accepted" {
				results[e] = o
			} else {
				results[e] = bank.Result{Status: bank.Pending}
			}
		}
		w.Header().Set("Content-Type", "application/xml")
		_, _ = w.Write(Report(bt.messageID, results))
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/cancel"):
		bt := b.batches[strings.TrimSuffix(strings.TrimPrefix(path, "/"), "/cancel")]
		if bt == nil {
			reply(w, http.StatusNotFound, map[string]string{"error": "no such batch"})
			return
		}
		for _, e := range bt.endToEnd {
			if _, decided := b.outcomes[e]; decided {
				reply(w, http.StatusConflict, map[string]string{"error": "the batch is executed already"})
				return
			}
		}
		bt.state = "cancelled"
		reply(w, http.StatusOK, map[string]string{"status": "cancelled"})
	default:
		reply(w, http.StatusNotFound, map[string]string{"error": "no such route"})
	}
}

func (b *Bank) answer(w http.ResponseWriter, bt *batch) {
	out := map[string]any{"id": bt.id, "status": "accepted"}
	if bt.state == "challenge" {
		out["status"] = "challenge"
		out["challenge"] = map[string]string{"id": bt.challenge, "message": "Confirm the payout in your banking app and enter the TAN it shows."}
	}
	reply(w, http.StatusCreated, out)
}

// readPain001 reads a pain.001's message id and end-to-end ids.
func readPain001(doc []byte) (string, []string, error) {
	var d struct {
		MsgID string   `xml:"CstmrCdtTrfInitn>GrpHdr>MsgId"`
		E2E   []string `xml:"CstmrCdtTrfInitn>PmtInf>CdtTrfTxInf>PmtId>EndToEndId"`
	}
	if err := xml.NewDecoder(bytes.NewReader(doc)).Decode(&d); err != nil {
		return "", nil, err
	}
	if d.MsgID == "" || len(d.E2E) == 0 {
		return "", nil, fmt.Errorf("no message id or no transfers")
	}
	return d.MsgID, d.E2E, nil
}

// Report is a pain.002.001.10 status report of a batch's transfers:
// ACSC for paid, RJCT with the reason for rejected, ACSP for pending.
func Report(messageID string, results map[string]bank.Result) []byte {
	var w bytes.Buffer
	w.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	w.WriteString(`<Document xmlns="urn:iso:std:iso:20022:tech:xsd:pain.002.001.10"><CstmrPmtStsRpt>`)
	fmt.Fprintf(&w, "<GrpHdr><MsgId>RPT-%s</MsgId><CreDtTm>2026-11-27T10:00:00</CreDtTm></GrpHdr>", messageID)
	fmt.Fprintf(&w, "<OrgnlGrpInfAndSts><OrgnlMsgId>%s</OrgnlMsgId><OrgnlMsgNmId>pain.001</OrgnlMsgNmId></OrgnlGrpInfAndSts>", messageID)
	fmt.Fprintf(&w, "<OrgnlPmtInfAndSts><OrgnlPmtInfId>%s</OrgnlPmtInfId>", messageID)
	ids := make([]string, 0, len(results))
	for id := range results {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		r := results[id]
		code := map[string]string{bank.Paid: "ACSC", bank.Rejected: "RJCT"}[r.Status]
		if code == "" {
			code = "ACSP"
		}
		fmt.Fprintf(&w, "<TxInfAndSts><OrgnlEndToEndId>%s</OrgnlEndToEndId><TxSts>%s</TxSts>", id, code)
		if r.Status == bank.Rejected {
			cd, info, _ := strings.Cut(r.Reason, " ")
			fmt.Fprintf(&w, "<StsRsnInf><Rsn><Cd>%s</Cd></Rsn><AddtlInf>%s</AddtlInf></StsRsnInf>", cd, info)
		}
		w.WriteString("</TxInfAndSts>")
	}
	w.WriteString("</OrgnlPmtInfAndSts></CstmrPmtStsRpt></Document>\n")
	return w.Bytes()
}
