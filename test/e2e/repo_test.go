package e2e

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/test/internal/gitrepo"
	"github.com/legate-dev/legate/test/internal/xdsyaml"
)

// newGitRepo creates a local Git repository on branch main for legate to
// follow.
func newGitRepo(t testing.TB) *gitrepo.Repo {
	t.Helper()
	return gitrepo.New(t, "legate e2e", "e2e@legate.invalid")
}

// The test configuration: proxyless gRPC clients dial xds:///greeter as
// node e2e. The listener routes every RPC to one of two EDS clusters,
// backend-a and backend-b, each with one endpoint on loopback.
const (
	nodeID       = "e2e"
	listenerName = "greeter"
	configFile   = "greeter.yaml"
)

// greeterConfig describes one commit of the configuration.
type greeterConfig struct {
	// route is the cluster every RPC goes to: "backend-a" or "backend-b".
	route string
	// staticB makes backend-b a STATIC cluster: valid for legate and
	// Envoy, rejected by grpc-go ("unsupported cluster type").
	staticB bool
	// invalid adds a field the Cluster message does not have, which the
	// renderer rejects.
	invalid bool
	// runtime adds an RTDS runtime layer, a type grpc-go never asks for.
	runtime bool
	// portA and portB are the backends' ports.
	portA, portB int
}

// files renders the configuration as the repository's files.
func (c greeterConfig) files() map[string]string {
	a := xdsyaml.EDSCluster("backend-a")
	if c.invalid {
		a = xdsyaml.WithField(a, "bogus_field", "3")
	}
	docs := []string{
		xdsyaml.APIListener(listenerName, "greeter", "greeter-routes"),
		xdsyaml.RouteConfiguration("greeter-routes", "greeter", xdsyaml.Route{Prefix: "", Cluster: c.route}),
		a,
		xdsyaml.Endpoints("backend-a", c.portA),
	}
	if c.staticB {
		docs = append(docs, xdsyaml.StaticCluster("backend-b", c.portB))
	} else {
		docs = append(docs, xdsyaml.EDSCluster("backend-b"), xdsyaml.Endpoints("backend-b", c.portB))
	}
	if c.runtime {
		docs = append(docs, `"@type": type.googleapis.com/envoy.service.runtime.v3.Runtime
name: greeter-runtime
layer:
  health_check:
    min_interval: 5
`)
	}
	return map[string]string{
		configFile:    xdsyaml.Join(docs...),
		"legate.yaml": "nodeIDs: [" + nodeID + "]\n",
	}
}

// lineOf returns the 1-based line of the first line of content holding
// substr.
func lineOf(t testing.TB, content, substr string) int {
	t.Helper()
	for i, l := range strings.Split(content, "\n") {
		if strings.Contains(l, substr) {
			return i + 1
		}
	}
	require.FailNow(t, "substring not found", "%q", substr)
	return 0
}
