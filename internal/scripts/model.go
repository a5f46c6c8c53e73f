// Package scripts holds a workspace's saved scripts: named, slugged sources
// in one of the languages code nodes run, with a revision for every change
// of source or language. Code nodes of workflows refer to them by id
// (config.script_id), so a script stays while one does.
package scripts

import "time"

// Languages a script is written in (the code node's languages, without
// its alias node).
const (
	LangSh         = "sh"
	LangBash       = "bash"
	LangPython     = "python"
	LangJavaScript = "javascript"
)

// Languages lists the languages in the order the board shows them.
var Languages = []string{LangSh, LangBash, LangPython, LangJavaScript}

var languageLabels = map[string]string{LangSh: "Shell (sh)", LangBash: "Bash", LangPython: "Python", LangJavaScript: "JavaScript"}

// Limits of a script's fields.
const (
	MaxNameChars        = 200
	MaxDescriptionChars = 2000
	MaxSourceBytes      = 262144
)

// Script is a script with its current source.
type Script struct {
	ID          string    `json:"id" format:"uuid"`
	Name        string    `json:"name"`
	Slug        string    `json:"slug" doc:"Unique in the workspace"`
	Language    string    `json:"language" enum:"sh,bash,python,javascript"`
	Description *string   `json:"description" nullable:"true"`
	Source      string    `json:"source"`
	Version     int64     `json:"version" doc:"The current revision"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	CreatedBy   *string   `json:"created_by" nullable:"true" format:"uuid"`
}

// ScriptSummary is a script as lists and the board show it: without its source.
type ScriptSummary struct {
	ID          string    `json:"id" format:"uuid"`
	Name        string    `json:"name"`
	Slug        string    `json:"slug"`
	Language    string    `json:"language" enum:"sh,bash,python,javascript"`
	Description *string   `json:"description" nullable:"true"`
	Version     int64     `json:"version"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	CreatedBy   *string   `json:"created_by" nullable:"true" format:"uuid"`
}

// ScriptRevisionSummary is a revision as the list shows it: without its source.
type ScriptRevisionSummary struct {
	Version   int64     `json:"version"`
	Language  string    `json:"language" enum:"sh,bash,python,javascript"`
	CreatedAt time.Time `json:"created_at"`
	CreatedBy *string   `json:"created_by" nullable:"true" format:"uuid" doc:"Who made the change; null once the account is gone"`
}

// ScriptRevision is one version of a script's source.
type ScriptRevision struct {
	Version   int64     `json:"version"`
	Language  string    `json:"language" enum:"sh,bash,python,javascript"`
	Source    string    `json:"source"`
	CreatedAt time.Time `json:"created_at"`
	CreatedBy *string   `json:"created_by" nullable:"true" format:"uuid"`
}

// ScriptCreate is the body of a create.
type ScriptCreate struct {
	Name        string  `json:"name" minLength:"1" maxLength:"200"`
	Slug        string  `json:"slug" minLength:"1" maxLength:"63" pattern:"^[a-z][a-z0-9-]{0,62}$" doc:"Lowercase letters, digits and hyphens, starting with a letter"`
	Language    string  `json:"language" enum:"sh,bash,python,javascript"`
	Source      string  `json:"source" minLength:"1" maxLength:"262144" doc:"At most 262144 bytes"`
	Description *string `json:"description,omitempty" nullable:"true" maxLength:"2000"`
}

// ScriptPatch is the body of a PATCH: every field optional. Description is
// three-state: absent leaves it, null clears it, a string sets it.
type ScriptPatch struct {
	Name        Optional[string] `json:"name" required:"false" minLength:"1" maxLength:"200"`
	Slug        Optional[string] `json:"slug" required:"false" minLength:"1" maxLength:"63" pattern:"^[a-z][a-z0-9-]{0,62}$"`
	Language    Optional[string] `json:"language" required:"false" enum:"sh,bash,python,javascript"`
	Source      Optional[string] `json:"source" required:"false" minLength:"1" maxLength:"262144" doc:"At most 262144 bytes; a change adds a revision"`
	Description Optional[string] `json:"description" required:"false" nullable:"true" maxLength:"2000" doc:"Absent: unchanged; null: cleared; a string: set"`
}
