package forge

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/legate-dev/legate/sources"
)

// State is the state of a commit status.
type State string

// States legate reports.
const (
	StatePending State = "pending"
	StateSuccess State = "success"
	StateFailure State = "failure"
	// StateError closes a check legate could not finish, such as a preview
	// superseded by a newer push: the commit was not judged, which
	// "failure" would wrongly claim. GitLab has no "error" and gets
	// "canceled", its own word for a pipeline a newer push replaced.
	StateError State = "error"
)

// Status is one commit status.
type Status struct {
	// Commit is the full commit SHA the status is about.
	Commit string `json:"commit"`
	State  State  `json:"state"`
	// Context names the check, "legate/<nodeID>" (see ContextFor).
	Context string `json:"context"`
	// Description says why, in one line; reporters trim it to the
	// provider's limit.
	Description string `json:"description,omitempty"`
	// TargetURL links to legate's status for the node.
	TargetURL string `json:"targetURL,omitempty"`
}

// ContextFor is the status context of a node ID.
func ContextFor(nodeID string) string { return "legate/" + nodeID }

// Reporter posts commit statuses to one repository on one forge.
// Implementations are safe for concurrent use. Post returns a
// *PermanentError when retrying cannot help (the forge rejected the request
// itself, e.g. an unknown commit).
type Reporter interface {
	Post(ctx context.Context, st Status) error
}

// Description limits of the providers, in characters.
const (
	GitHubDescriptionLimit = 140
	GitLabDescriptionLimit = 255
	GiteaDescriptionLimit  = 255
)

// PermanentError is a delivery failure that retrying will not fix.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// IsPermanent reports whether err is a *PermanentError.
func IsPermanent(err error) bool {
	var p *PermanentError
	return errors.As(err, &p)
}

// Scrub removes secrets from a description and folds it onto one line.
func Scrub(s string, known ...string) string {
	s = sources.Redact(s, known...)
	return strings.Join(strings.Fields(s), " ")
}

// Trim shortens s to at most limit characters, ending it with "…" when cut.
func Trim(s string, limit int) string {
	if limit <= 0 || utf8.RuneCountInString(s) <= limit {
		return s
	}
	r := []rune(s)
	return string(r[:limit-1]) + "…"
}

// prepare validates st and returns it with a scrubbed description trimmed
// to limit.
func prepare(st Status, limit int, known ...string) (Status, error) {
	switch st.State {
	case StatePending, StateSuccess, StateFailure, StateError:
	default:
		return st, &PermanentError{fmt.Errorf("commit status state %q is not pending, success, failure or error", st.State)}
	}
	if st.Commit == "" || st.Context == "" {
		return st, &PermanentError{fmt.Errorf("commit status needs a commit and a context")}
	}
	st.Description = Trim(Scrub(st.Description, known...), limit)
	st.TargetURL = sources.Redact(st.TargetURL, known...)
	return st, nil
}

// classify turns an HTTP status code from a forge into a permanent error
// when retrying cannot help: 400, 404 and 422 (bad request, unknown
// repository or commit). Authentication errors stay retryable, as a
// rotated token fixes them.
func classify(code int, err error) error {
	switch code {
	case 400, 404, 410, 422:
		return &PermanentError{err}
	}
	return err
}

// splitRepo splits "owner/name".
func splitRepo(repo string) (string, string, error) {
	owner, name, ok := strings.Cut(repo, "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("repository %q must be owner/name", repo)
	}
	return owner, name, nil
}
