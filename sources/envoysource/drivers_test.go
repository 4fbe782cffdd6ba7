package envoysource_test

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/sources"
	"github.com/legate-dev/legate/sources/envoysource"
)

// The EnvoySources of one namespace that follow one repository share its
// clone; another namespace's, on the same repository, never do.
func TestDriversShareClonesWithinANamespaceOnly(t *testing.T) {
	repo := filepath.Join(t.TempDir(), "repo")
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", repo}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+repo,
			"GIT_AUTHOR_NAME=Ada", "GIT_AUTHOR_EMAIL=ada@example.com", "GIT_COMMITTER_NAME=Ada", "GIT_COMMITTER_EMAIL=ada@example.com")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	require.NoError(t, os.MkdirAll(repo, 0o750))
	git("init", "-q", "-b", "main")
	for _, d := range []string{"east", "west"} {
		require.NoError(t, os.MkdirAll(filepath.Join(repo, d), 0o750))
		require.NoError(t, os.WriteFile(filepath.Join(repo, d, "x.yaml"), []byte(d+": 1\n"), 0o600))
	}
	git("add", "-A")
	git("commit", "-q", "-m", "v1")

	e := env(t)
	e.Timeout = time.Minute
	drivers := envoysource.NewDrivers(e, 4, 4)
	reader := fake.NewClientBuilder().Build()
	for _, es := range []struct{ ns, name, path string }{
		{"team-a", "east", "east"}, {"team-a", "west", "west"}, {"team-b", "east", "east"},
	} {
		obj := &v1alpha1.EnvoySource{
			ObjectMeta: metav1.ObjectMeta{Namespace: es.ns, Name: es.name},
			Spec:       v1alpha1.EnvoySourceSpec{Git: &v1alpha1.GitSource{URL: repo}, Path: es.path},
		}
		res, err := drivers.Fetch(context.Background(), reader, obj, sources.EnvoySourceRef(es.ns, es.name).String())
		require.NoError(t, err, "%s/%s", es.ns, es.name)
		got, err := fs.ReadFile(res.Files, "x.yaml")
		require.NoError(t, err)
		assert.Equal(t, es.path+": 1\n", string(got), "%s/%s reads its own directory", es.ns, es.name)
	}
	clones, err := os.ReadDir(filepath.Join(e.StateDir, "git"))
	require.NoError(t, err)
	var names []string
	for _, c := range clones {
		names = append(names, c.Name())
		assert.True(t, strings.HasPrefix(c.Name(), "shared-"), c.Name())
	}
	assert.Len(t, names, 2, "one clone for team-a's two sources, one for team-b's: %v", names)
}
