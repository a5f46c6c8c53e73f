// Package errorpages holds the error pages of hosted Apps: the page a
// visitor sees when an app is not deployed or is failing. A page is a JSON
// object set per app (kept by the apps package), per workspace and once for
// the instance; Resolve picks the first one set in that order, and the
// built-in page when none is, and Render turns it into a self-contained
// HTML document.
package errorpages

import "encoding/json"

// Bounds of a page (DESIGN §10): the whole object, compacted, and each text
// the renderer shows, in Unicode characters.
const (
	MaxPageBytes    = 16 << 10
	MaxTitleChars   = 200
	MaxMessageChars = 2000
	MaxContactChars = 200
	// MaxBodyBytes is the request body an operation reads: room for a page
	// sent pretty-printed; the page itself must compact to MaxPageBytes.
	MaxBodyBytes = 64 << 10
)

// Where a resolved page came from.
const (
	SourceApp       = "app"
	SourceWorkspace = "workspace"
	SourceInstance  = "instance"
	SourceDefault   = "default"
)

// Resolved is the page to show and where it came from. For SourceDefault
// the page is {} (Render fills in the built-in texts).
type Resolved struct {
	Page   json.RawMessage `json:"page"`
	Source string          `json:"source" enum:"app,workspace,instance,default"`
}

// Fields are the keys of a page the renderer knows; every other key is
// kept as it was sent and ignored.
type Fields struct {
	Title   string
	Message string
	Contact string
}

// known lists the keys the renderer reads, with their bounds.
var known = []struct {
	key string
	max int
}{
	{"title", MaxTitleChars},
	{"message", MaxMessageChars},
	{"contact", MaxContactChars},
}

// emptyPage is the page of "none set" (a fresh slice each time: callers
// may keep it).
func emptyPage() json.RawMessage { return json.RawMessage(`{}`) }
