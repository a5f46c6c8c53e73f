package httpx

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
)

// encoded is encoding/json's form of v with HTML escaping off, without the
// newline.
func encoded(t *testing.T, v any) ([]byte, error) {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), err
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "a", `"\`, "<>&", "\x00\x1f\x7f\b\f\n\r\t", "é漢🚀", "\u2028\u2029", "\xff", "\xe2\x80", "\xed\xa0\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := encoded(t, s)
		if got := AppendJSONString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("%q: encoding/json %s, AppendJSONString %s", s, want, got)
		}
	})
}

func FuzzAppendJSONFloat(f *testing.F) {
	for _, v := range []float64{0, math.Copysign(0, -1), 1, -1.5, 0.1, 1e-6, 9.99e-7, 1e-7, 1e20, 1e21, 123456789.125, math.MaxFloat64,
		math.SmallestNonzeroFloat64, math.NaN(), math.Inf(-1)} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v float64) {
		want, werr := encoded(t, v)
		got, gerr := AppendJSONFloat(nil, v)
		if (werr != nil) != (gerr != nil) || werr == nil && !bytes.Equal(got, want) {
			t.Fatalf("%v: encoding/json %s (%v), AppendJSONFloat %s (%v)", v, want, werr, got, gerr)
		}
	})
}
