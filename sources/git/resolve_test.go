package git

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestResolve(t *testing.T) {
	const (
		c1 = "1111111111111111111111111111111111111111"
		c2 = "2222222222222222222222222222222222222222"
		c3 = "3333333333333333333333333333333333333333"
		t1 = "aaaa111111111111111111111111111111111111"
	)
	adv := advertised{
		"HEAD":                 "refs/heads/main",
		"refs/heads/main":      c1,
		"refs/heads/dev":       c2,
		"refs/tags/v1.0.0":     c1,
		"refs/tags/v1.2.0":     t1, // annotated
		"refs/tags/v1.2.0^{}":  c2,
		"refs/tags/v2.0.0":     c3,
		"refs/tags/not-semver": c3,
		"refs/pull/7/head":     c3,
	}
	tests := []struct {
		name    string
		ref     Ref
		adv     advertised
		want    target
		wantErr string
	}{
		{"default branch", Ref{}, adv, target{"refs/heads/main", c1, "main"}, ""},
		{"branch", Ref{Branch: "dev"}, adv, target{"refs/heads/dev", c2, "dev"}, ""},
		{"missing branch", Ref{Branch: "nope"}, adv, target{}, `branch "nope" not found`},
		{"tag peeled", Ref{Tag: "v1.2.0"}, adv, target{"refs/tags/v1.2.0", c2, "v1.2.0"}, ""},
		{"tag beats branch", Ref{Tag: "v1.0.0", Branch: "dev"}, adv, target{"refs/tags/v1.0.0", c1, "v1.0.0"}, ""},
		{"semver", Ref{SemVer: "^1"}, adv, target{"refs/tags/v1.2.0", c2, "v1.2.0"}, ""},
		{"semver beats tag", Ref{SemVer: ">=1.0.0", Tag: "v1.0.0"}, adv, target{"refs/tags/v2.0.0", c3, "v2.0.0"}, ""},
		{"semver none", Ref{SemVer: ">=3"}, adv, target{}, "no tag in the remote repository matches"},
		{"name", Ref{Name: "refs/pull/7/head", SemVer: "^1"}, adv, target{"refs/pull/7/head", c3, "refs/pull/7/head"}, ""},
		{"name short", Ref{Name: "main"}, adv, target{}, "must be a full name"},
		{"commit on branch", Ref{Commit: c2, Branch: "main", Name: "refs/pull/7/head"}, adv, target{"refs/heads/main", c2, "main"}, ""},
		{"commit alone", Ref{Commit: c2}, adv, target{"", c2, "HEAD"}, ""},
		{"head without symref", Ref{}, advertised{"HEAD": c2, "refs/heads/a": c2, "refs/heads/master": c2}, target{"refs/heads/master", c2, "master"}, ""},
		{"no head", Ref{}, advertised{"refs/heads/main": c1}, target{}, "has no HEAD"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := resolve(tt.ref, tt.adv)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}
