package commerce

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strings"
	"time"
)

// SEPA credit transfer files (ISO 20022 pain.001): the payout batch as the
// bank takes it. Version 09 follows the EPC's SCT customer-to-PSP
// implementation guidelines (2023); 03 is the older message many banks
// still take. Amounts are written from integer minor units, so the
// control sums are exact.

// SEPA message versions.
const (
	Pain09 = "09"
	Pain03 = "03"
)

// SEPAParty is an account holder: name, IBAN, BIC.
type SEPAParty struct {
	Name string
	IBAN string
	BIC  string
}

// SEPAPayment is one credit transfer.
type SEPAPayment struct {
	EndToEndID  string
	Creditor    SEPAParty
	AmountMinor int64
	Remittance  string
}

// SEPABatch is a payment initiation: one debtor account, many transfers,
// in euro.
type SEPABatch struct {
	Version   string
	MessageID string
	Created   time.Time
	Execution time.Time // the requested execution date
	Debtor    SEPAParty
	Payments  []SEPAPayment
}

// sepaID checks an identifier of the EPC's restricted set (at most 35).
func sepaID(what, s string) error {
	if s == "" || len(s) > 35 || !epcText.MatchString(s) || strings.HasPrefix(s, "/") || strings.Contains(s, "//") {
		return fmt.Errorf("%s %q: 1 to 35 characters of the SEPA set, not starting with / nor holding //", what, s)
	}
	return nil
}

// sepaText checks a name or remittance text of the EPC's character set.
func sepaText(what, s string, max int) error {
	if s == "" || len(s) > max || !epcText.MatchString(s) {
		return fmt.Errorf("%s: 1 to %d characters of the SEPA set", what, max)
	}
	return nil
}

// amount writes minor units as euros with two decimals.
func amount(minor int64) string { return fmt.Sprintf("%d.%02d", minor/100, minor%100) }

// SEPAXML writes a batch's pain.001 file, after checking every field the
// schema and the EPC's rules constrain.
func SEPAXML(b SEPABatch) ([]byte, error) {
	if b.Version != Pain09 && b.Version != Pain03 {
		return nil, fmt.Errorf("sepa: version %q: 09 or 03", b.Version)
	}
	if err := sepaID("message id", b.MessageID); err != nil {
		return nil, err
	}
	if len(b.Payments) == 0 {
		return nil, fmt.Errorf("sepa: a batch holds at least one payment")
	}
	if err := sepaText("debtor name", b.Debtor.Name, 70); err != nil {
		return nil, err
	}
	if NormalIBAN(b.Debtor.IBAN) != b.Debtor.IBAN || NormalBIC(b.Debtor.BIC) != b.Debtor.BIC {
		return nil, fmt.Errorf("sepa: the debtor's IBAN or BIC is not valid")
	}
	var total int64
	for i, p := range b.Payments {
		if err := sepaID(fmt.Sprintf("payment %d: end-to-end id", i), p.EndToEndID); err != nil {
			return nil, err
		}
		if err := sepaText(fmt.Sprintf("payment %d: creditor name", i), p.Creditor.Name, 70); err != nil {
			return nil, err
		}
		if err := sepaText(fmt.Sprintf("payment %d: remittance", i), p.Remittance, 140); err != nil {
			return nil, err
		}
		if NormalIBAN(p.Creditor.IBAN) != p.Creditor.IBAN || NormalBIC(p.Creditor.BIC) != p.Creditor.BIC {
			return nil, fmt.Errorf("sepa: payment %d: the creditor's IBAN or BIC is not valid", i)
		}
		if p.AmountMinor < 1 || p.AmountMinor > 99_999_999_999 {
			return nil, fmt.Errorf("sepa: payment %d: an amount of 0.01 to 999999999.99", i)
		}
		total += p.AmountMinor
	}
	bic := "BICFI"
	if b.Version == Pain03 {
		bic = "BIC"
	}
	var w bytes.Buffer
	esc := func(s string) string {
		var e bytes.Buffer
		_ = xml.EscapeText(&e, []byte(s))
		return e.String()
	}
	line := func(indent int, format string, args ...any) {
		w.WriteString(strings.Repeat("  ", indent))
		fmt.Fprintf(&w, format, args...)
		w.WriteByte('\n')
	}
	agent := func(indent int, tag, code string) {
		line(indent, "<%s><FinInstnId><%s>%s</%s></FinInstnId></%s>", tag, bic, esc(code), bic, tag)
	}
	w.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	line(0, `<Document xmlns="urn:iso:std:iso:20022:tech:xsd:pain.001.001.%s">`, b.Version)
	line(1, "<CstmrCdtTrfInitn>")
	line(2, "<GrpHdr>")
	line(3, "<MsgId>%s</MsgId>", esc(b.MessageID))
	line(3, "<CreDtTm>%s</CreDtTm>", b.Created.UTC().Format("2006-01-02T15:04:05"))
	line(3, "<NbOfTxs>%d</NbOfTxs>", len(b.Payments))
	line(3, "<CtrlSum>%s</CtrlSum>", amount(total))
	line(3, "<InitgPty><Nm>%s</Nm></InitgPty>", esc(b.Debtor.Name))
	line(2, "</GrpHdr>")
	line(2, "<PmtInf>")
	line(3, "<PmtInfId>%s</PmtInfId>", esc(b.MessageID))
	line(3, "<PmtMtd>TRF</PmtMtd>")
	line(3, "<BtchBookg>true</BtchBookg>")
	line(3, "<NbOfTxs>%d</NbOfTxs>", len(b.Payments))
	line(3, "<CtrlSum>%s</CtrlSum>", amount(total))
	line(3, "<PmtTpInf><SvcLvl><Cd>SEPA</Cd></SvcLvl></PmtTpInf>")
	if b.Version == Pain03 {
		line(3, "<ReqdExctnDt>%s</ReqdExctnDt>", b.Execution.UTC().Format("2006-01-02"))
	} else {
		line(3, "<ReqdExctnDt><Dt>%s</Dt></ReqdExctnDt>", b.Execution.UTC().Format("2006-01-02"))
	}
	line(3, "<Dbtr><Nm>%s</Nm></Dbtr>", esc(b.Debtor.Name))
	line(3, "<DbtrAcct><Id><IBAN>%s</IBAN></Id></DbtrAcct>", b.Debtor.IBAN)
	agent(3, "DbtrAgt", b.Debtor.BIC)
	line(3, "<ChrgBr>SLEV</ChrgBr>")
	for _, p := range b.Payments {
		line(3, "<CdtTrfTxInf>")
		line(4, "<PmtId><EndToEndId>%s</EndToEndId></PmtId>", esc(p.EndToEndID))
		line(4, `<Amt><InstdAmt Ccy="EUR">%s</InstdAmt></Amt>`, amount(p.AmountMinor))
		agent(4, "CdtrAgt", p.Creditor.BIC)
		line(4, "<Cdtr><Nm>%s</Nm></Cdtr>", esc(p.Creditor.Name))
		line(4, "<CdtrAcct><Id><IBAN>%s</IBAN></Id></CdtrAcct>", p.Creditor.IBAN)
		line(4, "<RmtInf><Ustrd>%s</Ustrd></RmtInf>", esc(p.Remittance))
		line(3, "</CdtTrfTxInf>")
	}
	line(2, "</PmtInf>")
	line(1, "</CstmrCdtTrfInitn>")
	line(0, "</Document>")
	return w.Bytes(), nil
}
