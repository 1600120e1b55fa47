package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"

	"github.com/zbrecover/zbrecover/internal/redact"
)

// Retryable marks err as transient (throttling, a 5xx answer, a dropped connection), so that
// WithRetry tries the request again. Backends mark the errors they translate; everything not
// marked is permanent. Retryable(nil) is nil.
func Retryable(err error) error {
	if err == nil {
		return nil
	}
	return &retryableError{err: err}
}

type retryableError struct{ err error }

func (e *retryableError) Error() string { return e.err.Error() }
func (e *retryableError) Unwrap() error { return e.err }

// IsRetryable reports whether a request that failed with err is worth repeating: a backend
// marked err (or an error it wraps) with Retryable, and it is none of ErrNotExist,
// ErrPreconditionFailed, ErrExist, ErrNotSupported, context.Canceled or
// context.DeadlineExceeded, which are never retried.
func IsRetryable(err error) bool {
	if err == nil || errors.Is(err, ErrNotExist) || errors.Is(err, ErrPreconditionFailed) ||
		errors.Is(err, ErrExist) || errors.Is(err, ErrNotSupported) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if errors.As(err, new(unretryable)) {
		return false // a decorator decided that this one is not to be repeated
	}
	var r *retryableError
	return errors.As(err, &r)
}

// HTTPStatus returns the HTTP status code of an SDK error: status of the first error of type
// E in err's chain, or 0 when there is none (the request got no answer).
func HTTPStatus[E error](err error, status func(E) int) int {
	var e E
	if errors.As(err, &e) {
		return status(e)
	}
	return 0
}

// RetryableStatus reports whether an HTTP status code means "try again later": 408, 429,
// 500, 502, 503 and 504.
func RetryableStatus(code int) bool {
	switch code {
	case http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError,
		http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// IsTransientNetwork reports whether err is a network failure that a new attempt may not see:
// a timeout, a reset or refused connection, or a connection closed mid-response. Context
// errors are not transient.
func IsTransientNetwork(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

// ErrorClass is how a backend classifies the SDK error of a failed request, for RequestError.
type ErrorClass int

// The classes of request errors.
const (
	ClassPermanent          ErrorClass = iota // returned as it is; WithRetry does not repeat it
	ClassNotExist                             // wrapped with ErrNotExist
	ClassPreconditionFailed                   // wrapped with ErrPreconditionFailed
	ClassTransient                            // marked Retryable
	ClassExist                                // wrapped with ErrExist (a create-only write found the key)
)

// RequestError returns the error a backend reports when request op ("stat", "read", "delete",
// …) on where (an object's URL, free of secrets) fails with the SDK error err. The message is
// "op where: [note: ]err", with err redacted (RedactError) and wrapped as its class says; the
// SDK error stays in the chain for errors.As. classify gives the class and an optional note
// (such as `bucket "b" does not exist`). A context error that err carries is returned alone,
// as "op where: context canceled", and classify is not called.
func RequestError(op, where string, err error, classify func(error) (ErrorClass, string)) error {
	switch {
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("%s %s: %w", op, where, context.Canceled)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s %s: %w", op, where, context.DeadlineExceeded)
	}
	class, note := classify(err)
	prefix := op + " " + where
	if note != "" {
		prefix += ": " + note
	}
	err = RedactError(err)
	switch class {
	case ClassNotExist:
		return fmt.Errorf("%s: %w: %w", prefix, ErrNotExist, err)
	case ClassPreconditionFailed:
		return fmt.Errorf("%s: %w: %w", prefix, ErrPreconditionFailed, err)
	case ClassExist:
		return fmt.Errorf("%s: %w: %w", prefix, ErrExist, err)
	case ClassTransient:
		return fmt.Errorf("%s: %w", prefix, Retryable(err))
	}
	return fmt.Errorf("%s: %w", prefix, err)
}

// RedactError returns err with Redact applied to its message. errors.Is and errors.As still
// see the wrapped chain. Backends use it on SDK errors, whose messages may carry request URLs.
func RedactError(err error) error { return redact.Error(err) }
