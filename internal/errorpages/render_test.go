package errorpages_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"slipway/internal/errorpages"
)

// TestRenderEscapes: markup in every field the renderer shows comes out
// as text; the document loads nothing and runs nothing of its own.
func TestRenderEscapes(t *testing.T) {
	attack := `<script>alert("x")</script><img src=x onerror=alert(1)>'&"</title><a href="javascript:alert(1)">`
	for _, field := range []string{"title", "message", "contact"} {
		t.Run(field, func(t *testing.T) {
			page, _ := json.Marshal(map[string]string{field: attack + field})
			for _, status := range []int{404, 502, 503} {
				out := string(errorpages.Render(page, status))
				for _, raw := range []string{"<script", "<img", "<a ", "</title><a", `"x")`, "'&\""} {
					if strings.Contains(out, raw) {
						t.Fatalf("%d: %q is in the document unescaped:\n%s", status, raw, out)
					}
				}
				if !strings.Contains(out, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;") || !strings.Contains(out, field) {
					t.Fatalf("%d: the escaped text is missing:\n%s", status, out)
				}
				selfContained(t, out)
			}
		})
	}
}

// selfContained: no script, no external resource, no link (escaped
// markup is text: "&lt;img src=x" is not an attribute).
func selfContained(t *testing.T, out string) {
	t.Helper()
	lower := strings.ToLower(out)
	for _, s := range []string{"<script", "<link", "<img", "<iframe", "<a ", `src="`, `href="`, "url(", "@import", "http://", "https://"} {
		if strings.Contains(lower, s) {
			t.Fatalf("the document holds %q:\n%s", s, out)
		}
	}
	if !strings.HasPrefix(out, "<!doctype html>") || !strings.Contains(out, "<style>") {
		t.Fatalf("not a self-contained HTML document:\n%s", out)
	}
}

// TestRenderTexts: the built-in texts by status, the page's texts in their
// place, the contact only when set, keys of the wrong type ignored.
func TestRenderTexts(t *testing.T) {
	for _, tc := range []struct {
		name   string
		page   string
		status int
		want   []string
		absent []string
	}{
		{"default 404", `{}`, 404, []string{"404 Not Found", "<title>This app is not deployed</title>", "<h1>This app is not deployed</h1>"}, []string{"Contact"}},
		{"default 502", `{}`, 502, []string{"502 Bad Gateway", "This app is failing"}, []string{"Contact"}},
		{"default 503", `{}`, 503, []string{"503 Service Unavailable", "This app is failing"}, nil},
		{"nil page", ``, 503, []string{"This app is failing"}, nil},
		{"custom", `{"title":"Back soon","message":"Line one\nline two","contact":"ops@example.test","extra":1}`, 503,
			[]string{"<title>Back soon</title>", "<h1>Back soon</h1>", "Line one\nline two", "Contact: ops@example.test"}, []string{"This app is failing", "extra"}},
		{"empty texts take the defaults", `{"title":"","message":""}`, 404, []string{"This app is not deployed"}, []string{"Contact"}},
		{"wrong types ignored", `{"title":5,"contact":["x"]}`, 502, []string{"This app is failing"}, []string{"Contact"}},
		{"not an object", `[1]`, 404, []string{"This app is not deployed"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := string(errorpages.Render(json.RawMessage(tc.page), tc.status))
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("lacks %q:\n%s", w, out)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(out, a) {
					t.Errorf("holds %q:\n%s", a, out)
				}
			}
			selfContained(t, out)
		})
	}
	long := `{"title":"` + strings.Repeat("t", 5000) + `"}`
	if out := string(errorpages.Render(json.RawMessage(long), 404)); strings.Contains(out, strings.Repeat("t", errorpages.MaxTitleChars+1)) {
		t.Fatal("a title over its bound is shown whole")
	}
}

// TestWrite: the status, the document and headers that keep it inert.
func TestWrite(t *testing.T) {
	rec := httptest.NewRecorder()
	errorpages.Write(rec, json.RawMessage(`{"title":"Gone fishing"}`), http.StatusServiceUnavailable)
	if rec.Code != 503 || !strings.Contains(rec.Body.String(), "Gone fishing") {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	h := rec.Header()
	if h.Get("Content-Type") != "text/html; charset=utf-8" || !strings.Contains(h.Get("Content-Security-Policy"), "default-src 'none'") ||
		h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Cache-Control") != "no-store" {
		t.Fatalf("headers %v", h)
	}
}

// TestCheck: what the apps package relies on: the page compacted, and the
// same refusals as the API's.
func TestCheck(t *testing.T) {
	got, err := errorpages.Check(json.RawMessage("{\n  \"title\": \"a b\",\n  \"n\": 1.50\n}"))
	if err != nil || string(got) != `{"title":"a b","n":1.50}` {
		t.Fatalf("%s %v", got, err)
	}
	for _, bad := range []string{``, `{`, `[]`, `"x"`, `{"title":true}`, "{\"title\":\"\xff\"}", `{"message":"\u0085"}`} {
		if _, err := errorpages.Check(json.RawMessage(bad)); err == nil {
			t.Errorf("%q passed", bad)
		}
	}
}
