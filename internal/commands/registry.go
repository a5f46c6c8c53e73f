package commands

import (
	"context"
	"fmt"
	"strings"

	"slipway/internal/platform/actor"
	"slipway/internal/tasks"
)

// command is a registered command: its descriptor, who may see it and what
// it does once its input is ready.
type command struct {
	Descriptor
	adminOnly bool
	run       func(ctx context.Context, s *Service, ws *actor.Workspace, u *actor.User, args map[string]string) (*Plan, error)
}

func ptr(n int) *int { return &n }

func i18n(word, part string) string { return "cmd." + word + "." + part }

// param builds a parameter with its i18n key.
func param(word, name string, required bool, kind string, opts Options) Param {
	return Param{Name: name, DescriptionI18n: i18n(word, "param."+name), Required: required, Kind: kind, Options: opts}
}

func ref(word, name string, required bool, refKind, provider string) Param {
	p := param(word, name, required, KindRef, Options{Kind: OptionsDynamic, Provider: provider})
	p.RefKind = refKind
	return p
}

func intRange(word, name string, required bool, lo, hi int) Param {
	p := param(word, name, required, KindIntRange, Options{Kind: OptionsNone})
	p.Min, p.Max = ptr(lo), ptr(hi)
	return p
}

var efforts = []Choice{{Value: "low", Label: "Low"}, {Value: "medium", Label: "Medium"}, {Value: "high", Label: "High"}}

func describe(word, category, scope string, aliases []string, params ...Param) Descriptor {
	if aliases == nil {
		aliases = []string{}
	}
	if params == nil {
		params = []Param{}
	}
	return Descriptor{Word: word, Aliases: aliases, Category: category, DescriptionI18n: i18n(word, "description"), Scope: scope,
		Surfaces: []string{SurfaceAPI}, Params: params}
}

// registry lists the commands, in the order GET /api/commands shows them.
func registry() []*command {
	return []*command{
		{Descriptor: describe("new", CategoryTasks, ScopeProject, []string{"task", "new-task"},
			ref("new", "project", true, "project", "projects"),
			param("new", "prompt", true, KindFreeText, Options{Kind: OptionsNone}),
			ref("new", "agent", false, "agent", "agents"),
			ref("new", "model", false, "model", "models"),
			param("new", "effort", false, KindEnum, Options{Kind: OptionsStatic, Values: efforts})),
			run: runNew},
		{Descriptor: describe("cancel", CategoryControl, ScopeTask, []string{"stop"}, ref("cancel", "task", true, "task", "recent_tasks")),
			run: runCancel},
		{Descriptor: describe("rerun", CategoryControl, ScopeTask, []string{"retry"}, ref("rerun", "task", true, "task", "recent_tasks")),
			run: runRerun},
		{Descriptor: describe("approve", CategoryControl, ScopeWorkspace, []string{"allow"}, ref("approve", "approval", true, "approval", "pending_approvals")),
			run: decide("approve")},
		{Descriptor: describe("reject", CategoryControl, ScopeWorkspace, []string{"deny"}, ref("reject", "approval", true, "approval", "pending_approvals")),
			run: decide("reject")},
		{Descriptor: describe("run", CategoryResources, ScopeProject, []string{"start-workflow"}, ref("run", "workflow", true, "workflow", "workflows")),
			run: runWorkflow},
		{Descriptor: describe("tasks", CategoryTasks, ScopeWorkspace, []string{"recent", "list"}, intRange("tasks", "limit", false, 1, 50)),
			run: runTasks},
		{Descriptor: describe("autonomy", CategoryAdmin, ScopeWorkspace, nil, intRange("autonomy", "level", true, 0, 100)),
			adminOnly: true, run: runAutonomy},
	}
}

func taskAffordances(id string) []Affordance {
	return []Affordance{
		{Label: "Cancel", Action: Invocation{Word: "cancel", Args: map[string]string{"task": id}}},
		{Label: "Run again", Action: Invocation{Word: "rerun", Args: map[string]string{"task": id}}},
	}
}

