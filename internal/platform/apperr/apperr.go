// Package apperr holds the error values that services return. Each carries one
// of the spec's stable error codes; the HTTP layer maps codes to statuses in a
// single table (httpx), so services never think in status codes.
package apperr

import (
	"errors"
	"fmt"
)

// Code is a stable, machine-readable error code from the spec's Errors section.
type Code string

const (
	CodeNotFound           Code = "not_found"
	CodeUnauthorized       Code = "unauthorized"
	CodeForbidden          Code = "forbidden"
	CodeBadRequest         Code = "bad_request"
	CodeUnprocessable      Code = "unprocessable"
	CodePreconditionFailed Code = "precondition_failed"
	CodeConflict           Code = "conflict"
	CodeMethodNotAllowed   Code = "method_not_allowed"
	CodeRateLimited        Code = "rate_limited"
	CodeTooManyRequests    Code = "too_many_requests"
	CodeQuotaExceeded      Code = "quota_exceeded"
	CodeDatabase           Code = "database_error"
	CodeDocker             Code = "docker_error"
	CodeVault              Code = "vault_error"
	CodeInternal           Code = "internal_error"
)

// Error is a domain error with a code, a message safe to show a client, and
// optionally the cause (never shown to clients, only logged).
type Error struct {
	Code    Code
	Message string
	// Details is only used for quota_exceeded (spec: details object).
	Details map[string]any
	Cause   error
}

func (e *Error) Error() string {
	if e.Cause != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Cause)
	}
	return string(e.Code) + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.Cause }

// Is makes errors.Is(err, apperr.ErrNotFound) true for any not_found error.
func (e *Error) Is(target error) bool {
	var t *Error
	if errors.As(target, &t) && t.Message == "" && t.Cause == nil {
		return t.Code == e.Code
	}
	return false
}

// Sentinels for errors.Is checks. They carry no message, so they match any
// error of their code.
var (
	ErrNotFound     = &Error{Code: CodeNotFound}
	ErrConflict     = &Error{Code: CodeConflict}
	ErrForbidden    = &Error{Code: CodeForbidden}
	ErrUnauthorized = &Error{Code: CodeUnauthorized}
	ErrBadRequest   = &Error{Code: CodeBadRequest}
)

// New builds an error of the given code with a client-safe message.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap builds an error of the given code around a cause that is logged but
// never returned to the client.
func Wrap(code Code, cause error, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Cause: cause}
}

// NotFound is the one message for a missing (or foreign) row of a kind, so an id
// from another workspace and an unknown id answer identically.
func NotFound(kind string) *Error {
	return &Error{Code: CodeNotFound, Message: kind + " not found"}
}

// BadRequest is a shortcut for the commonest validation failure.
func BadRequest(format string, args ...any) *Error {
	return New(CodeBadRequest, format, args...)
}

// As returns the *Error in err's chain, if any.
func As(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}
