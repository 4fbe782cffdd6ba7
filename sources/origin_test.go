package sources

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestOriginRevision(t *testing.T) {
	sha := "0123456789abcdef0123456789abcdef01234567"
	tests := []struct {
		name   string
		origin Origin
		want   string
	}{
		{"git", Origin{Kind: KindGit, Ref: "main", Commit: sha}, "main@sha1:" + sha},
		{"git without commit", Origin{Kind: KindGit, Ref: "main"}, "main"},
		{"git pinned to a commit", Origin{Kind: KindGit, Commit: sha}, "sha1:" + sha},
		{"oci pinned to a digest", Origin{Kind: KindOCI, Digest: "sha256:abcd"}, "sha256:abcd"},
		{"oci", Origin{Kind: KindOCI, Ref: "latest", Digest: "sha256:abcd"}, "latest@sha256:abcd"},
		{"kube", Origin{Kind: KindKube, Namespace: "edge", Name: "proxy", Generation: 3}, "edge/proxy@3"},
		{"unknown", Origin{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.origin.Revision())
		})
	}
}
