package revisions_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/revisions"
)

// The platform's node is shared with the tenant team-a: its proxies are the
// owner's guests.
func platformOwns(string) string { return "platform" }

func own(ev revisions.ProxyEvent) revisions.ProxyEvent {
	ev.Tenant = "platform"
	return ev
}

func guest(ev revisions.ProxyEvent) revisions.ProxyEvent {
	ev.Tenant = "team-a"
	return ev
}

// sharedHarness publishes a first revision every proxy there accepts and a
// second one, and returns the second's publication.
func sharedHarness(t *testing.T, opts revisions.Options, connected ...revisions.ProxyEvent) (*harness, revisions.Publication) {
	h := newHarness(t, opts)
	h.apply(config("l1", "c1"), "sha1")
	p1 := h.pub.last(t)
	h.events(connected...)
	for _, c := range connected {
		a := ack(c.Proxy, p1)
		a.Tenant = c.Tenant
		h.events(a)
	}
	require.Equal(t, revisions.StateInSync, h.status().State)
	h.apply(config("l1", "c2"), "sha2")
	return h, h.pub.last(t)
}

// A guest's proxies decide nothing about the platform's configuration
// while a proxy of the platform's own answers for the node: they can
// neither hold back its rollback (by accepting what the platform's proxies
// reject) nor trigger it (by rejecting what they accept).
func TestGuestsDoNotDecideWhileTheOwnerHasProxies(t *testing.T) {
	t.Run("a guest's ACK does not hold back the rollback", func(t *testing.T) {
		h, p2 := sharedHarness(t, revisions.Options{TenantOf: platformOwns},
			own(connect("pod-a")), guest(connect("guest-1")))
		h.events(guest(ack("guest-1", p2)), own(nack("pod-a", p2, "cluster c2: bad")))

		st := h.status()
		assert.Equal(t, revisions.StateRollback, st.State)
		require.True(t, st.History[0].Tainted)
		assert.Equal(t, []revisions.ProxyRejection{{Proxy: "pod-a", Error: "cluster c2: bad"}}, st.History[0].Taint.Proxies)
		assert.Equal(t, 1, st.Answers.GuestsAside, "the guest is shown set aside")
	})
	t.Run("a guest's NACK does not trigger it", func(t *testing.T) {
		h, p2 := sharedHarness(t, revisions.Options{TenantOf: platformOwns, Threshold: 0.5},
			own(connect("pod-a")), guest(connect("guest-1")), guest(connect("guest-2")))
		h.events(guest(nack("guest-1", p2, "forged")), guest(nack("guest-2", p2, "forged")), own(ack("pod-a", p2)))

		st := h.status()
		assert.Equal(t, revisions.StateInSync, st.State)
		assert.False(t, st.History[0].Tainted)
		assert.Equal(t, revisions.AnswerCounts{Connected: 3, Accepted: 1, GuestsAside: 2}, st.Answers)
		assert.NotContains(t, h.lastOutcome().Description, "forged")
	})
	t.Run("the owner's proxy on another replica is enough", func(t *testing.T) {
		h, p2 := sharedHarness(t, revisions.Options{TenantOf: platformOwns}, guest(connect("guest-1")))
		h.e.ObserveRemote(context.Background(), node, "replica-b", revisions.RemoteAnswers{
			Version: p2.Version, Population: 1, Rejected: 1,
			Rejections: []revisions.ProxyRejection{{Proxy: "pod-b", Error: "bad"}},
		})
		h.events(guest(ack("guest-1", p2)))
		assert.Equal(t, revisions.StateRollback, h.status().State)
	})
	t.Run("a proxy whose credentials name no tenant is the owner's", func(t *testing.T) {
		h, p2 := sharedHarness(t, revisions.Options{TenantOf: platformOwns},
			connect("operator-pod"), guest(connect("guest-1")))
		h.events(guest(ack("guest-1", p2)), nack("operator-pod", p2, "bad"))
		assert.Equal(t, revisions.StateRollback, h.status().State)
	})
}

// A node the platform shares with tenants who alone run it is still judged
// on what their proxies answer.
func TestGuestsDecideWhenTheOwnerHasNoProxies(t *testing.T) {
	h, p2 := sharedHarness(t, revisions.Options{TenantOf: platformOwns},
		guest(connect("guest-1")), guest(connect("guest-2")))
	h.events(guest(nack("guest-1", p2, "cluster c2: bad")))
	assert.Equal(t, revisions.StatePending, h.status().State, "one guest has not answered yet")
	h.events(guest(nack("guest-2", p2, "cluster c2: bad")))

	st := h.status()
	assert.Equal(t, revisions.StateRollback, st.State)
	assert.Zero(t, st.Answers.GuestsAside)
	require.NotNil(t, st.History[0].Taint)
	assert.Len(t, st.History[0].Taint.Proxies, 2)
}

// Without Options.TenantOf (standalone) every proxy counts as the owner's.
func TestWithoutTenantsEveryProxyCounts(t *testing.T) {
	h, p2 := sharedHarness(t, revisions.Options{Threshold: 0.5},
		own(connect("pod-a")), guest(connect("guest-1")))
	h.events(guest(nack("guest-1", p2, "bad")), own(ack("pod-a", p2)))
	assert.Equal(t, revisions.StateRollback, h.status().State)
}
