package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"slipway/internal/approvals"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/text"
	"slipway/internal/projects"
	"slipway/internal/proposals"
	"slipway/internal/tasks"
	"slipway/internal/tenancy"
	"slipway/internal/workflows"
)

// MaxChoices caps a provider's answer.
const MaxChoices = 20

// MaxText bounds a free-text argument.
const MaxText = 100000

// Service resolves and invokes commands.
type Service struct {
	tasks     *tasks.Service
	projects  *projects.Service
	workflows *workflows.Service
	approvals *approvals.Service
	proposals *proposals.Service
	tenancy   *tenancy.Service
	commands  []*command
	providers map[string]provider
}

// provider lists the choices of a dynamic option for the caller (u is nil
// only where no user is known; what waits on a person then lists nothing).
type provider func(ctx context.Context, s *Service, ws *actor.Workspace, u *actor.User) ([]Choice, error)

// NewService returns the command service.
func NewService(t *tasks.Service, p *projects.Service, w *workflows.Service, a *approvals.Service, pr *proposals.Service,
	ten *tenancy.Service) *Service {
	return &Service{tasks: t, projects: p, workflows: w, approvals: a, proposals: pr, tenancy: ten, commands: registry(), providers: map[string]provider{
		"recent_tasks": func(ctx context.Context, s *Service, ws *actor.Workspace, _ *actor.User) ([]Choice, error) {
			names, err := s.tasks.Names(ctx, ws, 100)
			out := make([]Choice, 0, len(names))
			for _, n := range names {
				out = append(out, Choice{Value: n.ID, Label: n.Title, Hint: n.Status})
			}
			return out, err
		},
		"models": func(ctx context.Context, s *Service, ws *actor.Workspace, _ *actor.User) ([]Choice, error) {
			ps, err := s.projects.Profiles(ctx, ws)
			var out []Choice
			for _, p := range ps {
				if p.Model != "" && !slices.ContainsFunc(out, func(c Choice) bool { return c.Value == p.Model }) {
					out = append(out, Choice{Value: p.Model, Label: p.Model, Hint: "profile " + p.Name})
				}
			}
			return out, err
		},
		"efforts": func(context.Context, *Service, *actor.Workspace, *actor.User) ([]Choice, error) { return efforts, nil },
		"projects": func(ctx context.Context, s *Service, ws *actor.Workspace, _ *actor.User) ([]Choice, error) {
			ps, err := s.projects.List(ctx, ws)
			var out []Choice
			for _, p := range ps {
				if p.ArchivedAt == nil {
					out = append(out, Choice{Value: p.ID, Label: p.Name})
				}
			}
			return out, err
		},
		"agents": func(ctx context.Context, s *Service, ws *actor.Workspace, _ *actor.User) ([]Choice, error) {
			ps, err := s.projects.Profiles(ctx, ws)
			out := make([]Choice, 0, len(ps))
			for _, p := range ps {
				out = append(out, Choice{Value: p.Name, Label: p.Name, Hint: p.AgentType})
			}
			return out, err
		},
		"workflows": func(ctx context.Context, s *Service, ws *actor.Workspace, _ *actor.User) ([]Choice, error) {
			wfs, err := s.workflows.List(ctx, ws, "")
			out := make([]Choice, 0, len(wfs))
			for _, w := range wfs {
				out = append(out, Choice{Value: w.ID, Label: w.Name})
			}
			return out, err
		},
		"pending_approvals": func(ctx context.Context, s *Service, ws *actor.Workspace, u *actor.User) ([]Choice, error) {
			ds, err := s.pendingDecisions(ctx, ws, u)
			out := make([]Choice, 0, len(ds))
			for _, d := range ds {
				out = append(out, d.choice())
			}
			return out, err
		},
	}}
}

// visible is the command a word (or alias) names for the caller's role;
// nil when there is none.
func (s *Service) visible(ws *actor.Workspace, word string) *command {
	word = strings.ToLower(strings.TrimSpace(word))
	for _, c := range s.commands {
		if c.adminOnly && !tenancy.WorkspaceAdmin(ws.Role) {
			continue
		}
		if c.Word == word || slices.Contains(c.Aliases, word) {
			return c
		}
	}
	return nil
}

