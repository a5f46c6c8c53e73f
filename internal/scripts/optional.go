package scripts

import "slipway/internal/platform/httpx"

// Optional is a PATCH field's three states (httpx.Optional).
type Optional[T any] = httpx.Optional[T]
