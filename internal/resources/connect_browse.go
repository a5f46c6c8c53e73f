package resources

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"golang.org/x/sync/errgroup"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
)

const (
	// maxGuilds bounds the guilds listed (one page of Discord's).
	maxGuilds = 200
	// maxFolders bounds the folders listed.
	maxFolders = 500
	// maxFolderPath bounds the path of a folder to list.
	maxFolderPath = 1024
)

// openKind opens a resource for a browse endpoint of one kind: 400 for
// another kind or without a secret.
func (s *Service) openKind(ctx context.Context, ws *actor.Workspace, id, kind, what string) (*target, error) {
	c, err := s.Open(ctx, ws, id)
	if err != nil {
		return nil, err
	}
	t := s.target(c)
	if c.Resource.Kind != kind {
		return nil, t.bad("%s: only %s resources have them, this one is %s", what, kind, c.Resource.Kind)
	}
	return t, nil
}

// upstream is a browse call's failure to get a usable answer: a 400 that
// says why.
func (t *target) upstream(where string, err error) error {
	if e, ok := apperr.As(err); ok && e.Code == apperr.CodeBadRequest {
		return err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return t.bad("%s did not answer within %s", where, browseTimeout)
	}
	return t.bad("could not reach %s: %s", where, describe(err))
}