func plan(text string, affordances ...Affordance) *Plan {
	if affordances == nil {
		affordances = []Affordance{}
	}
	return &Plan{Text: text, Media: []Media{}, Affordances: affordances}
}

func runNew(ctx context.Context, s *Service, ws *actor.Workspace, u *actor.User, args map[string]string) (*Plan, error) {
	in := tasks.TaskCreate{ProjectID: args["project"], Prompt: args["prompt"], AgentProfile: args["agent"],
		Config: tasks.TaskConfig{Model: args["model"], Effort: args["effort"]}}
	t, err := s.tasks.Create(ctx, ws, u, in)
	if err != nil {
		return nil, err
	}
	return plan(fmt.Sprintf("Task %q is queued for the %s agent.", t.Title, t.AgentProfile), taskAffordances(t.ID)[0]), nil
}

func runCancel(ctx context.Context, s *Service, ws *actor.Workspace, u *actor.User, args map[string]string) (*Plan, error) {
	t, err := s.tasks.Cancel(ctx, ws, args["task"], u)
	if err != nil {
		return nil, err
	}
	return plan(fmt.Sprintf("Task %q is cancelled.", t.Title), taskAffordances(t.ID)[1]), nil
}

func runRerun(ctx context.Context, s *Service, ws *actor.Workspace, u *actor.User, args map[string]string) (*Plan, error) {
	t, err := s.tasks.Rerun(ctx, ws, u, args["task"])
	if err != nil {
		return nil, err
	}
	return plan(fmt.Sprintf("Task %q runs again as a new task.", t.Title), taskAffordances(t.ID)[0]), nil
}

func runWorkflow(ctx context.Context, s *Service, ws *actor.Workspace, u *actor.User, args map[string]string) (*Plan, error) {
	w, err := s.workflows.Get(ctx, ws, args["workflow"])
	if err != nil {
		return nil, err
	}
	runID, err := s.workflows.StartRun(ctx, ws, u, w.ID, nil, nil)
	if err != nil {
		return nil, err
	}
	return plan(fmt.Sprintf("Workflow %q started: run %s.", w.Name, runID),
		Affordance{Label: "Run it again", Action: Invocation{Word: "run", Args: map[string]string{"workflow": w.ID}}}), nil
}

func runTasks(ctx context.Context, s *Service, ws *actor.Workspace, _ *actor.User, args map[string]string) (*Plan, error) {
	limit := 10
	if v, ok := args["limit"]; ok {
		fmt.Sscan(v, &limit)
	}
	names, err := s.tasks.Names(ctx, ws, limit)
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return plan("No tasks yet.", Affordance{Label: "New task", Action: Invocation{Word: "new", Args: map[string]string{}}}), nil
	}
	var b strings.Builder
	var more []Affordance
	for _, n := range names {
		fmt.Fprintf(&b, "%s — %s\n", n.Title, n.Status)
		if !tasks.Terminal(n.Status) {
			more = append(more, Affordance{Label: "Cancel " + n.Title, Action: Invocation{Word: "cancel", Args: map[string]string{"task": n.ID}}})
		} else {
			more = append(more, Affordance{Label: "Run again " + n.Title, Action: Invocation{Word: "rerun", Args: map[string]string{"task": n.ID}}})
		}
	}
	return plan(strings.TrimSuffix(b.String(), "\n"), more...), nil
}

func runAutonomy(ctx context.Context, s *Service, ws *actor.Workspace, u *actor.User, args map[string]string) (*Plan, error) {
	var level int
	fmt.Sscan(args["level"], &level)
	a, err := s.tenancy.SetAutonomy(ctx, u, ws.ID, level)
	if err != nil {
		return nil, err
	}
	return plan(fmt.Sprintf("The workspace's autonomy level is %d.", a.Level)), nil
}
