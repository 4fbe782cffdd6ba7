package webhook

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/legate-dev/legate/pki"
)

// A MARIN3R-annotated Pod reads as MARIN3R meant it, with MARIN3R's
// defaults where it sets nothing; legate's prefix reads the same.
func TestParseMARIN3RAnnotations(t *testing.T) {
	s, err := Parse(map[string]string{
		"marin3r.3scale.net/node-id":                     "kuard",
		"marin3r.3scale.net/ports":                       "http:8080,https:8443:TCP,dns:5353:UDP",
		"marin3r.3scale.net/host-port-mappings":          "http:18080",
		"marin3r.3scale.net/envoy-image":                 "envoyproxy/envoy:v1.36.2",
		"marin3r.3scale.net/resources.requests.cpu":      "100m",
		"marin3r.3scale.net/resources.limits.memory":     "256Mi",
		"marin3r.3scale.net/envoy-extra-args":            "--component-log-level upstream:debug  --log-level info",
		"marin3r.3scale.net/envoy-api-version":           "v3",
		"marin3r.3scale.net/shutdown-manager.drain-time": "30",
		"kubectl.kubernetes.io/restartedAt":              "2026-11-25T00:00:00Z", // not ours: ignored
	})
	require.NoError(t, err)
	assert.Equal(t, "kuard", s.NodeID)
	assert.Equal(t, "kuard", s.ClusterID, "the cluster defaults to the node")
	assert.Equal(t, []corev1.ContainerPort{
		{Name: "http", ContainerPort: 8080, HostPort: 18080, Protocol: corev1.ProtocolTCP},
		{Name: "https", ContainerPort: 8443, Protocol: corev1.ProtocolTCP},
		{Name: "dns", ContainerPort: 5353, Protocol: corev1.ProtocolUDP},
	}, s.Ports)
	assert.Equal(t, "envoyproxy/envoy:v1.36.2", s.Image)
	assert.Equal(t, resource.MustParse("100m"), s.Resources.Requests[corev1.ResourceCPU])
	assert.Equal(t, resource.MustParse("256Mi"), s.Resources.Limits[corev1.ResourceMemory])
	assert.Empty(t, s.Resources.Limits[corev1.ResourceCPU], "no limit unless asked")
	assert.Equal(t, []string{"--component-log-level", "upstream:debug", "--log-level", "info"}, s.ExtraArgs)
	assert.Equal(t, 30*time.Second, s.DrainTime)
	assert.Equal(t, DrainGradual, s.DrainStrategy)
	assert.Equal(t, DefaultContainerName, s.ContainerName)
	assert.Empty(t, s.ClientCertificate, "no Secret named: one per node ID")
	assert.Equal(t, pki.ProxySecretName("kuard"), s.SecretName())
	assert.Equal(t, int32(DefaultReadinessPort), s.ReadinessPort)
	assert.Empty(t, s.Mode, "the injector's mode unless asked")
	assert.Equal(t, int32(DefaultAdminPort), s.AdminPort)
	assert.Equal(t, DefaultAdminBindAddress, s.AdminBindAddress, "admin stays on loopback unless asked")

	same, err := Parse(map[string]string{
		"legate.dev/node-id": "kuard", "legate.dev/cluster-id": "shop", "marin3r.3scale.net/node-id": "kuard",
		"legate.dev/client-certificate": "kuard-cert", "legate.dev/sidecar-mode": "classic", "legate.dev/readiness-port": "15021",
	})
	require.NoError(t, err)
	assert.Equal(t, "shop", same.ClusterID)
	assert.Equal(t, "kuard-cert", same.SecretName(), "the annotation names the Secret")
	assert.Equal(t, ModeClassic, same.Mode)
	assert.Equal(t, int32(15021), same.ReadinessPort)
}

