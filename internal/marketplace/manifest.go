package marketplace

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"

	"slipway/internal/platform/apperr"
)

// VersionManifest is a version's contents: the objects an install makes, every
// file with its digest, and the capabilities the version declares. The
// version's digest is the manifest's (Digest): a file changed anywhere
// changes it.
type VersionManifest struct {
	Kind         string       `json:"kind"`
	Objects      []Object     `json:"objects"`
	Files        []FileEntry  `json:"files"`
	Capabilities Capabilities `json:"capabilities"`
	Needs        []Need       `json:"needs,omitempty"`
}

// Need is something a bundle's workflows read that the installing
// workspace binds to its own: a resource of a kind, or an app. The
// workflows name it as "need:<key>" where they named the publisher's.
type Need struct {
	Key  string `json:"key" doc:"Names it in the version (the installer binds it by this key)"`
	Type string `json:"type" enum:"resource,app"`
	Kind string `json:"kind" doc:"resource: the kind a bound resource must have (postgresql, smtp, …); app: app"`
	Name string `json:"name" doc:"What the publisher's was called (a hint)"`
}

// Object is one thing an install makes in the workspace, defined by the
// file at Path.
type Object struct {
	Type string `json:"type" enum:"script,node_type,workflow,code_file,app" doc:"What it is"`
	Key  string `json:"key" doc:"Names it within the item, across its versions"`
	Path string `json:"path" doc:"The file that defines it"`
}

// FileEntry is a file of a version: its path and the SHA-256 of its bytes.
type FileEntry struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// Capabilities are what a version may reach and needs: the hosts it calls
// out to, the resource kinds and secrets it reads, the node kinds it adds,
// the runner labels it needs. An update whose capabilities grew waits for
// a person, even when auto-update is armed.
type Capabilities struct {
	OutboundHosts []string `json:"outbound_hosts" required:"false" maxItems:"50" doc:"Host names it calls (example.com, *.example.com)"`
	ResourceKinds []string `json:"resource_kinds" required:"false" maxItems:"20" doc:"Kinds of resource it reads"`
	Secrets       []string `json:"secrets" required:"false" maxItems:"20" doc:"Env var or secret names it reads"`
	NodeKinds     []string `json:"node_kinds" required:"false" maxItems:"20" doc:"Node kinds it adds"`
	RunnerLabels  []string `json:"runner_labels" required:"false" maxItems:"20" doc:"Runner labels it needs"`
}

var (
	hostPattern  = regexp.MustCompile(`^(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	tokenPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$`)
)

// clean checks and normalises declared capabilities: lower-case host
// names (or IP addresses), names of letters, digits and _.:-; sorted,
// without repeats.
func (c Capabilities) clean() (Capabilities, error) {
	norm := func(field string, in []string, host bool) ([]string, error) {
		out := []string{}
		for _, v := range in {
			v = strings.TrimSpace(v)
			if host {
				v = strings.ToLower(v)
				if net.ParseIP(v) == nil && !hostPattern.MatchString(v) {
					return nil, apperr.BadRequest("capabilities.%s: %q is not a host name", field, clip(v, 100))
				}
			} else if !tokenPattern.MatchString(v) {
				return nil, apperr.BadRequest("capabilities.%s: %q: letters, digits and _.:- only", field, clip(v, 100))
			}
			if !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
		slices.Sort(out)
		return out, nil
	}
	var out Capabilities
	var err error
	if out.OutboundHosts, err = norm("outbound_hosts", c.OutboundHosts, true); err != nil {
		return out, err
	}
	if out.ResourceKinds, err = norm("resource_kinds", c.ResourceKinds, false); err != nil {
		return out, err
	}
	if out.Secrets, err = norm("secrets", c.Secrets, false); err != nil {
		return out, err
	}
	if out.NodeKinds, err = norm("node_kinds", c.NodeKinds, false); err != nil {
		return out, err
	}
	if out.RunnerLabels, err = norm("runner_labels", c.RunnerLabels, false); err != nil {
		return out, err
	}
	return out, nil
}

// CapabilityDiff is how a version's capabilities differ from another's.
type CapabilityDiff struct {
	Added   []string `json:"added" doc:"What the new version may do that the installed one may not (\"outbound_hosts: api.example.com\")"`
	Removed []string `json:"removed"`
	Grew    bool     `json:"grew" doc:"Something was added: an update waits for a person"`
}

// diffCapabilities compares two capability sets.
func diffCapabilities(from, to Capabilities) CapabilityDiff {
	d := CapabilityDiff{Added: []string{}, Removed: []string{}}
	pairs := []struct {
		name     string
		old, new []string
	}{
		{"outbound_hosts", from.OutboundHosts, to.OutboundHosts}, {"resource_kinds", from.ResourceKinds, to.ResourceKinds},
		{"secrets", from.Secrets, to.Secrets}, {"node_kinds", from.NodeKinds, to.NodeKinds}, {"runner_labels", from.RunnerLabels, to.RunnerLabels},
	}
	for _, p := range pairs {
		for _, v := range p.new {
			if !slices.Contains(p.old, v) {
				d.Added = append(d.Added, p.name+": "+v)
			}
		}
		for _, v := range p.old {
			if !slices.Contains(p.new, v) {
				d.Removed = append(d.Removed, p.name+": "+v)
			}
		}
	}
	d.Grew = len(d.Added) > 0
	return d
}

// Digest is a manifest's digest: "sha256:" and the hex SHA-256 of its
// canonical JSON (objects by key, files by path, capabilities sorted).
func (m VersionManifest) Digest() string {
	c := m
	c.Objects = slices.Clone(m.Objects)
	c.Files = slices.Clone(m.Files)
	slices.SortFunc(c.Objects, func(a, b Object) int { return strings.Compare(a.Key, b.Key) })
	slices.SortFunc(c.Files, func(a, b FileEntry) int { return strings.Compare(a.Path, b.Path) })
	b, _ := json.Marshal(c) // plain structs: never fails
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func sha(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// verify checks files against the manifest: each listed file there with
// its digest and size, nothing else.
func (m VersionManifest) verify(files map[string][]byte) error {
	if len(files) != len(m.Files) {
		return fmt.Errorf("the version has %d files, its manifest lists %d", len(files), len(m.Files))
	}
	for _, f := range m.Files {
		b, ok := files[f.Path]
		switch {
		case !ok:
			return fmt.Errorf("file %s is missing", f.Path)
		case int64(len(b)) != f.Size || sha(b) != f.SHA256:
			return fmt.Errorf("file %s does not match its digest", f.Path)
		}
	}
	return nil
}

// parseVersion checks a version: semver, without a leading v.
func parseVersion(v string) (*semver.Version, error) {
	sv, err := semver.StrictNewVersion(v)
	if err != nil {
		return nil, apperr.BadRequest("version %q is not a semver version (MAJOR.MINOR.PATCH, as 1.2.0)", clip(v, 50))
	}
	return sv, nil
}

// defaultRange is an install's range when none is given: compatible
// versions of the one installed (^1.2.0: below 2.0.0; ^0.3.1: below 0.4.0).
func defaultRange(v string) string { return "^" + v }

// parseRange checks a semver range.
func parseRange(r string) (*semver.Constraints, error) {
	c, err := semver.NewConstraint(r)
	if err != nil || len(r) > 100 {
		return nil, apperr.BadRequest("range %q is not a semver range (as ^1.2.0 or >=1.0.0, <2.0.0)", clip(r, 100))
	}
	return c, nil
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
