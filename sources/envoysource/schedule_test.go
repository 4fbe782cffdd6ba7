package envoysource_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/sources"
	"github.com/legate-dev/legate/sources/envoysource"
)

// An EnvoySource is read again at its interval, no sooner than
// MinInterval; sooner after a failed fetch and while its status settles,
// never later than its interval.
func TestNextFetch(t *testing.T) {
	const settle = 5 * time.Second
	for _, tc := range []struct {
		name             string
		interval         time.Duration
		failed, settling bool
		want             time.Duration
	}{
		{name: "at the interval", interval: 10 * time.Minute, want: 10 * time.Minute},
		{name: "no sooner than MinInterval", interval: time.Second, want: envoysource.MinInterval},
		{name: "unset is MinInterval", want: envoysource.MinInterval},
		{name: "a failed fetch is retried", interval: 10 * time.Minute, failed: true, want: envoysource.FetchRetry},
		{name: "a retry no later than the interval", interval: 10 * time.Second, failed: true, want: 10 * time.Second},
		{name: "a failed fetch does not settle", interval: 10 * time.Minute, failed: true, settling: true, want: envoysource.FetchRetry},
		{name: "settling is looked at again", interval: 10 * time.Minute, settling: true, want: settle},
		{name: "settling no later than the interval", interval: time.Second, settling: true, want: envoysource.MinInterval},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, envoysource.NextFetch(tc.interval, tc.failed, tc.settling, settle))
		})
	}
}

// Only the EnvoySources that name a Flux object, by kind, name and
// namespace (their own when the reference leaves it out), refer to it.
func TestRefersTo(t *testing.T) {
	ref := func(kind, ns, name string) v1alpha1.EnvoySourceSpec {
		return v1alpha1.EnvoySourceSpec{SourceRef: &v1alpha1.FluxSourceRef{Kind: kind, Namespace: ns, Name: name}}
	}
	for _, tc := range []struct {
		name string
		spec v1alpha1.EnvoySourceSpec
		want bool
	}{
		{name: "same namespace, left out", spec: ref("GitRepository", "", "config"), want: true},
		{name: "same namespace, named", spec: ref("GitRepository", "team-a", "config"), want: true},
		{name: "another kind", spec: ref("OCIRepository", "", "config")},
		{name: "another name", spec: ref("GitRepository", "", "other")},
		{name: "another namespace", spec: ref("GitRepository", "team-b", "config")},
		{name: "no sourceRef", spec: v1alpha1.EnvoySourceSpec{Git: &v1alpha1.GitSource{URL: "https://example.com/config.git"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, envoysource.RefersTo(object(tc.spec), "GitRepository", "team-a", "config"))
		})
	}
}

// Zero limits are the defaults; set ones are kept.
func TestLimitsDefaults(t *testing.T) {
	got := envoysource.Limits{Workers: -1}.WithDefaults()
	assert.Equal(t, envoysource.Limits{Workers: sources.DefaultFetchWorkers, PerNamespace: sources.DefaultFetchesPerNamespace, Timeout: sources.DefaultFetchTimeout}, got)
	set := envoysource.Limits{Workers: 3, PerNamespace: 1, Timeout: time.Second, SourceMaxBytes: 10, SourcesMaxBytes: 20}
	assert.Equal(t, set, set.WithDefaults())
}
