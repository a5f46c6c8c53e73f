package bank_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"slipway/internal/bank"
	"slipway/internal/bank/banktest"
)

func pain001(msgID string, e2e ...string) []byte {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><Document xmlns="urn:iso:std:iso:20022:tech:xsd:pain.001.001.09"><CstmrCdtTrfInitn><GrpHdr><MsgId>` +
		msgID + `</MsgId></GrpHdr><PmtInf>`)
	for _, e := range e2e {
		b.WriteString(`<CdtTrfTxInf><PmtId><EndToEndId>` + e + `</EndToEndId></PmtId></CdtTrfTxInf>`)
	}
	b.WriteString(`</PmtInf></CstmrCdtTrfInitn></Document>`)
	return []byte(b.String())
}

// connection is one implementation under the conformance suite, with how
// the test makes the bank decide (a status report for the file, the
// bank's own decision for the API).
type connection struct {
	bank   bank.Bank
	decide func(t *testing.T, ref, msgID string, results map[string]bank.Result)
	tan    string
}

// TestConformance runs one scenario against every connection: a batch is
// submitted (and, where the bank asks, confirmed with its TAN after a
// wrong one is refused), is pending until the bank decides, then reports
// each transfer paid or rejected with the reason; a decided batch cannot
// be cancelled, an undecided one can.
func TestConformance(t *testing.T) {
	dir := t.TempDir()
	api := banktest.New(t, "tok_test")
	api.TAN = "246810"
	for name, c := range map[string]connection{
		"file": {bank: bank.File{Dir: dir}, decide: func(t *testing.T, ref, msgID string, results map[string]bank.Result) {
			if err := os.WriteFile(filepath.Join(dir, msgID+".pain002.xml"), banktest.Report(msgID, results), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		"api": {bank: bank.API{Base: api.URL, Token: "tok_test"}, tan: "246810", decide: func(t *testing.T, _, _ string, results map[string]bank.Result) {
			for e, r := range results {
				api.Decide(e, r)
			}
		}},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			msg := "MSG-" + strings.ToUpper(name)
			ref, challenge, err := c.bank.Submit(ctx, msg, pain001(msg, name+"-1", name+"-2"))
			if err != nil || ref == "" {
				t.Fatalf("submit: %q %v", ref, err)
			}
			if (challenge != nil) != (c.tan != "") {
				t.Fatalf("challenge %+v, want one: %v", challenge, c.tan != "")
			}
			if challenge != nil {
				if err := c.bank.ConfirmTAN(ctx, ref, challenge.ID, "000000"); !errors.Is(err, bank.ErrRefused) {
					t.Fatalf("a wrong TAN: %v", err)
				}
				if err := c.bank.ConfirmTAN(ctx, ref, challenge.ID, c.tan); err != nil {
					t.Fatalf("the TAN: %v", err)
				}
			}
			res, err := c.bank.Status(ctx, ref)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range []string{name + "-1", name + "-2"} {
				if r, ok := res[e]; ok && r.Status != bank.Pending {
					t.Fatalf("before the bank decided, %s is %+v", e, r)
				}
			}
			c.decide(t, ref, msg, map[string]bank.Result{name + "-1": {Status: bank.Paid}, name + "-2": {Status: bank.Rejected, Reason: "AC04 Closed account"}})
			res, err = c.bank.Status(ctx, ref)
			if err != nil || res[name+"-1"].Status != bank.Paid || res[name+"-2"].Status != bank.Rejected || res[name+"-2"].Reason != "AC04 Closed account" {
				t.Fatalf("the outcomes: %+v %v", res, err)
			}
			if err := c.bank.Cancel(ctx, ref); !errors.Is(err, bank.ErrRefused) {
				t.Fatalf("cancelling a decided batch: %v", err)
			}
			other := msg + "-B"
			ref2, ch, err := c.bank.Submit(ctx, other, pain001(other, name+"-3"))
			if err != nil {
				t.Fatal(err)
			}
			if ch != nil {
				if err := c.bank.ConfirmTAN(ctx, ref2, ch.ID, c.tan); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.bank.Cancel(ctx, ref2); err != nil {
				t.Fatalf("cancelling an undecided batch: %v", err)
			}
		})
	}
	if strings.Join(api.TANs, ",") != "000000,246810,246810" {
		t.Fatalf("the TANs the bank was sent: %v", api.TANs)
	}
	if _, _, err := (bank.API{Base: api.URL, Token: "wrong"}).Submit(context.Background(), "M", pain001("M", "x")); !errors.Is(err, bank.ErrRefused) {
		t.Fatalf("a wrong token: %v", err)
	}
}

// TestStatusReport reads the report's shapes: transfers' own statuses, a
// group's rejection applied to its transfers, reasons, and a report that
// is not one.
func TestStatusReport(t *testing.T) {
	doc := `<Document xmlns="urn:iso:std:iso:20022:tech:xsd:pain.002.001.03"><CstmrPmtStsRpt><OrgnlGrpInfAndSts><GrpSts>PART</GrpSts></OrgnlGrpInfAndSts>
<OrgnlPmtInfAndSts><TxInfAndSts><OrgnlEndToEndId>A</OrgnlEndToEndId><TxSts>ACCC</TxSts></TxInfAndSts>
<TxInfAndSts><OrgnlEndToEndId>B</OrgnlEndToEndId><TxSts>RJCT</TxSts><StsRsnInf><Rsn><Cd>AM04</Cd></Rsn><AddtlInf>Insufficient</AddtlInf><AddtlInf>funds</AddtlInf></StsRsnInf></TxInfAndSts>
<TxInfAndSts><OrgnlEndToEndId>C</OrgnlEndToEndId><TxSts>PDNG</TxSts></TxInfAndSts></OrgnlPmtInfAndSts>
<OrgnlPmtInfAndSts><PmtInfSts>RJCT</PmtInfSts><TxInfAndSts><OrgnlEndToEndId>D</OrgnlEndToEndId></TxInfAndSts></OrgnlPmtInfAndSts></CstmrPmtStsRpt></Document>`
	res, err := bank.ParseStatusReport([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bank.Result{"A": {Status: bank.Paid}, "B": {Status: bank.Rejected, Reason: "AM04 Insufficient funds"}, "C": {Status: bank.Pending},
		"D": {Status: bank.Rejected, Reason: "rejected by the bank"}}
	for k, v := range want {
		if res[k] != v {
			t.Errorf("%s: %+v, want %+v", k, res[k], v)
		}
	}
	if _, err := bank.ParseStatusReport([]byte("<not xml")); err == nil {
		t.Fatal("a broken report was read")
	}
}