// Every malformed or unknown annotation refuses the Pod with a message
// naming it.
func TestParseRefusesNamingTheAnnotation(t *testing.T) {
	for _, tc := range []struct {
		ann  map[string]string
		want string
	}{
		{map[string]string{}, "annotation legate.dev/node-id is required"},
		{map[string]string{"legate.dev/node-id": " "}, `annotation legate.dev/node-id: " ": must be printable ASCII without spaces`},
		{map[string]string{"legate.dev/node-id": "shop edge"}, `annotation legate.dev/node-id: "shop edge": must be printable ASCII without spaces`},
		{map[string]string{"legate.dev/node-id": "a", "legate.dev/colour": "red"}, "unknown annotation legate.dev/colour: want one of"},
		{map[string]string{"legate.dev/node-id": "a", "marin3r.3scale.net/ads-configmap": "x"}, "annotation marin3r.3scale.net/ads-configmap: legate generates each sidecar's bootstrap"},
		{map[string]string{"legate.dev/node-id": "a", "marin3r.3scale.net/node-id": "b"}, `annotations legate.dev/node-id and marin3r.3scale.net/node-id disagree ("a", "b")`},
		{map[string]string{"legate.dev/node-id": "a", "legate.dev/ports": "http"}, `annotation legate.dev/ports: "http": want name:port[:protocol]`},
		{map[string]string{"legate.dev/node-id": "a", "legate.dev/ports": "http:80"}, `annotation legate.dev/ports: "80": want a port number from 1024 to 65535`},
		{map[string]string{"legate.dev/node-id": "a", "legate.dev/ports": "http:8080:QUIC"}, `annotation legate.dev/ports: protocol "QUIC" of port http: want TCP, UDP or SCTP`},
		{map[string]string{"legate.dev/node-id": "a", "legate.dev/ports": "http:8080,http:8081"}, `port name "http" is used twice`},
		{map[string]string{"legate.dev/node-id": "a", "legate.dev/ports": "admin:9901"}, "port 9901 is also Envoy's admin port"},
		{map[string]string{"legate.dev/node-id": "a", "legate.dev/ports": "http:8080", "legate.dev/host-port-mappings": "https:8443"}, `annotation legate.dev/host-port-mappings: port "https" is not in the ports annotation`},
		{map[string]string{"legate.dev/node-id": "a", "legate.dev/resources.limits.cpu": "lots"}, `annotation legate.dev/resources.limits.cpu: "lots" is not a quantity`},
		{map[string]string{"legate.dev/node-id": "a", "legate.dev/container-name": "Envoy_1"}, `annotation legate.dev/container-name: "Envoy_1"`},
		{map[string]string{"legate.dev/node-id": "a", "legate.dev/admin.port": "abc"}, `annotation legate.dev/admin.port: "abc"`},
		{map[string]string{"legate.dev/node-id": "a", "legate.dev/admin.access-log-path": "log.txt"}, `want an absolute path`},
		{map[string]string{"legate.dev/node-id": "a", "legate.dev/shutdown-manager.drain-time": "-1"}, `want whole seconds from 0 to 3600`},
		{map[string]string{"legate.dev/node-id": "a", "legate.dev/shutdown-manager.drain-strategy": "slow"}, `"slow": want gradual or immediate`},
		{map[string]string{"legate.dev/node-id": "a", "marin3r.3scale.net/envoy-api-version": "v2"}, "Envoy reads only its v3 API"},
		{map[string]string{"legate.dev/node-id": "a", "legate.dev/sidecar-mode": "sidecar"}, `annotation legate.dev/sidecar-mode: "sidecar": want native or classic`},
		{map[string]string{"legate.dev/node-id": "a", "legate.dev/readiness-port": "9901"}, "annotations legate.dev/admin.port and legate.dev/readiness-port both name port 9901"},
		{map[string]string{"legate.dev/node-id": "a", "legate.dev/admin.port": "9902"}, "annotations legate.dev/admin.port and legate.dev/readiness-port both name port 9902"},
		{map[string]string{"legate.dev/node-id": "a", "legate.dev/readiness-port": "80"}, `annotation legate.dev/readiness-port: "80": want a port number`},
		{map[string]string{"legate.dev/node-id": "a", "legate.dev/ports": "ready:9902"}, "annotation legate.dev/ports: port 9902 is also the sidecar's readiness port (readiness-port)"},
		{map[string]string{"legate.dev/node-id": "a", "legate.dev/client-certificate": "Not_A_Name"}, `annotation legate.dev/client-certificate: "Not_A_Name"`},
		{map[string]string{"legate.dev/node-id": "a", "legate.dev/resources.requests.cpu": "2", "marin3r.3scale.net/resources.limits.cpu": "500m"}, "annotation legate.dev/resources.requests.cpu: 2 is above marin3r.3scale.net/resources.limits.cpu (500m)"},
	} {
		_, err := Parse(tc.ann)
		require.Error(t, err, "%v", tc.ann)
		assert.Contains(t, err.Error(), tc.want)
	}
}

func TestWants(t *testing.T) {
	assert.True(t, Wants(map[string]string{"legate.dev/inject": "enabled"}))
	assert.True(t, Wants(map[string]string{"marin3r.3scale.net/status": "enabled"}))
	assert.False(t, Wants(map[string]string{"legate.dev/inject": "disabled"}))
	assert.False(t, Wants(nil))
}
