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
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/sources"
	"github.com/legate-dev/legate/sources/envoysource"
)

// The EnvoySources of one namespace that follow one repository share its
// clone; another namespace's, on the same repository, never do.
func TestDriversShareClonesWithinANamespaceOnly(t *testing.T) {
	repo := newRepo(t, "east", "west")
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
	clones := func() []string {
		entries, err := os.ReadDir(filepath.Join(e.StateDir, "git"))
		require.NoError(t, err)
		var names []string
		for _, c := range entries {
			names = append(names, c.Name())
			assert.True(t, strings.HasPrefix(c.Name(), "shared-"), c.Name())
		}
		return names
	}
	before := clones()
	assert.Len(t, before, 2, "one clone for team-a's two sources, one for team-b's: %v", before)

	// A clone goes with the last EnvoySource that uses it.
	drivers.Drop(sources.EnvoySourceRef("team-a", "east").String())
	assert.Equal(t, before, clones(), "team-a/west still uses team-a's clone")
	drivers.Drop(sources.EnvoySourceRef("team-a", "west").String())
	require.Eventually(t, func() bool { return len(clones()) == 1 }, 10*time.Second, 5*time.Millisecond,
		"team-a's clone is removed with its last EnvoySource")
}

// A rotated Secret rebuilds the EnvoySource's driver, which keeps the clone.
func TestARotatedSecretKeepsTheClone(t *testing.T) {
	repo := newRepo(t, "east")
	e := env(t)
	e.Timeout = time.Minute
	drivers := envoysource.NewDrivers(e, 4, 4)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "git"}, Data: map[string][]byte{"username": []byte("git"), "password": []byte("one")}}
	reader := fake.NewClientBuilder().WithObjects(secret).Build()
	obj := &v1alpha1.EnvoySource{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "east", Generation: 1},
		Spec:       v1alpha1.EnvoySourceSpec{Git: &v1alpha1.GitSource{URL: repo, SecretRef: &v1alpha1.LocalObjectReference{Name: "git"}}, Path: "east"},
	}
	name := sources.EnvoySourceRef("team-a", "east").String()
	_, err := drivers.Fetch(context.Background(), reader, obj, name)
	require.NoError(t, err)
	dir := onlyClone(t, e.StateDir)
	marker := filepath.Join(e.StateDir, "git", dir, "legate-test-marker")
	require.NoError(t, os.WriteFile(marker, nil, 0o600))

	secret.Data["password"] = []byte("two")
	require.NoError(t, reader.Update(context.Background(), secret))
	_, err = drivers.Fetch(context.Background(), reader, obj, name)
	require.NoError(t, err)
	assert.Equal(t, dir, onlyClone(t, e.StateDir), "the same clone")
	assert.FileExists(t, marker, "kept, not made again")
}

func onlyClone(t *testing.T, stateDir string) string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(stateDir, "git"))
	require.NoError(t, err)
	require.Len(t, entries, 1)
	return entries[0].Name()
}

// newRepo makes a repository with one commit, "<dir>: 1" in each dir's
// x.yaml, and returns its path.
func newRepo(t *testing.T, dirs ...string) string {
	t.Helper()
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
	for _, d := range dirs {
		require.NoError(t, os.MkdirAll(filepath.Join(repo, d), 0o750))
		require.NoError(t, os.WriteFile(filepath.Join(repo, d, "x.yaml"), []byte(d+": 1\n"), 0o600))
	}
	git("add", "-A")
	git("commit", "-q", "-m", "v1")

	return repo
}
