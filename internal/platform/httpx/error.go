// Package httpx holds the HTTP plumbing every domain shares: the one error
// body and its status table, Huma's error hooks, and the middleware chain.
package httpx

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"slipway/internal/platform/apperr"
)

// statusOf is the one table from error code to HTTP status (DESIGN §3).
var statusOf = map[apperr.Code]int{
	apperr.CodeBadRequest:         http.StatusBadRequest,
	apperr.CodeUnauthorized:       http.StatusUnauthorized,
	apperr.CodeForbidden:          http.StatusForbidden,
	apperr.CodeQuotaExceeded:      http.StatusForbidden,
	apperr.CodeNotFound:           http.StatusNotFound,
	apperr.CodeMethodNotAllowed:   http.StatusMethodNotAllowed,
	apperr.CodeConflict:           http.StatusConflict,
	apperr.CodePreconditionFailed: http.StatusPreconditionFailed,
	apperr.CodeUnprocessable:      http.StatusUnprocessableEntity,
	apperr.CodeRateLimited:        http.StatusTooManyRequests,
	apperr.CodeTooManyRequests:    http.StatusTooManyRequests,
	apperr.CodeDatabase:           http.StatusInternalServerError,
	apperr.CodeDocker:             http.StatusInternalServerError,
	apperr.CodeVault:              http.StatusInternalServerError,
	apperr.CodeInternal:           http.StatusInternalServerError,
}

// codeOf maps the statuses Huma and net/http produce on their own back to a
// code. Statuses without a code of their own (413, 415, 422 validation…) are
// client mistakes: bad_request.
var codeOf = map[int]apperr.Code{
	http.StatusUnauthorized:       apperr.CodeUnauthorized,
	http.StatusForbidden:          apperr.CodeForbidden,
	http.StatusNotFound:           apperr.CodeNotFound,
	http.StatusMethodNotAllowed:   apperr.CodeMethodNotAllowed,
	http.StatusConflict:           apperr.CodeConflict,
	http.StatusPreconditionFailed: apperr.CodePreconditionFailed,
	http.StatusTooManyRequests:    apperr.CodeTooManyRequests,
}

// Error is the body of every error response: {code, error, details?}.
type Error struct {
	status  int
	Code    apperr.Code    `json:"code" doc:"Stable machine-readable code" enum:"not_found,unauthorized,forbidden,bad_request,unprocessable,precondition_failed,conflict,method_not_allowed,rate_limited,too_many_requests,quota_exceeded,database_error,docker_error,vault_error,internal_error"`
	Message string         `json:"error" doc:"Human-readable English message"`
	Details map[string]any `json:"details,omitempty" doc:"Only on quota_exceeded: the entitlement hit, the limit, the upgrade path and current usage"`
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// GetStatus implements huma.StatusError.
func (e *Error) GetStatus() int { return e.status }

// ContentType makes Huma send errors as plain JSON, not problem+json.
func (e *Error) ContentType(string) string { return "application/json" }

// NewError builds an error body with the status its code maps to.
func NewError(code apperr.Code, message string) *Error {
	status, ok := statusOf[code]
	if !ok {
		status = http.StatusInternalServerError
	}
	return &Error{status: status, Code: code, Message: message}
}

// Unavailable is a 503: the spec's code list has no "unavailable" code, so a
// 503 carries internal_error (see docs/decisions.md).
func Unavailable(message string) *Error {
	return &Error{status: http.StatusServiceUnavailable, Code: apperr.CodeInternal, Message: message}
}

// FromError turns any error a service returned into the response body.
// Domain errors keep their code and message; server-side failures are logged
// with the request id and the client sees only a generic message and the id.
func FromError(ctx context.Context, err error) *Error {
	var he *Error
	if errors.As(err, &he) {
		return he
	}
	if ae, ok := apperr.As(err); ok {
		e := NewError(ae.Code, ae.Message)
		e.Details = ae.Details
		if e.status >= 500 {
			Logger(ctx).Error("request failed", "code", ae.Code, "err", err)
			if ae.Code == apperr.CodeInternal || e.Message == "" {
				e.Message = internalMessage(ctx)
			} else if id := RequestID(ctx); id != "" {
				e.Message += " (request id " + id + ")"
			}
		}
		return e
	}
	if errors.Is(err, context.Canceled) {
		Logger(ctx).Debug("request cancelled", "err", err)
	} else {
		Logger(ctx).Error("request failed", "err", err)
	}
	return NewError(apperr.CodeInternal, internalMessage(ctx))
}

func internalMessage(ctx context.Context) string {
	if id := RequestID(ctx); id != "" {
		return "internal error (request id " + id + ")"
	}
	return "internal error"
}

// WriteError writes err as the JSON error body (for plain handlers).
func WriteError(w http.ResponseWriter, r *http.Request, err error) {
	e := FromError(r.Context(), err)
	writeJSONError(w, e)
}

func writeJSONError(w http.ResponseWriter, e *Error) int64 {
	b, err := json.Marshal(e)
	if err != nil {
		// Only Details can fail to encode (a value JSON has no form for);
		// the code and message still go out.
		b, _ = json.Marshal(&Error{Code: e.Code, Message: e.Message}) // strings only: cannot fail
	}
	b = append(b, '\n')
	h := w.Header()
	h.Del("Content-Length")
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(e.status)
	n, _ := w.Write(b) // a write error means the client went away; n is what it got
	return int64(n)
}

// humaError is installed as Huma's error constructor, so validation failures,
// malformed bodies and handler errors all come out as Error.
func humaError(ctx context.Context, status int, msg string, errs ...error) huma.StatusError {
	for _, err := range errs {
		if err == nil {
			continue
		}
		var he *Error
		if errors.As(err, &he) {
			return he
		}
		if _, ok := apperr.As(err); ok {
			return FromError(ctx, err)
		}
	}
	if status >= 500 || status == 0 {
		if status == 0 {
			// Huma builds an example error with status 0 for the OpenAPI schema.
			return &Error{Code: apperr.CodeInternal}
		}
		return FromError(ctx, errors.Join(append([]error{errors.New(msg)}, errs...)...))
	}
	code, ok := codeOf[status]
	if !ok {
		code = apperr.CodeBadRequest
	}
	return NewError(code, clientMessage(msg, errs))
}

// clientMessage joins Huma's message with each detail's location and message.
// Values are left out: they may be secrets (a password that failed a rule).
func clientMessage(msg string, errs []error) string {
	var parts []string
	for _, err := range errs {
		if err == nil {
			continue
		}
		var d huma.ErrorDetailer
		if errors.As(err, &d) {
			det := d.ErrorDetail()
			if det.Location != "" {
				parts = append(parts, det.Location+": "+det.Message)
			} else {
				parts = append(parts, det.Message)
			}
			continue
		}
		parts = append(parts, err.Error())
	}
	if len(parts) == 0 {
		return msg
	}
	return msg + ": " + strings.Join(parts, "; ")
}

func init() {
	huma.NewError = func(status int, msg string, errs ...error) huma.StatusError {
		return humaError(context.Background(), status, msg, errs...)
	}
	huma.NewErrorWithContext = func(hctx huma.Context, status int, msg string, errs ...error) huma.StatusError {
		ctx := context.Background()
		if hctx != nil {
			ctx = hctx.Context()
		}
		return humaError(ctx, status, msg, errs...)
	}
}
