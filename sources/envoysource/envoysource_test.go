package envoysource_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/sources"
	"github.com/legate-dev/legate/sources/envoysource"
)

func object(spec v1alpha1.EnvoySourceSpec) *v1alpha1.EnvoySource {
	return &v1alpha1.EnvoySource{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "edge"}, Spec: spec}
}

func env(t *testing.T) envoysource.Env {
	return envoysource.Env{StateDir: t.TempDir(), Budget: sources.NewBudget(0, 0), Flux: fake.NewClientBuilder().Build(), FluxHTTP: func() *http.Client { return http.DefaultClient }}
}

// A spec a reconcile cannot build a driver from is refused naming the
// object and the field, before any Secret or network is read.
func TestBuildRefuses(t *testing.T) {
	for name, tc := range map[string]struct {
		spec   v1alpha1.EnvoySourceSpec
		secret *corev1.Secret
		want   []string
	}{
		"no kind": {want: []string{"EnvoySource team-a/edge", "spec: set one of git, oci and sourceRef"}},
		"a Flux source of another namespace": {
			spec: v1alpha1.EnvoySourceSpec{SourceRef: &v1alpha1.FluxSourceRef{Kind: "GitRepository", Name: "repo", Namespace: "team-b"}},
			want: []string{"EnvoySource team-a/edge", `spec.sourceRef.namespace "team-b"`, "own namespace (team-a)"},
		},
		"an OCI Secret without a Docker config": {
			spec:   v1alpha1.EnvoySourceSpec{OCI: &v1alpha1.OCISource{URL: "oci://registry.example/envoy", SecretRef: &v1alpha1.LocalObjectReference{Name: "pull"}}},
			secret: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "pull"}, Data: map[string][]byte{"token": []byte("x")}},
			want:   []string{"EnvoySource team-a/edge", "spec.oci.secretRef: Secret pull has no .dockerconfigjson entry"},
		},
		"a Git URL the driver refuses": {
			spec: v1alpha1.EnvoySourceSpec{Git: &v1alpha1.GitSource{URL: ""}},
			want: []string{"EnvoySource team-a/edge", "spec.git: "},
		},
		"an OCI URL the driver refuses": {
			spec: v1alpha1.EnvoySourceSpec{OCI: &v1alpha1.OCISource{URL: ""}},
			want: []string{"EnvoySource team-a/edge", "spec.oci: "},
		},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := envoysource.Build(object(tc.spec), "envoysource/team-a/edge", tc.secret, env(t))
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

// Each kind builds without touching the network or its Secret.
func TestBuild(t *testing.T) {
	for name, spec := range map[string]v1alpha1.EnvoySourceSpec{
		"git":  {Git: &v1alpha1.GitSource{URL: "https://git.example/envoy.git", Ref: &v1alpha1.GitRef{Branch: "main"}}},
		"oci":  {OCI: &v1alpha1.OCISource{URL: "oci://registry.example/envoy", Ref: &v1alpha1.OCIRef{Tag: "v1"}}},
		"flux": {SourceRef: &v1alpha1.FluxSourceRef{Kind: "GitRepository", Name: "repo"}},
	} {
		t.Run(name, func(t *testing.T) {
			src, err := envoysource.Build(object(spec), "envoysource/team-a/edge", nil, env(t))
			require.NoError(t, err)
			assert.NotNil(t, src)
		})
	}
}

func TestSecretName(t *testing.T) {
	ref := &v1alpha1.LocalObjectReference{Name: "creds"}
	assert.Equal(t, "creds", envoysource.SecretName(object(v1alpha1.EnvoySourceSpec{Git: &v1alpha1.GitSource{URL: "u", SecretRef: ref}})))
	assert.Equal(t, "creds", envoysource.SecretName(object(v1alpha1.EnvoySourceSpec{OCI: &v1alpha1.OCISource{URL: "u", SecretRef: ref}})))
	assert.Empty(t, envoysource.SecretName(object(v1alpha1.EnvoySourceSpec{Git: &v1alpha1.GitSource{URL: "u"}})))
	assert.Empty(t, envoysource.SecretName(object(v1alpha1.EnvoySourceSpec{SourceRef: &v1alpha1.FluxSourceRef{Kind: "GitRepository", Name: "r"}})))
}

func TestRepository(t *testing.T) {
	git := object(v1alpha1.EnvoySourceSpec{Git: &v1alpha1.GitSource{URL: "https://git.example/envoy.git"}})
	assert.Equal(t, "https://git.example/envoy.git", envoysource.Repository(git, nil))
	flux := object(v1alpha1.EnvoySourceSpec{SourceRef: &v1alpha1.FluxSourceRef{Kind: "GitRepository", Name: "r"}})
	assert.Empty(t, envoysource.Repository(flux, nil), "nothing fetched yet")
	fetched := &sources.Result{}
	fetched.Origin.Kind, fetched.Origin.URL = sources.KindGit, "https://git.example/flux.git"
	assert.Equal(t, "https://git.example/flux.git", envoysource.Repository(flux, fetched))
	fetched.Origin.Kind = sources.KindOCI
	assert.Empty(t, envoysource.Repository(flux, fetched), "an OCI artifact has no commits")
}
