package webhook

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

// The drain time is whole seconds from 0 to 3 600 (docs/injection.md):
// both ends are taken, one second past either is refused by name.
func TestDrainTimeBounds(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  time.Duration
		err   string
	}{
		{value: "0", want: 0},
		{value: "1", want: time.Second},
		{value: "3600", want: time.Hour},
		{value: "3601", err: `annotation legate.dev/shutdown-manager.drain-time: "3601": want whole seconds from 0 to 3600`},
		{value: "86400", err: `"86400": want whole seconds from 0 to 3600`},
		{value: "-1", err: `"-1": want whole seconds from 0 to 3600`},
		{value: "1.5", err: `"1.5": want whole seconds from 0 to 3600`},
		{value: "30s", err: `"30s": want whole seconds from 0 to 3600`},
	} {
		t.Run(tc.value, func(t *testing.T) {
			s, err := Parse(map[string]string{"legate.dev/node-id": "edge", "legate.dev/shutdown-manager.drain-time": tc.value})
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, s.DrainTime)
		})
	}
}

// A key under MARIN3R's prefix that neither legate nor MARIN3R knows is
// refused by name, as under legate's own: a typo must not be ignored.
func TestUnknownMARIN3RAnnotationIsRefused(t *testing.T) {
	for _, name := range []string{"marin3r.3scale.net/no-such-thing", "marin3r.3scale.net/colour", "legate.dev/no-such-thing"} {
		_, err := Parse(map[string]string{"legate.dev/node-id": "edge", name: "x"})
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "unknown annotation "+name+": want one of", name)
	}
	// Keys of other prefixes are not ours: ignored.
	s, err := Parse(map[string]string{"marin3r.3scale.net/node-id": "edge", "marin3r.example/no-such-thing": "x", "3scale.net/no-such-thing": "x"})
	require.NoError(t, err)
	assert.Equal(t, "edge", s.NodeID)
}

// A port is one a non-root Envoy may listen on: 1024 to 65535, both
// ends taken.
func TestPortBounds(t *testing.T) {
	for _, tc := range []struct {
		value string
		ok    bool
	}{
		{"1023", false}, {"1024", true}, {"65535", true}, {"65536", false},
	} {
		s, err := Parse(map[string]string{"legate.dev/node-id": "edge", "legate.dev/admin.port": tc.value})
		if !tc.ok {
			assert.ErrorContains(t, err, `annotation legate.dev/admin.port: "`+tc.value+`": want a port number from 1024 to 65535`)
			continue
		}
		require.NoError(t, err, tc.value)
		assert.Equal(t, tc.value, strconv.Itoa(int(s.AdminPort)))
	}
}

// A request may equal its limit (Guaranteed QoS); only above it is it
// refused.
func TestRequestMayEqualItsLimit(t *testing.T) {
	s, err := Parse(map[string]string{
		"legate.dev/node-id": "edge", "legate.dev/resources.requests.cpu": "500m", "legate.dev/resources.limits.cpu": "0.5",
		"legate.dev/resources.requests.memory": "128Mi", "legate.dev/resources.limits.memory": "128Mi",
	})
	require.NoError(t, err)
	assert.Equal(t, "500m", s.Resources.Requests.Cpu().String())
	_, err = Parse(map[string]string{"legate.dev/node-id": "edge", "legate.dev/resources.requests.memory": "129Mi", "legate.dev/resources.limits.memory": "128Mi"})
	assert.ErrorContains(t, err, "annotation legate.dev/resources.requests.memory: 129Mi is above legate.dev/resources.limits.memory (128Mi)")
}

// Every host port mapping is read, and each must be a port.
func TestHostPortMappings(t *testing.T) {
	s, err := Parse(map[string]string{
		"legate.dev/node-id": "edge", "legate.dev/ports": "http:8080,https:8443", "legate.dev/host-port-mappings": "http:18080, https:18443",
	})
	require.NoError(t, err)
	require.Len(t, s.Ports, 2)
	assert.Equal(t, int32(18080), s.Ports[0].HostPort)
	assert.Equal(t, int32(18443), s.Ports[1].HostPort)

	_, err = Parse(map[string]string{
		"legate.dev/node-id": "edge", "legate.dev/ports": "http:8080,https:8443", "legate.dev/host-port-mappings": "http:18080,https:443",
	})
	assert.ErrorContains(t, err, `annotation legate.dev/host-port-mappings: "443": want a port number from 1024 to 65535`)
	_, err = Parse(map[string]string{"legate.dev/node-id": "edge", "legate.dev/ports": "http:8080", "legate.dev/host-port-mappings": "http"})
	assert.ErrorContains(t, err, `annotation legate.dev/host-port-mappings: "http": want name:hostPort`)
}

// The injector's xDS port is 1 to 65535, both ends taken.
func TestInjectorXDSPortBounds(t *testing.T) {
	for port, ok := range map[string]bool{"0": false, "1": true, "65535": true, "65536": false} {
		err := Injector{XDSAddress: "legate-xds.legate-system.svc:" + port}.Check()
		if ok {
			assert.NoError(t, err, port)
		} else {
			assert.ErrorContains(t, err, `port "`+port+`": want 1 to 65535`)
		}
	}
}

// The pod's grace period makes room for the drain: a shorter one is
// raised, and with no drain (drain time 0) the API server's default is
// left alone rather than set to 0 (which would kill the pod at once).
func TestGracePeriodMakesRoomForTheDrain(t *testing.T) {
	pod := shopPod(map[string]string{"legate.dev/shutdown-manager.drain-time": "0"})
	_, _, err := testInjector().Inject(pod)
	require.NoError(t, err)
	assert.Nil(t, pod.Spec.TerminationGracePeriodSeconds, "no drain: the default stays")

	short := int64(10)
	pod = shopPod(map[string]string{"legate.dev/shutdown-manager.drain-time": "30"})
	pod.Spec.TerminationGracePeriodSeconds = &short
	_, _, err = testInjector().Inject(pod)
	require.NoError(t, err)
	assert.Equal(t, int64(30+drainMargin), *pod.Spec.TerminationGracePeriodSeconds)
}

// An image without a registry or repository path is read as well.
func TestPullPolicyOfShortNames(t *testing.T) {
	assert.Equal(t, corev1.PullIfNotPresent, pullPolicy("envoy:v1.36.2"))
	assert.Equal(t, corev1.PullAlways, pullPolicy("envoy"))
	assert.Equal(t, corev1.PullAlways, pullPolicy("localhost:5000/envoy"), "a registry's port is not a tag")
	assert.Equal(t, corev1.PullIfNotPresent, pullPolicy("localhost:5000/envoy:v1"))
}
