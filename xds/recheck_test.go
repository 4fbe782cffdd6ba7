package xds

import (
	"context"
	"errors"
	"sync"
	"testing"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// owners is a Recheck that lets streams receive the nodes of the owners
// it holds ("" for a node nobody owns).
type owners struct {
	mu      sync.Mutex
	allowed map[string]bool
	calls   int
}

func (o *owners) check(_ context.Context, _, owner string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls++
	if !o.allowed[owner] {
		return errors.New("owned by another namespace")
	}
	return nil
}

func (o *owners) set(owner string, ok bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.allowed[owner] = ok
}

func owned(t *testing.T, version, owner string) Snapshot {
	snap := clusterSnapshot(t, version, 1, 1)
	snap.Owner = owner
	return snap
}

// A stream opened on a node nobody owned yet is closed, before it receives
// anything, when another owner's snapshot arrives: the push re-checks the
// stream's right (state of the world and delta alike).
func TestPushRechecksTheStreamsRight(t *testing.T) {
	for _, kind := range []string{"sotw", "delta"} {
		t.Run(kind, func(t *testing.T) {
			o := &owners{allowed: map[string]bool{"": true, "team-b": true}}
			ts := startServer(t, Options{Recheck: o.check})
			var recv func() error
			switch kind {
			case "sotw":
				st := sotwStreamTo(t, ts.addr)
				require.NoError(t, st.Send(&discoveryv3.DiscoveryRequest{Node: testNode("pay-edge", "squatter"), TypeUrl: resourcev3.ClusterType}))
				recv = func() error {
					resp, err := st.Recv()
					if err == nil {
						t.Errorf("the stream received version %s of another owner", resp.GetVersionInfo())
					}
					return err
				}
			default:
				st := deltaStreamTo(t, ts.addr)
				require.NoError(t, st.Send(&discoveryv3.DeltaDiscoveryRequest{Node: testNode("pay-edge", "squatter"), TypeUrl: resourcev3.ClusterType}))
				recv = func() error {
					resp, err := st.Recv()
					if err == nil {
						t.Errorf("the stream received version %s of another owner", resp.GetSystemVersionInfo())
					}
					return err
				}
			}
			require.Eventually(t, func() bool { return len(ts.rec.find(isKind(Connected))) == 1 }, waitFor, pollEvery)

			require.NoError(t, ts.SetSnapshot("pay-edge", owned(t, "a1", "team-a")))
			err := refused(t, recv)
			assert.Equal(t, codes.PermissionDenied, status.Code(err), "got %v", err)
			require.Eventually(t, func() bool { return len(ts.rec.find(isKind(Disconnected))) == 1 }, waitFor, pollEvery)
			assert.Empty(t, ts.rec.find(isKind(ACK)), "the closed stream answered nothing")
			assert.Equal(t, 0, ts.Streams())
		})
	}
}

// A change of rights without a new snapshot (Reauthorize) closes the
// streams that lost them; the others keep their stream.
func TestReauthorizeClosesStreamsThatLostTheirRight(t *testing.T) {
	o := &owners{allowed: map[string]bool{"team-a": true, "team-b": true}}
	ts := startServer(t, Options{Recheck: o.check})
	require.NoError(t, ts.SetSnapshot("shared", owned(t, "s1", "team-a")))
	require.NoError(t, ts.SetSnapshot("kept", owned(t, "k1", "team-b")))

	shared := sotwStreamTo(t, ts.addr)
	require.NoError(t, shared.Send(&discoveryv3.DiscoveryRequest{Node: testNode("shared", "p1"), TypeUrl: resourcev3.ClusterType}))
	resp := recvTimeout(t, shared.Recv)
	require.Equal(t, "s1", resp.GetVersionInfo())
	kept := sotwStreamTo(t, ts.addr)
	require.NoError(t, kept.Send(&discoveryv3.DiscoveryRequest{Node: testNode("kept", "p2"), TypeUrl: resourcev3.ClusterType}))
	require.Equal(t, "k1", recvTimeout(t, kept.Recv).GetVersionInfo())

	o.set("team-a", false)
	ts.Reauthorize()
	err := refused(t, func() error { _, err := shared.Recv(); return err })
	assert.Equal(t, codes.PermissionDenied, status.Code(err))
	require.Eventually(t, func() bool { return ts.Streams() == 1 }, waitFor, pollEvery)

	// The stream that kept its right is served on.
	require.NoError(t, ts.SetSnapshot("kept", owned(t, "k2", "team-b")))
	assert.Equal(t, "k2", recvTimeout(t, kept.Recv).GetVersionInfo())
}

// Without a new snapshot or a Reauthorize, requests do not call Recheck
// again: the check costs one call per snapshot.
func TestRecheckOncePerSnapshot(t *testing.T) {
	o := &owners{allowed: map[string]bool{"team-a": true}}
	ts := startServer(t, Options{Recheck: o.check})
	require.NoError(t, ts.SetSnapshot("edge", owned(t, "v1", "team-a")))
	st := sotwStreamTo(t, ts.addr)
	require.NoError(t, st.Send(&discoveryv3.DiscoveryRequest{Node: testNode("edge", "p1"), TypeUrl: resourcev3.ClusterType}))
	resp := recvTimeout(t, st.Recv)
	require.NoError(t, st.Send(ack(resp)))
	require.Eventually(t, func() bool { return len(ts.rec.find(isKind(ACK))) == 1 }, waitFor, pollEvery)
	o.mu.Lock()
	calls := o.calls
	o.mu.Unlock()
	assert.Equal(t, 1, calls)
}
