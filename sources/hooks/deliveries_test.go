package hooks

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A captured, correctly signed delivery replayed to legate triggers
// nothing more; a forged one carrying the same ID cannot make legate ignore
// the genuine delivery.
func TestReplayedDeliveryTriggersOnce(t *testing.T) {
	cases := []struct {
		name    string
		handler func([]byte, Trigger) http.Handler
		body    []byte
		headers func(sig string) map[string]string
		id      string
	}{
		{"gitea", Gitea, giteaPush, func(sig string) map[string]string {
			return map[string]string{"X-Gitea-Event": "push", "X-Gitea-Signature": sig}
		}, "X-Gitea-Delivery"},
		{"github", GitHub, githubPush, func(sig string) map[string]string {
			return map[string]string{"X-GitHub-Event": "push", "X-Hub-Signature-256": "sha256=" + sig}
		}, "X-GitHub-Delivery"},
		{"gitlab", GitLab, gitlabPush, func(string) map[string]string {
			return map[string]string{"X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": string(secret)}
		}, "X-Gitlab-Event-UUID"},
		{"generic", Generic, genericPush, func(sig string) map[string]string {
			return map[string]string{GenericSignatureHeader: "sha256=" + sig}
		}, GenericDeliveryHeader},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var rec recorder
			h := tc.handler(secret, rec.trigger)
			send := func(key []byte, id string) int {
				req := httptest.NewRequest(http.MethodPost, "/hooks/"+tc.name, bytes.NewReader(tc.body))
				hs := tc.headers(sign(key, tc.body))
				if tc.name == "gitlab" {
					hs["X-Gitlab-Token"] = string(key)
				}
				for k, v := range hs {
					req.Header.Set(k, v)
				}
				req.Header.Set(tc.id, id)
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				return w.Code
			}
			assert.Equal(t, http.StatusUnauthorized, send(wrong, "d-1"), "forged")
			assert.Equal(t, http.StatusAccepted, send(secret, "d-1"), "the genuine delivery is not poisoned by the forged one")
			n := len(rec.got())
			require.Positive(t, n)
			assert.Equal(t, http.StatusOK, send(secret, "d-1"), "replay")
			assert.Len(t, rec.got(), n, "a replay triggers nothing")
			assert.Equal(t, http.StatusAccepted, send(secret, "d-2"), "a new delivery")
			assert.Len(t, rec.got(), 2*n)
		})
	}
}

func TestDeliveryLogIsBoundedInTimeAndSize(t *testing.T) {
	d := newDeliveries()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	assert.False(t, d.replayed("a", t0))
	assert.True(t, d.replayed("a", t0.Add(DeliveryWindow-time.Second)))
	assert.False(t, d.replayed("a", t0.Add(DeliveryWindow+time.Second)), "forgotten after the window")

	for i := range maxDeliveries + 50 {
		d.replayed(fmt.Sprintf("id-%d", i), t0.Add(time.Hour))
	}
	assert.LessOrEqual(t, len(d.at), maxDeliveries)
	assert.LessOrEqual(t, len(d.order), maxDeliveries)
	assert.True(t, d.replayed(fmt.Sprintf("id-%d", maxDeliveries+49), t0.Add(time.Hour)), "the newest are kept")
}
