package codefiles

import (
	"strings"
	"testing"
)

func TestCleanPath(t *testing.T) {
	good := map[string]string{
		"util.sh":                "util.sh",
		"  data/x.txt\t":         "data/x.txt",
		"dir//sub/./x.txt":       "dir/sub/x.txt",
		"a/b/":                   "a/b",
		".env":                   ".env",
		".config/app.json":       ".config/app.json",
		"a..b/c...":              "a..b/c...",
		"ünïcode/名前.txt":         "ünïcode/名前.txt",
		"1/2/3/4/5/6/7/8":        "1/2/3/4/5/6/7/8",
		strings.Repeat("a", 255): strings.Repeat("a", 255),
	}
	for in, want := range good {
		got, err := CleanPath(in)
		if err != nil || got != want {
			t.Errorf("CleanPath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	bad := map[string]string{
		"":                       "must not be empty",
		"   ":                    "must not be empty",
		"/etc/passwd":            "relative",
		"../x":                   ".. segment",
		"a/../../b":              ".. segment",
		"a/../b":                 ".. segment",
		"..":                     ".. segment",
		`a\b`:                    `not \`,
		`..\x`:                   `not \`,
		"a\tb":                   "control",
		"a\nb":                   "control",
		"a\x1bb":                 "control",
		"a\u202eb":               "control",
		"a\x00b":                 "NUL",
		"a\xffb":                 "UTF-8",
		".":                      "name a file",
		"./":                     "name a file",
		"a/..":                   ".. segment",
		strings.Repeat("a", 256): "too long",
		strings.Repeat("é", 128): "too long",
		"1/2/3/4/5/6/7/8/9":      "too deep",
	}
	for in, want := range bad {
		got, err := CleanPath(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CleanPath(%q) = %q, %v; want an error naming %q", in, got, err, want)
		}
	}
}

func FuzzCleanPath(f *testing.F) {
	for _, s := range []string{"a/b", "../x", "a/./b", "/x", `a\b`, ".env"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		p, err := CleanPath(raw)
		if err != nil {
			return
		}
		if p == "" || strings.HasPrefix(p, "/") || len(p) > MaxPathBytes || strings.Count(p, "/") >= MaxSegments {
			t.Fatalf("CleanPath(%q) = %q", raw, p)
		}
		for _, seg := range strings.Split(p, "/") {
			if seg == "" || seg == "." || seg == ".." {
				t.Fatalf("CleanPath(%q) = %q has segment %q", raw, p, seg)
			}
		}
		if again, err := CleanPath(p); err != nil || again != p {
			t.Fatalf("CleanPath is not idempotent on %q: %q, %v", p, again, err)
		}
	})
}
