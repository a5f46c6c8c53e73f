package commerce

import "testing"

func TestIBAN(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"DE89 3704 0044 0532 0130 00", "DE89370400440532013000"},
		{"gb82 west 1234 5698 7654 32", "GB82WEST12345698765432"},
		{"FR1420041010050500013M02606", "FR1420041010050500013M02606"},
		{"NO9386011117947", "NO9386011117947"},
		{"BE68539007547034", "BE68539007547034"},
		{"CH9300762011623852957", "CH9300762011623852957"},
		{"MT84MALT011000012345MTLCAST001S", "MT84MALT011000012345MTLCAST001S"},
		{"DE89 3704 0044 0532 0130 01", ""}, // check digits do not match
		{"DE89370400440532013", ""},         // too short for DE
		{"DE8937040044053201300000", ""},    // too long for DE
		{"XX89370400440532013000", ""},      // no such IBAN country
		{"US12345678901234567890", ""},      // the US has no IBAN
		{"DE89-3704-0044-0532-0130-00", ""}, // not its characters
		{"", ""},
		{"DE\u00e93704004405320130000", ""},
	} {
		if got := NormalIBAN(c.in); got != c.want {
			t.Errorf("NormalIBAN(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestBIC(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"DEUTDEFF", "DEUTDEFF"},
		{"deutdeff500", "DEUTDEFF500"},
		{"NEDSZAJJXXX", "NEDSZAJJXXX"},
		{"BNPAFRPPXXX", "BNPAFRPPXXX"},
		{"DEUTDEF", ""},      // 7 characters
		{"DEUTDEFF50", ""},   // 10 characters
		{"DEUTQQFF", ""},     // QQ is not a country
		{"DEU1DEFF", ""},     // the institution is letters
		{"DEUTDEFF5000", ""}, // 12 characters
		{"", ""},
	} {
		if got := NormalBIC(c.in); got != c.want {
			t.Errorf("NormalBIC(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
