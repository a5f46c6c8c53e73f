package marketplace

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

var slugPattern = regexp.MustCompile(`^[a-z][a-z0-9-]{0,62}$`)

// maxDiffCells bounds a line diff's work (lines of one side × the other's):
// past it a changed file is shown without its patch.
const maxDiffCells = 4_000_000

// diffFiles compares two versions' files, by path.
func diffFiles(old, new map[string][]byte) []FileDiff {
	var paths []string
	for p := range old {
		paths = append(paths, p)
	}
	for p := range new {
		if _, ok := old[p]; !ok {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	out := []FileDiff{}
	for _, p := range paths {
		a, inOld := old[p]
		b, inNew := new[p]
		switch {
		case !inOld:
			out = append(out, FileDiff{Path: p, Status: "added", Patch: unified(p, nil, lines(string(b)))})
		case !inNew:
			out = append(out, FileDiff{Path: p, Status: "removed", Patch: unified(p, lines(string(a)), nil)})
		case string(a) != string(b):
			out = append(out, FileDiff{Path: p, Status: "changed", Patch: unified(p, lines(string(a)), lines(string(b)))})
		}
	}
	return out
}

func lines(s string) []string {
	if s == "" {
		return nil
	}
	out := strings.SplitAfter(s, "\n")
	if out[len(out)-1] == "" { // the text ends with a newline
		out = out[:len(out)-1]
	}
	return out
}

// unified is a whole-file unified diff of two line lists (one hunk, every
// line), from their longest common subsequence; "" when too large.
func unified(path string, a, b []string) string {
	if len(a)*len(b) > maxDiffCells {
		return ""
	}
	// lcs[i][j]: the common subsequence's length of a[i:] and b[j:].
	lcs := make([][]int32, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int32, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "--- a/%s\n+++ b/%s\n@@ -1,%d +1,%d @@\n", path, path, len(a), len(b))
	line := func(prefix, l string) {
		sb.WriteString(prefix + strings.TrimSuffix(l, "\n") + "\n")
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			line(" ", a[i])
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			line("-", a[i]) // what goes before what comes
			i++
		default:
			line("+", b[j])
			j++
		}
	}
	return sb.String()
}
