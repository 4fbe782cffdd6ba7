package sources

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRedact(t *testing.T) {
	tests := []struct {
		name, in, want string
		known          []string
	}{
		{"plain", "route r1: cluster c1 not found", "route r1: cluster c1 not found", nil},
		{"known", "auth failed for s3cr3tvalue", "auth failed for [redacted]", []string{"s3cr3tvalue"}},
		{"url userinfo", "clone https://bob:hunter22@git.example/x.git", "clone https://[redacted]@git.example/x.git", nil},
		{"bearer", "Authorization: Bearer abc123def456", "Authorization: Bearer [redacted]", nil},
		{"prose", "basic authentication required for token exchange", "basic authentication required for token exchange", nil},
		{"github", "token ghp_0123456789abcdefghijABCDEFGHIJ used", "token [redacted] used", nil},
		{"gitlab", "glpat-AbCdEfGhIjKlMnOpQr1 leaked", "[redacted] leaked", nil},
		{"pair", "password=hunter2 user=bob", "password=[redacted] user=bob", nil},
		{"quoted pair", `api_key: "k3y-value"`, "api_key: [redacted]", nil},
		{"parser message", "listeners.yaml:3:7: unexpected token: expected '}'", "listeners.yaml:3:7: unexpected token: expected '}'", nil},
		{"pem", "key: -----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNz\n-----END OPENSSH PRIVATE KEY----- end", "key: [redacted] end", nil},
		{"truncated pem", "x -----BEGIN RSA PRIVATE KEY-----\nMIIE", "x [redacted]", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Redact(tt.in, tt.known...))
		})
	}
}

func TestStripUserinfo(t *testing.T) {
	u, user := StripUserinfo("https://bob:tok@example.com/r.git")
	assert.Equal(t, "https://example.com/r.git", u)
	require.NotNil(t, user)
	assert.Equal(t, "bob", user.Username())
	u, user = StripUserinfo("/srv/repo")
	assert.Equal(t, "/srv/repo", u)
	assert.Nil(t, user)
	u, user = StripUserinfo("git@example.com:org/repo.git")
	assert.Equal(t, "git@example.com:org/repo.git", u)
	assert.Nil(t, user)
}
