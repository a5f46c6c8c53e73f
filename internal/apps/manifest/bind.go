package manifest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Bind checks the positional arguments sent to the function against the
// ones it declares, and converts them for the statement or script: a
// string, an int64, a float64, a bool, or for json the value's JSON text
// (compacted) as a string. A missing or null optional argument binds nil.
// The result has one value per declared argument. The error is an *Error
// naming each bad argument, as in args[1] (customer): must be a string.
func (f *Function) Bind(args []json.RawMessage) ([]any, error) {
	if len(args) > len(f.Args) {
		return nil, newError([]string{fmt.Sprintf("args: %s takes %s, got %d", f.Name, countArgs(len(f.Args)), len(args))})
	}
	out := make([]any, len(f.Args))
	var problems []string
	for i, a := range f.Args {
		var raw json.RawMessage
		if i < len(args) {
			raw = args[i]
		}
		v, msg := bindArg(a, raw)
		if msg != "" {
			problems = append(problems, fmt.Sprintf("args[%d] (%s): %s", i, a.Name, msg))
		}
		out[i] = v
	}
	if len(problems) > 0 {
		return nil, newError(problems)
	}
	return out, nil
}

// bindArg converts one argument's JSON, or says what is wrong with it.
func bindArg(a Arg, raw json.RawMessage) (any, string) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		if a.Required {
			return nil, "is required"
		}
		return nil, ""
	}
	if !json.Valid(raw) {
		return nil, "is not valid JSON"
	}
	number := raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9'
	switch a.Type {
	case TypeString:
		var s string
		if raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
			return nil, "must be a string"
		}
		if strings.IndexByte(s, 0) >= 0 {
			return nil, "must not contain NUL characters"
		}
		return s, ""
	case TypeInteger:
		if !number {
			return nil, "must be an integer"
		}
		return parseInteger(string(raw))
	case TypeNumber:
		if !number {
			return nil, "must be a number"
		}
		n, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			return nil, "is out of range for a number"
		}
		return n, ""
	case TypeBoolean:
		switch string(raw) {
		case "true":
			return true, ""
		case "false":
			return false, ""
		}
		return nil, "must be true or false"
	case TypeJSON:
		var b bytes.Buffer
		if err := json.Compact(&b, raw); err != nil {
			return nil, "is not valid JSON"
		}
		return b.String(), ""
	}
	return nil, "has an unknown type " + strconv.Quote(a.Type)
}

// parseInteger reads a JSON number with no fraction (42, -7, 1e3, 42.0)
// that fits an int64, without ever expanding a huge exponent.
func parseInteger(lit string) (any, string) {
	if i, err := strconv.ParseInt(lit, 10, 64); err == nil {
		return i, ""
	}
	sign := ""
	if strings.HasPrefix(lit, "-") {
		sign, lit = "-", lit[1:]
	}
	mant, exp := lit, 0
	if i := strings.IndexAny(lit, "eE"); i >= 0 {
		mant = lit[:i]
		e, err := strconv.Atoi(strings.TrimPrefix(lit[i+1:], "+"))
		if err != nil || e > 1000 || e < -1000 {
			e = math.MaxInt32 // beyond any int64, either way
			if strings.HasPrefix(lit[i+1:], "-") {
				e = math.MinInt32
			}
		}
		exp = e
	}
	digits := mant
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		digits = mant[:i] + mant[i+1:]
		exp -= len(mant) - i - 1
	}
	digits = strings.TrimLeft(digits, "0")
	if digits == "" {
		return int64(0), ""
	}
	for exp < 0 && strings.HasSuffix(digits, "0") {
		digits = digits[:len(digits)-1]
		exp++
	}
	if exp < 0 {
		return nil, "must be an integer"
	}
	if len(digits)+exp > 19 {
		return nil, "is out of range for an integer"
	}
	i, err := strconv.ParseInt(sign+digits+strings.Repeat("0", exp), 10, 64)
	if err != nil {
		return nil, "is out of range for an integer"
	}
	return i, ""
}
