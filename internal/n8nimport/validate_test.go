package n8nimport

import (
	"slipway/internal/triggers"
	"slipway/internal/workflows"
)

// validateInput reports the first rule a converted workflow breaks, as a
// create checks it (short of the database).
func validateInput(in workflows.Input) error { return workflows.Validate(in) }

// validateSpecs checks trigger specs the way the triggers service does.
func validateSpecs(specs []TriggerSpec) error {
	for _, s := range specs {
		c := s.Input.Config
		if err := triggers.ValidateConfig(s.Input.Kind, &c); err != nil {
			return err
		}
	}
	return nil
}
