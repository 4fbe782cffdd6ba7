package analysis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
)

// maxSecretFile bounds a header file; a token is a few hundred bytes.
const maxSecretFile = 16 << 10

// FileSecrets is the standalone home's SecretResolver: valueFrom.file is
// read at every measurement (so a rotated token is picked up) and
// secretKeyRef is refused, there being no Secrets outside Kubernetes. The
// Kubernetes home must not use it: a tenant would read the controller's
// files.
type FileSecrets struct{}

// Resolve reads src.File.
func (FileSecrets) Resolve(_ context.Context, src ValueSource) (string, error) {
	if src.SecretKeyRef != nil || src.File == "" {
		return "", errors.New("only file is available in the standalone home")
	}
	f, err := os.Open(src.File)
	if err != nil {
		// The path is the user's own config; the content never appears.
		return "", fmt.Errorf("file %s: %w", src.File, errors.Unwrap(err))
	}
	defer func() { _ = f.Close() }()
	data, err := io.ReadAll(io.LimitReader(f, maxSecretFile+1))
	if err != nil {
		return "", fmt.Errorf("file %s: reading: %w", src.File, err)
	}
	if len(data) > maxSecretFile {
		return "", fmt.Errorf("file %s: larger than %d KiB", src.File, maxSecretFile>>10)
	}
	return string(data), nil
}
