package notifications

import (
	"regexp"
	"strings"
)

// A mention names a person in text as @ and their address
// (@olivia@example.com) or its part before the @ (@olivia) when no one
// else of the people shares it; case does not matter, and an @ inside a
// word (an address written out) is no mention.
var mentionPattern = regexp.MustCompile(`(?:^|[^\w.@+-])@([A-Za-z0-9._%+-]+(?:@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+)?)`)

// MaxMentions bounds the people one text tells.
const MaxMentions = 20

// Person is someone a mention may name.
type Person struct {
	ID    string
	Email string
}

// Mentioned lists the ids of the people the text names, in the order
// first named, at most MaxMentions.
func Mentioned(text string, people []Person) []string {
	byEmail, byLocal := map[string]string{}, map[string][]string{}
	for _, p := range people {
		e := strings.ToLower(p.Email)
		byEmail[e] = p.ID
		if local, _, ok := strings.Cut(e, "@"); ok {
			byLocal[local] = append(byLocal[local], p.ID)
		}
	}
	var out []string
	seen := map[string]bool{}
	for _, m := range mentionPattern.FindAllStringSubmatch(text, -1) {
		handle := strings.ToLower(strings.TrimRight(m[1], "."))
		id, ok := byEmail[handle]
		if !ok && len(byLocal[handle]) == 1 {
			id, ok = byLocal[handle][0], true
		}
		if ok && !seen[id] {
			seen[id] = true
			out = append(out, id)
			if len(out) == MaxMentions {
				break
			}
		}
	}
	return out
}
