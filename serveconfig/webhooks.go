package serveconfig

import (
	"fmt"

	"github.com/legate-dev/legate/sources"
	"github.com/legate-dev/legate/sources/hooks"
)

// Secrets reads the configured webhook secrets; the home reads them once,
// at start. An error names the provider's field.
func (c WebhookConfig) Secrets() (hooks.Secrets, error) {
	var out hooks.Secrets
	for _, h := range []struct {
		name string
		sec  sources.Secret
		dst  *[]byte
	}{
		{"gitea", c.Gitea, &out.Gitea},
		{"github", c.GitHub, &out.GitHub},
		{"gitlab", c.GitLab, &out.GitLab},
		{"generic", c.Generic, &out.Generic},
	} {
		if !h.sec.IsSet() {
			continue
		}
		v, err := h.sec.Read()
		if err != nil {
			return out, fmt.Errorf("webhooks.%s: %w", h.name, err)
		}
		*h.dst = []byte(v)
	}
	return out, nil
}
