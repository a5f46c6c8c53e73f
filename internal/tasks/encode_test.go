package tasks_test

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"slipway/internal/platform/httpx"
	"slipway/internal/tasks"
)

// encodingJSON is what Huma's default JSON format writes for v.
func encodingJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	return buf.Bytes(), err
}

// appended is what httpx.JSONFormat writes for v.
func appended(v any) ([]byte, error) {
	var buf bytes.Buffer
	err := httpx.JSONFormat.Marshal(&buf, v)
	return buf.Bytes(), err
}

var (
	sampleStrings = []string{"", "plain", `quote " and \ backslash`, "<b>&amp;</b>", "line\nbreak\ttab\r\b\f", "\x00\x01\x1f\x7f",
		"é ü 漢字 🚀", "\u2028\u2029", "bad \xff\xfe utf-8", "\xe2\x80", "018f2c3e-7a1b-7c2d-9e3f-0a1b2c3d4e5f"}
	sampleFloats = []float64{0, math.Copysign(0, -1), 1, 0.1, 0.000001, 0.0000001, 1.5e-9, 123.456, 1e20, 1e21, 1.2345e25, -3.25, math.MaxFloat64,
		math.SmallestNonzeroFloat64}
	sampleTimes = []time.Time{time.Date(2026, 11, 25, 19, 51, 1, 123456789, time.UTC), time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		time.Date(1999, 12, 31, 23, 59, 59, 100000000, time.UTC), time.Date(2026, 6, 1, 12, 0, 0, 1, time.FixedZone("", 2*3600+30*60)),
		time.Time{}}
)

// fill sets every field v reaches to a value drawn from the samples: nil or
// set pointers, empty or filled slices, so that any field a type gains is
// exercised without this test naming it.
func fill(r *rand.Rand, v reflect.Value) {
	switch {
	case v.Type() == reflect.TypeFor[time.Time]():
		v.Set(reflect.ValueOf(sampleTimes[r.IntN(len(sampleTimes))]))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(sampleStrings[r.IntN(len(sampleStrings))])
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 0)
	case reflect.Int, reflect.Int32, reflect.Int64:
		v.SetInt([]int64{0, 1, -7, 10080, math.MaxInt32}[r.IntN(5)])
	case reflect.Float64:
		v.SetFloat(sampleFloats[r.IntN(len(sampleFloats))])
	case reflect.Pointer:
		if r.IntN(3) == 0 {
			v.SetZero()
			return
		}
		p := reflect.New(v.Type().Elem())
		fill(r, p.Elem())
		v.Set(p)
	case reflect.Slice:
		switch r.IntN(3) {
		case 0:
			v.SetZero()
		case 1:
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
		default:
			s := reflect.MakeSlice(v.Type(), 1+r.IntN(3), 3)
			for i := range s.Len() {
				fill(r, s.Index(i))
			}
			v.Set(s)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(r, v.Field(i))
			}
		}
	default:
		panic("fill: no samples for " + v.Type().String())
	}
}

// TestTaskJSONMatchesEncodingJSON holds the tasks' own JSON to encoding/json,
// byte for byte, on random values with every field set or unset.
func TestTaskJSONMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 1))
	for i := range 3000 {
		var l tasks.TaskList
		fill(r, reflect.ValueOf(&l).Elem())
		for _, v := range []any{l, &l} {
			want, werr := encodingJSON(v)
			got, gerr := appended(v)
			if (werr != nil) != (gerr != nil) {
				t.Fatalf("case %d: encoding/json says %v, AppendJSON says %v", i, werr, gerr)
			}
			if werr == nil && !bytes.Equal(got, want) {
				t.Fatalf("case %d (%T):\nencoding/json %s\nAppendJSON    %s", i, v, want, got)
			}
		}
		for j := range l.Tasks {
			want, werr := encodingJSON(&l.Tasks[j])
			got, gerr := appended(&l.Tasks[j])
			if (werr != nil) != (gerr != nil) || werr == nil && !bytes.Equal(got, want) {
				t.Fatalf("case %d, task %d:\nencoding/json %s (%v)\nAppendJSON    %s (%v)", i, j, want, werr, got, gerr)
			}
		}
	}
	var nilTask *tasks.Task
	for _, v := range []any{tasks.TaskList{}, tasks.TaskList{Tasks: []tasks.Task{}}, nilTask} {
		want, _ := encodingJSON(v)
		got, err := appended(v)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%#v: encoding/json %s, AppendJSON %s (%v)", v, want, got, err)
		}
	}
}

// TestTaskJSONErrors: what encoding/json cannot encode fails here too,
// before anything is written.
func TestTaskJSONErrors(t *testing.T) {
	late := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	for name, task := range map[string]tasks.Task{
		"NaN cost":             {CostUSD: math.NaN()},
		"infinite cost":        {CostUSD: math.Inf(1)},
		"year 10000":           {CreatedAt: late},
		"finished after 9999":  {FinishedAt: &late},
		"pr opened after 9999": {PR: &tasks.PullRequest{OpenedAt: &late}},
	} {
		l := tasks.TaskList{Tasks: []tasks.Task{task}, Total: 1}
		if _, err := encodingJSON(l); err == nil {
			t.Fatalf("%s: encoding/json encodes it", name)
		}
		var buf bytes.Buffer
		if err := httpx.JSONFormat.Marshal(&buf, l); err == nil || buf.Len() > 0 {
			t.Fatalf("%s: error %v, wrote %q", name, err, buf.Bytes())
		}
	}
}
