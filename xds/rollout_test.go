package xds

import (
	"fmt"
	"testing"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/rollout"
)

// podsBySide picks pods whose bucket falls in a 10% share and pods whose
// bucket does not.
func podsBySide(node string, n int) (canaries, others []string) {
	for i := 0; len(canaries) < n || len(others) < n; i++ {
		pod := fmt.Sprintf("pod-%d", i)
		if rollout.InShare(rollout.ProxyBucket("", pod, node, ""), 1000) {
			if len(canaries) < n {
				canaries = append(canaries, pod)
			}
		} else if len(others) < n {
			others = append(others, pod)
		}
	}
	return canaries, others
}

// A node in rollout serves the candidate to the streams in the share and
// the stable snapshot to the others; a stream that reconnects keeps its
// side; ending the split puts the canaries back on the stable snapshot.
func TestSplitServesEachStreamItsSide(t *testing.T) {
	ts := startServer(t, Options{})
	stable := endpointSnapshot(t, "e1", 1, "a")
	cand := endpointSnapshot(t, "e2", 2, "a")
	split := stable
	split.Candidate, split.CandidateShare = &cand, 1000
	require.NoError(t, ts.SetSnapshot("n", split))
	canaries, others := podsBySide("n", 2)

	version := func(pod string) (string, *discoveryv3.DiscoveryResponse, discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesClient) {
		st := sotwStreamTo(t, ts.addr)
		require.NoError(t, st.Send(&discoveryv3.DiscoveryRequest{Node: testNode("n", pod), TypeUrl: resourcev3.EndpointType, ResourceNames: []string{"a"}}))
		r := recvTimeout(t, st.Recv)
		return r.GetVersionInfo(), r, st
	}
	for _, pod := range canaries {
		v, _, _ := version(pod)
		assert.Equal(t, "e2", v, "canary %s gets the candidate", pod)
		v, _, _ = version(pod)
		assert.Equal(t, "e2", v, "canary %s keeps its side on a new stream", pod)
	}
	var otherStream discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesClient
	for _, pod := range others {
		v, r, st := version(pod)
		assert.Equal(t, "e1", v, "proxy %s outside the share gets the stable snapshot", pod)
		require.NoError(t, st.Send(ack(r, "a")))
		otherStream = st
	}
	_, r, canary := version(canaries[0])
	require.NoError(t, canary.Send(ack(r, "a")))

	// The rollout ends in a rollback: the stable snapshot alone.
	require.NoError(t, ts.SetSnapshot("n", stable))
	back := recvTimeout(t, canary.Recv)
	assert.Equal(t, "e1", back.GetVersionInfo(), "the canary is put back on the stable snapshot")
	_ = otherStream

	// Promotion to every proxy.
	all := stable
	all.Candidate, all.CandidateShare = &cand, rollout.Buckets
	require.NoError(t, ts.SetSnapshot("n", all))
	assert.Equal(t, "e2", recvTimeout(t, otherStream.Recv).GetVersionInfo(), "a 100%% share takes everyone")
}

func TestSplitRefusesAnAmbiguousCandidate(t *testing.T) {
	ts := startServer(t, Options{})
	s := endpointSnapshot(t, "e1", 1, "a")
	same := s
	s.Candidate = &same
	err := ts.SetSnapshot("n", s)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "must have a version of its own")
}
