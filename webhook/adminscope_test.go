package webhook

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A pod cannot put its sidecar's admin interface beyond loopback unless
// the injector allows it; the refusal names the annotation and the flag.
func TestAdminBindAddressStaysOnLoopback(t *testing.T) {
	for ann, want := range map[string]string{
		"legate.dev/admin.bind-address=0.0.0.0":          `annotation legate.dev/admin.bind-address: "0.0.0.0" is not a loopback address`,
		"legate.dev/admin.bind-address=10.244.0.7":       `"10.244.0.7" is not a loopback address`,
		"legate.dev/admin.bind-address=::":               `"::" is not a loopback address`,
		"marin3r.3scale.net/admin.bind-address=0.0.0.0":  `annotation marin3r.3scale.net/admin.bind-address: "0.0.0.0" is not a loopback address`,
		"legate.dev/admin.bind-address=localhost":        `"localhost" is not an IP address`,
		"legate.dev/admin.bind-address=127.0.0.1":        "",
		"legate.dev/admin.bind-address=127.0.0.2":        "",
		"legate.dev/admin.bind-address=::1":              "",
		"marin3r.3scale.net/admin.bind-address=::1":      "",
		"legate.dev/admin.bind-address=::ffff:127.0.0.1": "",
	} {
		k, v, _ := strings.Cut(ann, "=")
		pod := shopPod(map[string]string{k: v})
		_, injected, err := Injector{}.Inject(pod)
		if want == "" {
			require.NoError(t, err, ann)
			assert.True(t, injected, ann)
			continue
		}
		require.Error(t, err, ann)
		assert.Contains(t, err.Error(), want, ann)
		assert.False(t, injected, ann)
		if want != `"localhost" is not an IP address` {
			assert.Contains(t, err.Error(), "--sidecar-allow-admin-beyond-loopback", ann)
			_, injected, err = Injector{AllowAdminBeyondLoopback: true}.Inject(shopPod(map[string]string{k: v}))
			require.NoError(t, err, "opted in: %s", ann)
			assert.True(t, injected, ann)
		}
	}
}