// List is the descriptors the caller's workspace role may run.
func (s *Service) List(ws *actor.Workspace) []Descriptor {
	out := []Descriptor{}
	for _, c := range s.commands {
		if !c.adminOnly || tenancy.WorkspaceAdmin(ws.Role) {
			out = append(out, c.Descriptor)
		}
	}
	return out
}

// Options lists a provider's choices for u whose value or label contains q
// (case-insensitive), capped.
func (s *Service) Options(ctx context.Context, ws *actor.Workspace, u *actor.User, providerID, q string) ([]Choice, error) {
	p, ok := s.providers[providerID]
	if !ok {
		return nil, apperr.NotFound("option provider")
	}
	all, err := p(ctx, s, ws, u)
	if err != nil {
		return nil, err
	}
	return filter(all, q), nil
}

func filter(all []Choice, q string) []Choice {
	q = strings.ToLower(strings.TrimSpace(q))
	out := []Choice{}
	for _, c := range all {
		if q == "" || strings.Contains(strings.ToLower(c.Label), q) || strings.Contains(strings.ToLower(c.Value), q) {
			out = append(out, c)
			if len(out) == MaxChoices {
				break
			}
		}
	}
	return out
}

// Args are a request's arguments: strings, or numbers for int_range.
type Args map[string]any

// Resolve says whether a command's input is ready, which parameter it
// still needs or which value is invalid. It changes nothing.
func (s *Service) Resolve(ctx context.Context, ws *actor.Workspace, u *actor.User, word string, raw Args) (*Outcome, error) {
	c := s.visible(ws, word)
	if c == nil {
		return nil, apperr.NotFound("command")
	}
	_, out, err := s.resolve(ctx, ws, u, c, raw)
	return out, err
}

// Invoke resolves and, when the input is ready, runs the command: an
// under-specified or invalid input gets the same guidance as resolve and
// runs nothing.
func (s *Service) Invoke(ctx context.Context, ws *actor.Workspace, u *actor.User, word string, raw Args) (*Outcome, error) {
	c := s.visible(ws, word)
	if c == nil {
		return nil, apperr.NotFound("command")
	}
	in, out, err := s.resolve(ctx, ws, u, c, raw)
	if err != nil || out.Status != StatusReady {
		return out, err
	}
	p, err := c.run(ctx, s, ws, u, in.Args)
	if err != nil {
		return nil, err
	}
	return &Outcome{Status: StatusExecuted, Invocation: in, Plan: p}, nil
}

