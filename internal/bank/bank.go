// Package bank is how payout batches reach the bank that pays them: a SEPA
// credit transfer file (pain.001) goes in, a payment status report
// (pain.002) comes back. Two connections: File writes each batch to a
// directory for a person to upload and reads the bank's status report back
// from there; API speaks a bank's payment API, which may ask for a TAN
// before it executes a batch. The TAN is forwarded as it is given and
// never kept.
package bank

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"strings"
)

// Bank is a bank connection.
type Bank interface {
	// Submit hands a batch (its pain.001 file) to the bank; ref names it
	// there. A challenge, when the bank asks for a TAN before it executes
	// the batch, is answered with ConfirmTAN.
	Submit(ctx context.Context, messageID string, pain001 []byte) (ref string, challenge *BankChallenge, err error)
	// ConfirmTAN answers a challenge.
	ConfirmTAN(ctx context.Context, ref, challengeID, tan string) error
	// Status reads what the bank did with each transfer, by end-to-end id
	// (its pain.002 report); a transfer it has not decided is Pending.
	Status(ctx context.Context, ref string) (map[string]Result, error)
	// Cancel asks the bank not to execute a batch it has not executed.
	Cancel(ctx context.Context, ref string) error
}

// BankChallenge is a bank's request for a TAN.
type BankChallenge struct {
	ID      string `json:"id"`
	Message string `json:"message" doc:"What the bank says to do (e.g. confirm in the banking app and enter the TAN it shows)"`
}

// A transfer's outcome.
const (
	Paid     = "paid"
	Rejected = "rejected"
	Pending  = "pending"
)

// Result is one transfer's outcome.
type Result struct {
	Status string // Paid, Rejected or Pending
	Reason string // a rejection's code and text
}

// ErrRefused is a bank's refusal (a wrong TAN, a batch it will not
// cancel): the caller says it to the person as it is.
var ErrRefused = errors.New("the bank refused")

// maxReport bounds a status report.
const maxReport = 16 << 20

// ParseStatusReport reads a pain.002 customer payment status report (any
// version: elements are matched by their local names) into each
// transfer's outcome. ACSC and ACCC are paid; RJCT is rejected with its
// reason; anything else is pending. A group rejected as a whole rejects
// every transfer named in it.
func ParseStatusReport(doc []byte) (map[string]Result, error) {
	if len(doc) > maxReport {
		return nil, fmt.Errorf("the status report is larger than %d bytes", maxReport)
	}
	var rpt struct {
		Report struct {
			Group struct {
				Status string `xml:"GrpSts"`
			} `xml:"OrgnlGrpInfAndSts"`
			Payments []struct {
				Status string `xml:"PmtInfSts"`
				Txs    []struct {
					EndToEnd string `xml:"OrgnlEndToEndId"`
					Status   string `xml:"TxSts"`
					Reasons  []struct {
						Code string   `xml:"Rsn>Cd"`
						Info []string `xml:"AddtlInf"`
					} `xml:"StsRsnInf"`
				} `xml:"TxInfAndSts"`
			} `xml:"OrgnlPmtInfAndSts"`
		} `xml:"CstmrPmtStsRpt"`
	}
	dec := xml.NewDecoder(bytes.NewReader(doc))
	dec.Strict = true
	if err := dec.Decode(&rpt); err != nil {
		return nil, fmt.Errorf("the status report does not read as pain.002: %w", err)
	}
	out := map[string]Result{}
	for _, p := range rpt.Report.Payments {
		for _, tx := range p.Txs {
			if tx.EndToEnd == "" {
				continue
			}
			status := tx.Status
			if status == "" {
				status = p.Status
			}
			if status == "" {
				status = rpt.Report.Group.Status
			}
			r := Result{Status: Pending}
			switch status {
			case "ACSC", "ACCC":
				r.Status = Paid
			case "RJCT":
				r.Status = Rejected
				var why []string
				for _, rs := range tx.Reasons {
					why = append(why, strings.TrimSpace(rs.Code+" "+strings.Join(rs.Info, " ")))
				}
				r.Reason = strings.Join(why, "; ")
				if r.Reason == "" {
					r.Reason = "rejected by the bank"
				}
			}
			out[tx.EndToEnd] = r
		}
	}
	return out, nil
}
