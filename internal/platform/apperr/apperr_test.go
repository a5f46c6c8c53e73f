package apperr

import (
	"errors"
	"fmt"
	"testing"
)

func TestIsMatchesByCode(t *testing.T) {
	err := fmt.Errorf("loading project: %w", NotFound("project"))
	if !errors.Is(err, ErrNotFound) {
		t.Fatal("a wrapped not_found error is not ErrNotFound")
	}
	if errors.Is(err, ErrConflict) {
		t.Fatal("not_found matched ErrConflict")
	}
	// A specific error is not a sentinel for others of its code.
	if errors.Is(ErrNotFound, NotFound("project")) {
		t.Fatal("a sentinel matched a specific error")
	}
	cause := errors.New("disk full")
	w := Wrap(CodeDatabase, cause, "could not save")
	if !errors.Is(w, cause) {
		t.Fatal("Wrap lost its cause")
	}
	if e, ok := As(w); !ok || e.Code != CodeDatabase || e.Message != "could not save" {
		t.Fatalf("As = %+v, %v", e, ok)
	}
}
