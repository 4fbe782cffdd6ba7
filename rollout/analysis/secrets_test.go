package analysis

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFileSecrets(t *testing.T) {
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(token, []byte("Bearer abc123\n"), 0o600))
	big := filepath.Join(dir, "big")
	require.NoError(t, os.WriteFile(big, []byte(strings.Repeat("x", maxSecretFile+1)), 0o600))

	v, err := FileSecrets{}.Resolve(context.Background(), ValueSource{File: token})
	require.NoError(t, err)
	assert.Equal(t, "Bearer abc123\n", v)

	_, err = FileSecrets{}.Resolve(context.Background(), ValueSource{File: big})
	assert.ErrorContains(t, err, "larger than 16 KiB")

	_, err = FileSecrets{}.Resolve(context.Background(), ValueSource{File: filepath.Join(dir, "missing")})
	assert.ErrorContains(t, err, "missing: no such file")

	// A Secret reference means nothing outside Kubernetes.
	_, err = FileSecrets{}.Resolve(context.Background(), ValueSource{SecretKeyRef: &SecretKeyRef{Name: "s", Key: "k"}})
	assert.ErrorContains(t, err, "only file is available")
}
