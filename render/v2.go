package render

import (
	"strconv"
	"strings"
	"sync"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// v2Resources maps the v2 names of the xDS resource types to their v3 type
// URLs; other v2 types are matched to the v3 type of the same short name.
var v2Resources = map[string]string{
	"envoy.api.v2.Listener":                     ListenerType,
	"envoy.api.v2.RouteConfiguration":           RouteType,
	"envoy.api.v2.ScopedRouteConfiguration":     ScopedRouteType,
	"envoy.api.v2.route.VirtualHost":            VirtualHostType,
	"envoy.api.v2.Cluster":                      ClusterType,
	"envoy.api.v2.ClusterLoadAssignment":        EndpointType,
	"envoy.api.v2.auth.Secret":                  SecretType,
	"envoy.service.discovery.v2.Runtime":        RuntimeType,
	"envoy.api.v2.DiscoveryResponse":            discoveryResponseType,
	"envoy.config.bootstrap.v2.Bootstrap":       bootstrapType,
	"envoy.api.v2.core.TypedExtensionConfig":    ExtensionConfigType,
	"envoy.config.listener.v2.ApiListener":      "type.googleapis.com/envoy.config.listener.v3.ApiListener",
	"envoy.config.filter.http.router.v2.Router": routerTypeURL,
}

// isV2 reports whether a type URL names a type of Envoy's v2 API.
func isV2(url string) bool {
	name := url[strings.LastIndex(url, "/")+1:]
	return strings.HasPrefix(name, "envoy.") && (strings.Contains(name, ".v2.") || strings.Contains(name, ".v2alpha."))
}

// v3For returns the v3 type URL to use instead of a v2 one, or "".
func v3For(url string) string {
	name := url[strings.LastIndex(url, "/")+1:]
	if v3, ok := v2Resources[name]; ok {
		return v3
	}
	short := name[strings.LastIndex(name, ".")+1:]
	if c := v3ByShortName()[short]; len(c) == 1 {
		return "type.googleapis.com/" + c[0]
	}
	return ""
}

// v2Message says that v2 is gone and what to write instead.
func v2Message(url string) string {
	msg := strconv.Quote(url) + " is of Envoy's v2 API, which was removed (Envoy 1.18 reads only v3)"
	if v3 := v3For(url); v3 != "" {
		return msg + ": use " + v3
	}
	return msg + ": use the v3 type of this configuration"
}

var v3Short struct {
	once  sync.Once
	names map[string][]string
}

// v3ByShortName indexes the registered Envoy v3 messages by short name.
func v3ByShortName() map[string][]string {
	v3Short.once.Do(func() {
		v3Short.names = map[string][]string{}
		protoregistry.GlobalTypes.RangeMessages(func(mt protoreflect.MessageType) bool {
			full := string(mt.Descriptor().FullName())
			if strings.HasPrefix(full, "envoy.") && strings.Contains(full, ".v3.") {
				short := string(mt.Descriptor().Name())
				v3Short.names[short] = append(v3Short.names[short], full)
			}
			return true
		})
	})
	return v3Short.names
}