// DiscordChannels lists the guilds the bot is in with their text and
// announcement channels.
func (s *Service) DiscordChannels(ctx context.Context, ws *actor.Workspace, id string) ([]ResourceGuild, error) {
	t, err := s.openKind(ctx, ws, id, "discord", "guilds and channels")
	if err != nil {
		return nil, err
	}
	base, err := t.discordBase()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, browseTimeout)
	defer cancel()

	var guilds []discordGuild
	u := joinURL(base, "/users/@me/guilds?limit=200")
	if err := t.discordGet(ctx, u, &guilds, true); err != nil {
		return nil, err
	}
	guilds = slices.DeleteFunc(guilds, func(g discordGuild) bool { return !snowflakeID.MatchString(g.ID) })
	if len(guilds) > maxGuilds {
		guilds = guilds[:maxGuilds]
	}
	out := make([]ResourceGuild, len(guilds))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for i, gd := range guilds {
		out[i] = ResourceGuild{GuildID: gd.ID, GuildName: plain(gd.Name), Channels: []ResourceChannel{}}
		g.Go(func() error {
			var chans []discordChannel
			if err := t.discordGet(gctx, joinURL(base, "/guilds/"+gd.ID+"/channels"), &chans, false); err != nil {
				return err
			}
			slices.SortStableFunc(chans, func(a, b discordChannel) int { return a.Position - b.Position })
			for _, c := range chans {
				if (c.Type == 0 || c.Type == 5) && snowflakeID.MatchString(c.ID) {
					out[i].Channels = append(out[i].Channels, ResourceChannel{ID: c.ID, Name: plain(c.Name)})
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	slices.SortStableFunc(out, func(a, b ResourceGuild) int {
		return strings.Compare(strings.ToLower(a.GuildName), strings.ToLower(b.GuildName))
	})
	return out, nil
}

var snowflakeID = regexp.MustCompile(`^[0-9]{1,20}$`)

type discordGuild struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

type discordChannel struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Type     int    `json:"type"` // 0 text, 5 announcement
	Position int    `json:"position"`
}

// discordGet reads one JSON answer of Discord's API into v. A refused token
// is a 400; so is a refused guild when strict (the guild list), while a
// guild whose channels the bot may not see leaves v empty.
func (t *target) discordGet(ctx context.Context, u string, v any, strict bool) error {
	resp, err := t.call(ctx, "GET", u, t.discordHeaders(), nil)
	if err != nil {
		return t.upstream(site(u), err)
	}
	switch st := resp.Status; {
	case st == 401 || (strict && st == 403):
		return t.bad("HTTP %d from %s: Discord refused the bot token", st, site(u))
	case st == 403 || st == 404:
		return nil
	case st == 429:
		return t.bad("HTTP 429 from %s: Discord is rate-limiting the bot; try again in a few seconds", site(u))
	case st != 200:
		return t.bad("HTTP %d from %s", st, site(u))
	}
	if err := json.Unmarshal(resp.Body, v); err != nil {
		return t.bad("the answer of %s is not the JSON Discord sends", site(u))
	}
	return nil
}

// plain drops control characters from a name the far end chose.
func plain(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, s)
}

// folderSegments checks a folder path (relative or absolute, "" or "/"
// for the root) and returns its segments.
func folderSegments(p string) ([]string, error) {
	if len(p) > maxFolderPath {
		return nil, apperr.BadRequest("path must be at most %d bytes", maxFolderPath)
	}
	if strings.ContainsFunc(p, unicode.IsControl) {
		return nil, apperr.BadRequest("path must not contain control characters")
	}
	if p == "" || p == "/" {
		return nil, nil
	}
	p = strings.TrimSuffix(strings.TrimPrefix(p, "/"), "/")
	segs := strings.Split(p, "/")
	for _, s := range segs {
		switch s {
		case "":
			return nil, apperr.BadRequest("path must be a clean path: no empty segments (//)")
		case ".", "..":
			return nil, apperr.BadRequest("path must be a clean path: no . or .. segments")
		}
	}
	return segs, nil
}

// davMultistatus is the part of a PROPFIND answer the listing reads.
type davMultistatus struct {
	Responses []struct {
		Href     string        `xml:"DAV: href"`
		Propstat []davPropstat `xml:"DAV: propstat"`
	} `xml:"DAV: response"`
}

type davPropstat struct {
	Status string `xml:"DAV: status"`
	Prop   struct {
		ResourceType struct {
			Collection *struct{} `xml:"DAV: collection"`
		} `xml:"DAV: resourcetype"`
	} `xml:"DAV: prop"`
}

// StorageFolders lists the sub-folders of a folder of a WebDAV share.
func (s *Service) StorageFolders(ctx context.Context, ws *actor.Workspace, id, folder string) ([]ResourceFolder, error) {
	t, err := s.openKind(ctx, ws, id, "seafile_webdav", "folders")
	if err != nil {
		return nil, err
	}
	segs, err := folderSegments(folder)
	if err != nil {
		return nil, err
	}
	c, headers, err := t.webdav()
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(c.URL)
	if err != nil {
		return nil, t.bad("config.url is not a URL")
	}
	u.RawPath, u.RawQuery, u.Fragment = "", "", ""
	u.Path = strings.TrimSuffix(u.Path, "/") + "/"
	if len(segs) > 0 {
		u.Path += strings.Join(segs, "/") + "/"
	}
	ctx, cancel := context.WithTimeout(ctx, browseTimeout)
	defer cancel()
	headers["Depth"] = "1"
	resp, err := t.call(ctx, "PROPFIND", u.String(), headers, []byte(davPropfind))
	if err != nil {
		return nil, t.upstream(site(c.URL), err)
	}
	switch st := resp.Status; st {
	case 207:
	case 401, 403:
		return nil, t.bad("HTTP %d from %s: the user name or password was refused", st, site(c.URL))
	case 404:
		return nil, t.bad("HTTP 404 from %s: no folder /%s on the share", site(c.URL), strings.Join(segs, "/"))
	default:
		return nil, t.bad("HTTP %d from %s, not 207 Multi-Status", st, site(c.URL))
	}
	var ms davMultistatus
	if err := xml.Unmarshal(resp.Body, &ms); err != nil {
		return nil, t.bad("the answer of %s is not a WebDAV multistatus", site(c.URL))
	}
	self := path.Clean(u.Path)
	out := []ResourceFolder{}
	seen := map[string]bool{}
	for _, r := range ms.Responses {
		hu, err := url.Parse(strings.TrimSpace(r.Href))
		if err != nil || hu.Path == "" {
			continue
		}
		p := path.Clean(hu.Path)
		name := path.Base(p)
		if p == self || path.Dir(p) != self || name == "." || name == ".." || name == "/" || seen[name] || !collection(r.Propstat) {
			continue
		}
		seen[name] = true
		out = append(out, ResourceFolder{Name: plain(name), Path: "/" + path.Join(append(slices.Clone(segs), name)...)})
	}
	slices.SortFunc(out, func(a, b ResourceFolder) int { return strings.Compare(a.Name, b.Name) })
	if len(out) > maxFolders {
		out = out[:maxFolders]
	}
	return out, nil
}

// collection: a propstat that succeeded says the resource is a collection.
func collection(ps []davPropstat) bool {
	for _, p := range ps {
		if p.Prop.ResourceType.Collection != nil && (p.Status == "" || strings.Contains(p.Status, " 200")) {
			return true
		}
	}
	return false
}
