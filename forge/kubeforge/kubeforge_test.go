package kubeforge

import (
	"context"
	"net/http"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/forge"
)

func reporters(t *testing.T, objs ...client.Object) *Reporters {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	return New(c, c, forge.NewFeedback(nil, nil, "", logr.Discard()), func() *http.Client { return http.DefaultClient })
}

func source(status *v1alpha1.CommitStatus) *v1alpha1.EnvoySource {
	return &v1alpha1.EnvoySource{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "edge"},
		Spec:       v1alpha1.EnvoySourceSpec{Git: &v1alpha1.GitSource{URL: "https://github.com/team-a/edge.git"}, CommitStatus: status},
	}
}

// The token is read on every post; its errors name the Secret and field,
// never the token.
func TestSecretToken(t *testing.T) {
	key := types.NamespacedName{Namespace: "team-a", Name: "forge"}
	empty := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "forge"}, Data: map[string][]byte{"other": []byte("x")}}
	_, err := reporters(t).secretToken(key)(context.Background())
	require.ErrorContains(t, err, "commitStatus.tokenSecretRef: Secret team-a/forge does not exist")
	_, err = reporters(t, empty).secretToken(key)(context.Background())
	require.ErrorContains(t, err, `Secret team-a/forge has no "token" entry`)
	full := empty.DeepCopy()
	full.Data[TokenKey] = []byte(" s3cret\n")
	token, err := reporters(t, full).secretToken(key)(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "s3cret", token)
}

// A commitStatus that cannot post is told, and the dispatcher is told it
// cannot; a sound one is looked up; a dropped one is gone.
func TestConfigureAndLookup(t *testing.T) {
	const name = "envoysource/team-a/edge"
	cs := reporters(t)
	bad := source(&v1alpha1.CommitStatus{Provider: "gitea", TokenSecretRef: v1alpha1.LocalObjectReference{Name: "forge"}})
	err := cs.Configure(bad, name, "")
	require.ErrorContains(t, err, "EnvoySource team-a/edge: spec.commitStatus: the forge address and repository cannot be derived")
	_, err = cs.Lookup(name)
	require.ErrorIs(t, err, forge.ErrUnknownTarget)

	good := source(&v1alpha1.CommitStatus{Provider: "github", TokenSecretRef: v1alpha1.LocalObjectReference{Name: "forge"}})
	require.NoError(t, cs.Configure(good, name, good.Spec.Git.URL))
	rep, err := cs.Lookup(name)
	require.NoError(t, err)
	assert.NotNil(t, rep)

	cs.Drop(name)
	_, err = cs.Lookup(name)
	assert.ErrorIs(t, err, forge.ErrUnknownTarget, "the EnvoySource is gone from the cache too")
	_, err = cs.Lookup("git/main")
	assert.ErrorIs(t, err, forge.ErrUnknownTarget, "not an EnvoySource")
}

// A repository URL's password never reaches the error, which the
// EnvoySource's status shows.
func TestConfigureErrorCarriesNoPassword(t *testing.T) {
	cs := reporters(t)
	es := source(&v1alpha1.CommitStatus{Provider: "gitea", TokenSecretRef: v1alpha1.LocalObjectReference{Name: "forge"}})
	err := cs.Configure(es, "envoysource/team-a/edge", "https://alice:hunter2pw@git.example/")
	require.ErrorContains(t, err, "cannot be derived from")
	assert.NotContains(t, err.Error(), "hunter2pw")
	assert.Contains(t, err.Error(), "git.example", "the URL is still named")
}
