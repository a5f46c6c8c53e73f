package projects

import (
	"net/url"
	"strings"
	"time"

	"slipway/internal/agents/protocol"
	"slipway/internal/platform/apperr"
)

// AgentProfile describes how an agent is run: its type, image, model and
// instructions. A workspace names its profiles; tasks pick one by name.
type AgentProfile struct {
	ID              string    `json:"id" format:"uuid"`
	WorkspaceID     string    `json:"workspace_id" format:"uuid"`
	Name            string    `json:"name"`
	AgentType       string    `json:"agent_type" enum:"shell,llm,command"`
	Image           string    `json:"image" doc:"Container image; empty: the project's or the instance default"`
	Model           string    `json:"model"`
	BaseURL         string    `json:"base_url" doc:"OpenAI-compatible endpoint for llm agents"`
	HasAPIKey       bool      `json:"has_api_key" doc:"Whether the profile has its own key (else LLM_PROVIDER_API_KEY, sent only to LLM_PROVIDER_BASE_URL)"`
	ResourceID      string    `json:"resource_id" doc:"For llm agents: an openai_compatible resource whose base URL, default model and key the runs use (empty: base_url and the profile's key)"`
	Instructions    string    `json:"instructions"`
	CommandTemplate string    `json:"command_template" doc:"For command agents: the CLI to run, with {prompt}, {model}, {workdir}, {instructions}"`
	CreatedAt       time.Time `json:"created_at"`
	UpdatedAt       time.Time `json:"updated_at"`
}

// DefaultProfiles are what every workspace starts with.
var DefaultProfiles = []AgentProfile{
	{Name: "shell", AgentType: protocol.AgentShell, Instructions: "Runs the task's prompt as a shell script in the repository."},
	{Name: "coder", AgentType: protocol.AgentLLM, Model: "gpt-4o-mini", BaseURL: protocol.DefaultBaseURL,
		Instructions: "Make the smallest change that does what the task asks, keep the code style, and run the tests you find."},
}

// ProfileInput is the writable part of a profile.
type ProfileInput struct {
	Name            *string `json:"name,omitempty" maxLength:"100"`
	AgentType       *string `json:"agent_type,omitempty" enum:"shell,llm,command"`
	Image           *string `json:"image,omitempty" maxLength:"500"`
	Model           *string `json:"model,omitempty" maxLength:"200"`
	BaseURL         *string `json:"base_url,omitempty" maxLength:"2048"`
	APIKey          *string `json:"api_key,omitempty" maxLength:"4096" doc:"Write-only; empty string clears it"`
	ResourceID      *string `json:"resource_id,omitempty" maxLength:"36" doc:"An openai_compatible resource of the workspace (llm profiles); empty string clears it"`
	Instructions    *string `json:"instructions,omitempty" maxLength:"20000"`
	CommandTemplate *string `json:"command_template,omitempty" maxLength:"4000"`
}

// apply writes the given fields onto p and validates the result.
func (in ProfileInput) apply(p *AgentProfile) error {
	set := func(dst *string, src *string) {
		if src != nil {
			*dst = strings.TrimSpace(*src)
		}
	}
	set(&p.Name, in.Name)
	set(&p.AgentType, in.AgentType)
	set(&p.Image, in.Image)
	set(&p.Model, in.Model)
	set(&p.BaseURL, in.BaseURL)
	set(&p.ResourceID, in.ResourceID)
	if in.Instructions != nil {
		p.Instructions = *in.Instructions
	}
	if in.CommandTemplate != nil {
		p.CommandTemplate = *in.CommandTemplate
	}
	name, err := cleanName(p.Name)
	if err != nil {
		return err
	}
	p.Name = name
	if p.ResourceID != "" && p.AgentType != protocol.AgentLLM {
		return apperr.BadRequest("resource_id: only an llm profile takes a model resource")
	}
	switch p.AgentType {
	case protocol.AgentShell:
	case protocol.AgentLLM:
		if p.ResourceID != "" {
			if p.BaseURL != "" {
				return apperr.BadRequest("give an llm profile either resource_id or base_url, not both")
			}
			break // the service checks the resource: its address, and its model when the profile names none
		}
		if p.BaseURL == "" {
			return apperr.BadRequest("an llm profile needs base_url (an OpenAI-compatible endpoint)")
		}
		if u, err := url.Parse(p.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return apperr.BadRequest("base_url must be an http or https URL")
		}
		if p.Model == "" {
			return apperr.BadRequest("an llm profile needs a model")
		}
	case protocol.AgentCommand:
		if !strings.Contains(p.CommandTemplate, "{prompt}") {
			return apperr.BadRequest("a command profile needs a command_template containing {prompt}")
		}
	default:
		return apperr.BadRequest("agent_type must be shell, llm or command")
	}
	return nil
}
