package commerce

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"slipway/internal/platform/db/dbtest"
)

// sepaSample is a batch with the characters a file must carry exactly:
// an apostrophe and an ampersand-free name, odd cents, a large amount.
func sepaSample(version string) SEPABatch {
	return SEPABatch{Version: version, MessageID: "SLIPWAY-PAYOUT-0001", Created: time.Date(2026, 11, 27, 9, 30, 0, 0, time.UTC),
		Execution: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC),
		Debtor:    SEPAParty{Name: "Slipway Marketplace GmbH", IBAN: "DE89370400440532013000", BIC: "COBADEFFXXX"},
		Payments: []SEPAPayment{
			{EndToEndID: "PAYOUT-1", Creditor: SEPAParty{Name: "Olivia O'Neil", IBAN: "FR1420041010050500013M02606", BIC: "BNPAFRPP"}, AmountMinor: 1801,
				Remittance: "Slipway payout 2026-11 (2 sales)"},
			{EndToEndID: "PAYOUT-2", Creditor: SEPAParty{Name: "Tools + Co. (NL)", IBAN: "NL91ABNA0417164300", BIC: "ABNANL2A"}, AmountMinor: 123456789,
				Remittance: "Slipway payout 2026-11"},
			{EndToEndID: "PAYOUT-3", Creditor: SEPAParty{Name: "Bea Buyer", IBAN: "BE68539007547034", BIC: "GKCCBEBB"}, AmountMinor: 1,
				Remittance: "Slipway payout 2026-11"},
		}}
}

// TestSEPAXML: both versions match their golden files and validate
// against the official schemas (ISO 20022's pain.001.001.03, the EPC's
// SCT customer-to-bank pain.001.001.09) with xmllint; the control sums are
// exact; what a schema or the EPC's rules refuse is refused before a file
// is written.
func TestSEPAXML(t *testing.T) {
	xmllint, err := exec.LookPath("xmllint")
	if err != nil && !dbtest.Required("xmllint") {
		t.Log("xmllint is not installed (Debian libxml2-utils): the files are checked against their golden copies only")
	} else if err != nil {
		t.Fatal("SERVICE_TEST_REQUIRE lists xmllint, which is not installed (Debian libxml2-utils)")
	}
	for _, v := range []string{Pain09, Pain03} {
		t.Run("pain.001.001."+v, func(t *testing.T) {
			got, err := SEPAXML(sepaSample(v))
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "sepa-"+v+".xml")
			if os.Getenv("UPDATE_GOLDEN") != "" {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("the file differs from %s (UPDATE_GOLDEN=1 rewrites it):\n%s", golden, got)
			}
			for _, s := range []string{"<NbOfTxs>3</NbOfTxs>", "<CtrlSum>1234585.91</CtrlSum>", ">18.01<", ">0.01<", ">1234567.89<", "O&#39;Neil"} {
				if !strings.Contains(string(got), s) {
					t.Errorf("the file lacks %s", s)
				}
			}
			if xmllint == "" {
				return
			}
			file := filepath.Join(t.TempDir(), "batch.xml")
			if err := os.WriteFile(file, got, 0o600); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(xmllint, "--noout", "--nonet", "--schema", filepath.Join("testdata", "pain.001.001."+v+".xsd"), file).CombinedOutput()
			if err != nil {
				t.Fatalf("the file does not validate against its schema: %v\n%s", err, out)
			}
		})
	}
	// What is refused before writing.
	for name, edit := range map[string]func(*SEPABatch){
		"a message id past 35":      func(b *SEPABatch) { b.MessageID = strings.Repeat("A", 36) },
		"a name out of the set":     func(b *SEPABatch) { b.Payments[0].Creditor.Name = "Zoë & Co" },
		"a bad creditor IBAN":       func(b *SEPABatch) { b.Payments[1].Creditor.IBAN = "NL91ABNA0417164301" },
		"a zero amount":             func(b *SEPABatch) { b.Payments[2].AmountMinor = 0 },
		"an end-to-end id with //":  func(b *SEPABatch) { b.Payments[0].EndToEndID = "A//B" },
		"no payments":               func(b *SEPABatch) { b.Payments = nil },
		"another version":           func(b *SEPABatch) { b.Version = "08" },
		"a remittance past 140":     func(b *SEPABatch) { b.Payments[0].Remittance = strings.Repeat("x", 141) },
		"a debtor BIC out of shape": func(b *SEPABatch) { b.Debtor.BIC = "COBADEF" },
	} {
		b := sepaSample(Pain09)
		edit(&b)
		if _, err := SEPAXML(b); err == nil {
			t.Errorf("%s: written", name)
		}
	}
}
