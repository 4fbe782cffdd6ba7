//go:build unix

package standalone

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/sds"
)

// A preview's render checks a secret reference by name and reads no key
// material: the secret's files are named pipes, which block whoever opens
// them for reading, so a preview that read them would never return.
// Applying the same render (what a commit on the served branch does) is
// what reads them; a preview never applies.
func TestPreviewReadsNoKeyMaterial(t *testing.T) {
	secrets := t.TempDir()
	dir := filepath.Join(secrets, "cfg", "edge-cert")
	require.NoError(t, os.MkdirAll(dir, 0o700))
	for _, f := range []string{sds.TLSCertFile, sds.TLSKeyFile} {
		require.NoError(t, syscall.Mkfifo(filepath.Join(dir, f), 0o600))
	}
	s := newServer(t, Config{
		StateDir: t.TempDir(), SecretsDir: secrets, XDSInsecureSecrets: []string{"*"},
		Sources: []SourceConfig{{Name: "cfg", Git: &GitSource{URL: "/nowhere"}}},
	}, Options{})
	t.Cleanup(s.close)

	done := make(chan *render.Result, 1)
	go func() {
		done <- s.previewRender("cfg")(context.Background(), fstest.MapFS{"edge.yaml": {Data: []byte(marin3rTLS)}})
	}()
	var res *render.Result
	select {
	case res = <-done:
	case <-time.After(time.Minute):
		t.Fatal("the preview's render blocked: it opened the secret's key material")
	}
	require.Empty(t, res.Diagnostics, "the reference is in the source's scope")
	require.Contains(t, res.Nodes, "edge")
	require.Len(t, res.Nodes["edge"].ExternalSecrets, 1)
	assert.Equal(t, "cfg/edge-cert", res.Nodes["edge"].ExternalSecrets[0].Ref, "checked and resolved by name")
}