func (s *Service) resolve(ctx context.Context, ws *actor.Workspace, u *actor.User, c *command, raw Args) (*Invocation, *Outcome, error) {
	names := make([]string, len(c.Params))
	for i, p := range c.Params {
		names[i] = p.Name
	}
	var unknown []string
	for k := range raw {
		if !slices.Contains(names, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		hint := fmt.Sprintf("%s takes no parameter %q", c.Word, unknown[0])
		if len(names) > 0 {
			hint += "; its parameters are " + strings.Join(names, ", ")
		}
		return nil, &Outcome{Status: StatusInvalid, Param: unknown[0], Value: stringOf(raw[unknown[0]]), Hint: hint}, nil
	}
	in := &Invocation{Word: c.Word, Args: map[string]string{}}
	for _, p := range c.Params {
		v, given := raw[p.Name]
		str := strings.TrimSpace(stringOf(v))
		if !given || v == nil || str == "" {
			if !p.Required {
				continue
			}
			out, err := s.needParam(ctx, ws, u, p)
			return nil, out, err
		}
		val, hint, err := s.check(ctx, ws, u, p, v)
		if err != nil {
			return nil, nil, err
		}
		if hint != "" {
			return nil, &Outcome{Status: StatusInvalid, Param: p.Name, Value: text.Clip(str, 200), Hint: hint}, nil
		}
		in.Args[p.Name] = val
	}
	return in, &Outcome{Status: StatusReady, Input: in}, nil
}

func (s *Service) needParam(ctx context.Context, ws *actor.Workspace, u *actor.User, p Param) (*Outcome, error) {
	free := p.Kind == KindFreeText || p.Kind == KindIntRange
	choices := []Choice{}
	switch p.Options.Kind {
	case OptionsStatic:
		choices = p.Options.Values
	case OptionsDynamic:
		var err error
		if choices, err = s.Options(ctx, ws, u, p.Options.Provider, ""); err != nil {
			return nil, err
		}
	}
	return &Outcome{Status: StatusNeedParam, Param: p.Name, DescriptionI18n: p.DescriptionI18n, FreeText: &free, Options: &choices}, nil
}

func stringOf(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case nil:
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// check validates one given value: the normalised value, or a hint for
// the person why it is refused.
func (s *Service) check(ctx context.Context, ws *actor.Workspace, u *actor.User, p Param, v any) (string, string, error) {
	str := strings.TrimSpace(stringOf(v))
	if _, isString := v.(string); !isString && p.Kind != KindIntRange {
		return "", fmt.Sprintf("%s takes text, not %s", p.Name, stringOf(v)), nil
	}
	switch p.Kind {
	case KindFreeText:
		if len(str) > MaxText {
			return "", fmt.Sprintf("%s is too long: at most %d bytes", p.Name, MaxText), nil
		}
		if strings.ContainsFunc(str, func(r rune) bool { return r < 0x20 && r != '\n' && r != '\t' && r != '\r' || r == 0x7f }) {
			return "", p.Name + " must not contain control characters", nil
		}
		return str, "", nil
	case KindIntRange:
		n, err := strconv.Atoi(str)
		if err != nil || n < *p.Min || n > *p.Max {
			return "", fmt.Sprintf("%s must be a whole number from %d to %d", p.Name, *p.Min, *p.Max), nil
		}
		return strconv.Itoa(n), "", nil
	case KindEnum:
		for _, c := range p.Options.Values {
			if strings.EqualFold(c.Value, str) {
				return c.Value, "", nil
			}
		}
		vals := make([]string, len(p.Options.Values))
		for i, c := range p.Options.Values {
			vals[i] = c.Value
		}
		return "", fmt.Sprintf("%s must be one of %s", p.Name, strings.Join(vals, ", ")), nil
	case KindRef:
		return s.checkRef(ctx, ws, u, p, str)
	}
	return "", fmt.Sprintf("%s cannot be given here", p.Name), nil
}

// checkRef accepts a reference to something of the workspace: by id, or
// (names being what people type) by an exact, case-insensitive label when
// it names exactly one choice.
func (s *Service) checkRef(ctx context.Context, ws *actor.Workspace, u *actor.User, p Param, str string) (string, string, error) {
	notFound := fmt.Sprintf("no %s %q in this workspace; pick one from the %s options", p.RefKind, text.Clip(str, 80), p.Options.Provider)
	if p.RefKind == "task" || p.RefKind == "project" || p.RefKind == "workflow" {
		if ids.Valid(str) {
			var err error
			switch p.RefKind {
			case "task":
				_, err = s.tasks.Get(ctx, ws, str)
			case "project":
				_, err = s.projects.Get(ctx, ws, str)
			case "workflow":
				_, err = s.workflows.Get(ctx, ws, str)
			}
			if errors.Is(err, apperr.ErrNotFound) {
				return "", notFound, nil
			}
			return str, "", err
		}
	}
	if p.RefKind == "approval" && ids.Valid(str) {
		_, err := s.findDecision(ctx, ws, u, str)
		if errors.Is(err, apperr.ErrNotFound) {
			return "", notFound, nil
		}
		return str, "", err
	}
	all, err := s.providers[p.Options.Provider](ctx, s, ws, u)
	if err != nil {
		return "", "", err
	}
	var match []Choice
	for _, c := range all {
		if c.Value == str {
			return c.Value, "", nil
		}
		if strings.EqualFold(c.Label, str) {
			match = append(match, c)
		}
	}
	switch len(match) {
	case 1:
		return match[0].Value, "", nil
	case 0:
		return "", notFound, nil
	}
	return "", fmt.Sprintf("%q names %d %ss; give the id", text.Clip(str, 80), len(match), p.RefKind), nil
}
