package sources

import (
	"fmt"
	"os"
	"strings"
)

// Secret says where a credential is read from: a file (preferred, e.g. a
// mounted Kubernetes Secret) or an environment variable. The value is read on
// use, so a rotated file is picked up by the next fetch or post. Errors name
// the file or the variable, never the value.
type Secret struct {
	File string `json:"file,omitempty"`
	Env  string `json:"env,omitempty"`
	// Value is a credential already read (from a Kubernetes Secret); it
	// is never encoded.
	Value string `json:"-"`
}

// Literal is a credential already read, e.g. from a Kubernetes Secret.
func Literal(v string) Secret { return Secret{Value: v} }

// IsSet reports whether the secret names a file or a variable, or holds a
// value.
func (s Secret) IsSet() bool { return s.File != "" || s.Env != "" || s.Value != "" }

// Read returns the credential with surrounding white space removed.
func (s Secret) Read() (string, error) {
	switch {
	case s.Value != "":
		return strings.TrimSpace(s.Value), nil
	case s.File != "" && s.Env != "":
		return "", fmt.Errorf("a credential is read from a file or an environment variable, not both (file %q, env %q)", s.File, s.Env)
	case s.File != "":
		b, err := os.ReadFile(s.File)
		if err != nil {
			return "", fmt.Errorf("read credential file: %w", err)
		}
		v := strings.TrimSpace(string(b))
		if v == "" {
			return "", fmt.Errorf("credential file %q is empty", s.File)
		}
		return v, nil
	case s.Env != "":
		v := strings.TrimSpace(os.Getenv(s.Env))
		if v == "" {
			return "", fmt.Errorf("environment variable %s holding a credential is unset or empty", s.Env)
		}
		return v, nil
	default:
		return "", fmt.Errorf("no credential configured: set a file or an environment variable")
	}
}
