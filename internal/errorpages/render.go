package errorpages

import (
	"bytes"
	"encoding/json"
	"html/template"
	"net/http"
	"strconv"
	"unicode/utf8"
)

// Headers a rendered page is served with: HTML, nothing loaded from
// anywhere (the page has inline CSS only), never cached (the app may be
// back a moment later), never framed, never indexed.
const (
	ContentType           = "text/html; charset=utf-8"
	ContentSecurityPolicy = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)

// Write answers w with page rendered for status and the headers above.
func Write(w http.ResponseWriter, page json.RawMessage, status int) {
	body := Render(page, status)
	h := w.Header()
	h.Set("Content-Type", ContentType)
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Robots-Tag", "noindex")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// Defaults are the built-in texts for a status: 404 means the app is not
// deployed, a 5xx that it is failing.
func Defaults(status int) Fields {
	switch {
	case status == http.StatusNotFound:
		return Fields{Title: "This app is not deployed",
			Message: "There is nothing to show here yet. If this is your app, deploy it from the console."}
	case status >= 500:
		return Fields{Title: "This app is failing",
			Message: "The app could not answer this request. Try again in a moment."}
	default:
		return Fields{Title: "This app is unavailable", Message: "The app cannot show this page right now."}
	}
}

// Read takes the known keys out of a page; a key that is missing, empty or
// not a string (a page Check did not pass) gives the built-in text, and a
// text longer than its bound is cut, so Render can take any page.
func Read(page json.RawMessage, status int) Fields {
	f := Defaults(status)
	var obj map[string]json.RawMessage
	if json.Unmarshal(page, &obj) != nil {
		return f
	}
	text := func(key string, max int) string {
		var s string
		if json.Unmarshal(obj[key], &s) != nil || s == "" {
			return ""
		}
		if utf8.RuneCountInString(s) > max {
			s = string([]rune(s)[:max])
		}
		return s
	}
	if s := text("title", MaxTitleChars); s != "" {
		f.Title = s
	}
	if s := text("message", MaxMessageChars); s != "" {
		f.Message = s
	}
	f.Contact = text("contact", MaxContactChars)
	return f
}

var page = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>{{.Title}}</title>
<style>
body{margin:0;min-height:100vh;display:flex;align-items:center;justify-content:center;background:#f6f7f9;color:#1f2328;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
main{max-width:36rem;margin:2rem;padding:2rem 2.25rem;background:#fff;border:1px solid #d9dde3;border-radius:12px}
.status{margin:0 0 .5rem;color:#6b7280;font:600 .8rem/1 ui-monospace,monospace;letter-spacing:.05em}
h1{margin:0 0 .75rem;font-size:1.5rem;line-height:1.25}
p{margin:0;white-space:pre-line;overflow-wrap:anywhere}
.contact{margin-top:1.25rem;color:#4b5563;font-size:.9rem}
@media (prefers-color-scheme:dark){body{background:#111318;color:#e6e7ea}main{background:#1a1d23;border-color:#2d3139}.status,.contact{color:#9aa0aa}}
</style>
</head>
<body>
<main>
<p class="status">{{.Status}}</p>
<h1>{{.Title}}</h1>
<p>{{.Message}}</p>
{{- if .Contact}}
<p class="contact">Contact: {{.Contact}}</p>
{{- end}}
</main>
</body>
</html>
`))

// Render is page as a small, self-contained HTML document for status:
// every text escaped, no script, no link, nothing loaded.
func Render(p json.RawMessage, status int) []byte {
	f := Read(p, status)
	label := strconv.Itoa(status)
	if t := http.StatusText(status); t != "" {
		label += " " + t
	}
	var b bytes.Buffer
	if err := page.Execute(&b, struct {
		Fields
		Status string
	}{f, label}); err != nil {
		// Only a write to b could fail, and it does not.
		return []byte("<!doctype html><title>Error</title><p>This app is unavailable.</p>")
	}
	return b.Bytes()
}
