package preview

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/legate-dev/legate/render"
)

// keyed is a repository holding key material both ways an author can
// inline it: an SDS Secret resource and a cluster's TLS context.
func keyed(key string) fstest.MapFS {
	return fstest.MapFS{
		"nodes/edge/sds.yaml": &fstest.MapFile{Data: []byte(fmt.Sprintf(`resources:
- "@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret
  name: server-cert
  tls_certificate:
    certificate_chain: {inline_string: "CERT-%[1]s"}
    private_key: {inline_string: "SDS-KEY-%[1]s"}
`, key))},
		// The quickstart's cluster with an inline client certificate.
		"nodes/edge/cds.yaml": &fstest.MapFile{Data: append(clusters("1s", "upstream").Data, fmt.Sprintf(
			"  transport_socket: {name: envoy.transport_sockets.tls, typed_config: {\"@type\": %s, sni: upstream-%s,"+
				" common_tls_context: {tls_certificates: [{certificate_chain: {inline_string: CERT-%[2]s}, private_key: {inline_bytes: %q}}]}}}\n",
			"type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext", key,
			base64.StdEncoding.EncodeToString([]byte("INLINE-KEY-"+key)))...)},
	}
}

func TestCompareNeverShowsKeyMaterial(t *testing.T) {
	r := Compare(renderFleet(t, keyed("one")), renderFleet(t, keyed("two")), Options{})
	require.Len(t, r.Nodes, 1)
	var kinds []string
	for _, tc := range r.Nodes[0].Types {
		kinds = append(kinds, tc.Type)
		assert.Equal(t, []string{map[string]string{"Cluster": "upstream", "Secret": "server-cert"}[tc.Type]}, tc.Changed)
	}
	assert.Equal(t, []string{"Cluster", "Secret"}, kinds)

	var text, js bytes.Buffer
	require.NoError(t, r.Text(&text))
	require.NoError(t, r.JSON(&js))
	for format, out := range map[string]string{"text": text.String(), "json": js.String(), "markdown": r.Markdown(0)} {
		for _, secret := range []string{"SDS-KEY", "SU5MSU5FLUtFWS", "INLINE-KEY"} {
			assert.NotContains(t, out, secret, "%s output shows key material", format)
		}
		assert.Contains(t, out, "server-cert", "%s output names the secret", format)
		// What is not secret still shows, so the check above is not
		// passing on an empty diff.
		assert.Contains(t, out, "upstream-two", format)
	}
	assert.Contains(t, text.String(), "Secret server-cert (changed): secret: key material not shown")
}

func TestResourceYAMLRedactsSensitiveFields(t *testing.T) {
	fleet := renderFleet(t, keyed("one"))
	cds := fleet.Nodes["edge"].Types[render.ClusterType].Resources[0]
	y := ResourceYAML(render.ClusterType, cds.Body)
	assert.Contains(t, y, "certificate_chain:")
	assert.Contains(t, y, "CERT-one", "a certificate is public")
	assert.NotContains(t, y, "private_key")
	assert.NotContains(t, y, "SU5MSU5FLUtFWS")

	sds := fleet.Nodes["edge"].Types[render.SecretType].Resources[0]
	assert.Equal(t, "# secret: key material not shown\n", ResourceYAML(render.SecretType, sds.Body))
	_, err := ResourceJSON(render.SecretType, sds.Body, protojson.MarshalOptions{})
	require.Error(t, err)
}
