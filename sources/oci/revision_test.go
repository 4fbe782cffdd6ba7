package oci

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestParseRevision(t *testing.T) {
	const sha = "0123456789abcdef0123456789abcdef01234567"
	tests := []struct {
		in, ref, commit string
		ok              bool
	}{
		{"main@sha1:" + sha, "main", sha, true},
		{"feature/x@sha1:" + sha, "feature/x", sha, true},
		{"sha1:" + sha, "", sha, true},
		{"main/" + sha, "main", sha, true},
		{sha, "", sha, true},
		{" 0123456789ABCDEF0123456789ABCDEF01234567 ", "", sha, true},
		{"v1.2.3", "", "", false},
		{"main@sha1:abc", "", "", false},
		{"", "", "", false},
	}
	for _, tt := range tests {
		ref, commit, ok := ParseRevision(tt.in)
		assert.Equal(t, tt.ok, ok, tt.in)
		assert.Equal(t, tt.ref, ref, tt.in)
		assert.Equal(t, tt.commit, commit, tt.in)
	}
}
