package extensions_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/legate-dev/legate/render/internal/extensions"
)

func TestEveryAPIPackageRegisters(t *testing.T) {
	assert.Greater(t, extensions.Packages, 400)
	for _, name := range []protoreflect.FullName{
		"envoy.extensions.filters.http.router.v3.Router",
		"envoy.extensions.filters.network.kafka_broker.v3.KafkaBroker",
		"xds.type.v3.TypedStruct",
		"udpa.type.v1.TypedStruct",
		"envoy.extensions.filters.http.ext_authz.v3.ExtAuthz",
	} {
		_, err := protoregistry.GlobalTypes.FindMessageByName(name)
		assert.NoError(t, err, name)
	}
}
