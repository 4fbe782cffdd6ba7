// Package bootstrapcheck decodes an Envoy bootstrap given on the command
// line (--config-yaml) as Envoy would: strictly against Envoy's protos,
// with Envoy's validation rules on the bootstrap and on every message
// packed in an Any. Envoy itself cannot be installed on these machines;
// this is what it checks first.
package bootstrapcheck

import (
	"strings"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	fileaccesslogv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/file/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	httpoptionsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"
	"sigs.k8s.io/yaml"
)

// The extensions a bootstrap of legate's names, so that protojson
// resolves their @type.
var (
	_ = fileaccesslogv3.FileAccessLog{}
	_ = routerv3.Router{}
	_ = httpoptionsv3.HttpProtocolOptions{}
	_ = hcmv3.HttpConnectionManager{}
	_ = tlsv3.UpstreamTlsContext{}
)

// Decode reads arg, the value of Envoy's --config-yaml, after the kubelet
// has expanded $(VAR) from env and $$ to $, and fails t unless Envoy would
// accept it.
func Decode(t testing.TB, arg string, env map[string]string) *bootstrapv3.Bootstrap {
	t.Helper()
	js, err := yaml.YAMLToJSON([]byte(Expand(arg, env)))
	require.NoError(t, err)
	var bs bootstrapv3.Bootstrap
	require.NoError(t, protojson.Unmarshal(js, &bs), "%s", js)
	require.NoError(t, bs.ValidateAll())
	validateAnys(t, bs.ProtoReflect())
	return &bs
}

// Expand does the kubelet's expansion of a container argument.
func Expand(s string, env map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i:], ')')
			if v, ok := env[s[i+2:i+end]]; end > 0 && ok {
				b.WriteString(v)
				i += end
				continue
			}
			b.WriteByte('$')
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// validateAnys unpacks every Any under m and runs its validation rules
// (PGV does not look inside an Any).
func validateAnys(t testing.TB, m protoreflect.Message) {
	t.Helper()
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Kind() != protoreflect.MessageKind && fd.Kind() != protoreflect.GroupKind {
			return true
		}
		each := func(msg protoreflect.Message) {
			if a, ok := msg.Interface().(*anypb.Any); ok {
				inner, err := a.UnmarshalNew()
				require.NoError(t, err, a.GetTypeUrl())
				v, ok := inner.(interface{ ValidateAll() error })
				require.True(t, ok, a.GetTypeUrl())
				require.NoError(t, v.ValidateAll(), a.GetTypeUrl())
				validateAnys(t, inner.ProtoReflect())
				return
			}
			validateAnys(t, msg)
		}
		switch {
		case fd.IsList():
			for i := 0; i < v.List().Len(); i++ {
				each(v.List().Get(i).Message())
			}
		case fd.IsMap():
			if fd.MapValue().Kind() == protoreflect.MessageKind {
				v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
					each(mv.Message())
					return true
				})
			}
		default:
			each(v.Message())
		}
		return true
	})
}
