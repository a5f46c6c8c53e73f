// Package commands is the typed command protocol (CIP): a registry of
// commands with typed parameters that any surface (the API, the console's
// palette, a chat bot) lists, resolves step by step and
// invokes. Resolving never changes anything: it says the input is ready,
// which parameter is still needed (with its choices), or which value is
// invalid (with a hint ready to show). Invoking resolves first and runs the
// command only when the input is ready, so an under-specified command never
// half-runs.
package commands

// Categories, scopes and parameter kinds (spec: Command descriptor).
const (
	CategoryControl   = "control"
	CategoryTasks     = "tasks"
	CategoryResources = "resources"
	CategoryAdmin     = "admin"

	ScopeTask      = "task"
	ScopeProject   = "project"
	ScopeWorkspace = "workspace"
	ScopeGlobal    = "global"

	KindEnum       = "enum"
	KindRef        = "ref"
	KindFreeText   = "free_text"
	KindIntRange   = "int_range"
	KindAttachment = "attachment"

	OptionsStatic  = "static"
	OptionsDynamic = "dynamic"
	OptionsNone    = "none"

	SurfaceAPI = "api"
)

// Outcomes.
const (
	StatusReady     = "ready"
	StatusNeedParam = "need_param"
	StatusInvalid   = "invalid"
	StatusExecuted  = "executed"
)

// Descriptor describes a command (spec: Command descriptor).
type Descriptor struct {
	Word            string   `json:"word"`
	Aliases         []string `json:"aliases" doc:"Alternate words"`
	Category        string   `json:"category" enum:"control,tasks,resources,admin"`
	DescriptionI18n string   `json:"description_i18n" doc:"i18n key"`
	Scope           string   `json:"scope" enum:"task,project,workspace,global"`
	Surfaces        []string `json:"surfaces"`
	Params          []Param  `json:"params" doc:"In order"`
}

// Param is one parameter of a command.
type Param struct {
	Name            string  `json:"name"`
	DescriptionI18n string  `json:"description_i18n"`
	Required        bool    `json:"required"`
	Kind            string  `json:"kind" enum:"enum,ref,free_text,int_range,attachment"`
	RefKind         string  `json:"ref_kind,omitempty" doc:"For ref: task, project, model, agent, workflow, approval"`
	Min             *int    `json:"min,omitempty" doc:"For int_range"`
	Max             *int    `json:"max,omitempty" doc:"For int_range"`
	Options         Options `json:"options"`
}

// Options says where a parameter's choices come from.
type Options struct {
	Kind     string   `json:"kind" enum:"static,dynamic,none"`
	Values   []Choice `json:"values,omitempty" doc:"static: the closed list"`
	Provider string   `json:"provider,omitempty" doc:"dynamic: the provider id for GET /api/commands/options/{provider_id}"`
}

// Choice is one value a parameter may take.
type Choice struct {
	Value string `json:"value" doc:"Wire value"`
	Label string `json:"label"`
	Hint  string `json:"hint,omitempty"`
	Glyph string `json:"glyph,omitempty"`
}

// Invocation is a command with its arguments, replayable.
type Invocation struct {
	Word string            `json:"word"`
	Args map[string]string `json:"args"`
}

// Media is an image, screenshot, file or audio a plan carries.
type Media struct {
	Kind string `json:"kind" enum:"image,screenshot,file,audio"`
	URL  string `json:"url,omitempty"`
	Data string `json:"data,omitempty" doc:"Inline data (base64)"`
	Name string `json:"name,omitempty"`
}

// Affordance is a follow-up the surface may offer: a label and the
// invocation it replays.
type Affordance struct {
	Label  string     `json:"label"`
	Action Invocation `json:"action"`
}

// Plan is what an executed command shows.
type Plan struct {
	Text        string       `json:"text"`
	HTML        bool         `json:"html"`
	Media       []Media      `json:"media"`
	Affordances []Affordance `json:"affordances"`
}

// Outcome is the answer of resolve and invoke; which fields are set
// depends on the status.
type Outcome struct {
	Status string `json:"status" enum:"ready,need_param,invalid,executed"`
	// ready: the resolved input.
	Input *Invocation `json:"input,omitempty"`
	// need_param and invalid: the parameter.
	Param string `json:"param,omitempty"`
	// need_param: what to ask for.
	DescriptionI18n string    `json:"description_i18n,omitempty"`
	FreeText        *bool     `json:"free_text,omitempty"`
	Options         *[]Choice `json:"options,omitempty" doc:"need_param: the choices (empty for free text)"`
	// invalid: the value refused and a hint ready to show.
	Value string `json:"value,omitempty"`
	Hint  string `json:"hint,omitempty"`
	// executed: what ran and what to show.
	Invocation *Invocation `json:"invocation,omitempty"`
	Plan       *Plan       `json:"plan,omitempty"`
}
