package git

import (
	"errors"

	"github.com/legate-dev/legate/sources"
)

// scrubbedError carries a message with every credential removed. It does not
// unwrap (the wrapped error's text may hold what was removed) but still
// answers errors.Is for sentinel errors such as context.DeadlineExceeded or
// transport.ErrAuthenticationRequired.
type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }

func (e *scrubbedError) Is(target error) bool { return errors.Is(e.err, target) }

// As finds a budget refusal (a file name and sizes, nothing secret).
func (e *scrubbedError) As(target any) bool {
	le, ok := target.(**sources.LimitError)
	return ok && errors.As(e.err, le)
}

func (s *Source) wrap(c credentials, err error) error {
	if err == nil {
		return nil
	}
	return &scrubbedError{msg: sources.Redact(err.Error(), c.secrets...), err: err}
}
