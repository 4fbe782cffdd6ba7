package helm_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// A mistyped or ill-typed value is refused by values.schema.json at helm
// install instead of being ignored, naming the value.
func TestValuesSchemaRefusesMistakes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"unknown top-level key", map[string]any{"replica": 3}, "replica"},
		{"unknown nested key", map[string]any{"webhooks": map[string]any{"admision": false}}, "admision"},
		{"scope outside its enum", map[string]any{"scope": "namespaces"}, "scope"},
		{"replicas of the wrong type", map[string]any{"replicas": "two"}, "replicas"},
		{"a port out of range", map[string]any{"service": map[string]any{"xdsPort": 70000}}, "xdsPort"},
		{"an extra argument that is not a flag", map[string]any{"extraArgs": []any{"leader-elect"}}, "extraArgs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := renderChart(t, "legate-system", tc.values)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// Values the schema cannot relate are checked by the templates, each
// failure naming the value to change.
func TestValuesThatContradict(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"replicas without leader election", map[string]any{"replicas": 2, "leaderElection": map[string]any{"enabled": false}}, "leaderElection.enabled"},
		{"namespace scope without a namespace", map[string]any{"scope": "namespace"}, "needs watchNamespace"},
		{"a namespace with cluster scope", map[string]any{"watchNamespace": "team-a"}, "scope is cluster"},
		{"no PKI and no certificate", map[string]any{"pki": map[string]any{"enabled": false}}, "pki.existingSecret"},
		{"no PKI, webhooks without a certificate", map[string]any{"pki": map[string]any{"enabled": false, "existingSecret": "xds"}}, "webhooks.certSecret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := renderChart(t, "legate-system", tc.values)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// The chart's CRDs are config/crd's, byte for byte, and its ClusterRole
// has the rules of the generated config/rbac/role.yaml: make generate
// writes both, and this fails when someone forgets to run it.
func TestChartCarriesTheGeneratedFiles(t *testing.T) {
	want, err := filepath.Glob(filepath.Join("..", "..", "config", "crd", "*.yaml"))
	require.NoError(t, err)
	var crdNames []string
	for _, f := range want {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		crdNames = append(crdNames, filepath.Base(f))
		got, err := os.ReadFile(filepath.Join(chartDir, "crds", filepath.Base(f)))
		require.NoError(t, err, "charts/legate/crds lacks %s: run make generate", filepath.Base(f))
		assert.Equal(t, string(readFile(t, f)), string(got), "charts/legate/crds/%s differs from config/crd: run make generate", filepath.Base(f))
	}
	inChart, err := filepath.Glob(filepath.Join(chartDir, "crds", "*.yaml"))
	require.NoError(t, err)
	assert.Len(t, inChart, len(crdNames), "charts/legate/crds holds a CRD config/crd does not: run make generate")

	var role struct {
		Rules []map[string]any `json:"rules"`
	}
	require.NoError(t, yaml.Unmarshal(readFile(t, "..", "..", "config", "rbac", "role.yaml"), &role))
	require.NotEmpty(t, role.Rules)
	objs, err := renderChart(t, "legate-system", nil)
	require.NoError(t, err)
	cr := find(objs, "ClusterRole", "legate-legate-system")
	require.NotNil(t, cr, "rendered: %v", kinds(objs))
	var got struct {
		Rules []map[string]any `json:"rules"`
	}
	data, err := yaml.Marshal(cr.Object)
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(data, &got))
	assert.Equal(t, role.Rules, got.Rules, "the chart's ClusterRole differs from config/rbac/role.yaml: run make generate")
}

// With its defaults the chart installs what config/default does: the same
// image (Chart.yaml's appVersion is the kustomization's tag), every
// argument of the kustomize Deployment, the same Services and webhook
// configurations.
func TestDefaultsMatchKustomize(t *testing.T) {
	built, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join("..", "..", "config", "default"))
	require.NoError(t, err)
	objs, err := renderChart(t, "legate-system", nil)
	require.NoError(t, err)

	var km map[string]any
	for _, r := range built.Resources() {
		if r.GetKind() == "Deployment" && r.GetName() == "legate" {
			km, err = r.Map()
			require.NoError(t, err)
		}
	}
	require.NotNil(t, km, "config/default builds a Deployment legate")
	hd := find(objs, "Deployment", "legate")
	require.NotNil(t, hd, "rendered: %v", kinds(objs))

	kc, hc := container(t, km), container(t, hd.Object)
	assert.Equal(t, kc["image"], hc["image"], "the chart runs the image config/manager/kustomization.yaml names")
	assert.NotContains(t, hc["image"], ":latest")
	hargs := strings.Join(toStrings(hc["args"]), " ")
	for _, a := range toStrings(kc["args"]) {
		assert.Contains(t, hargs, a, "the chart's Deployment lacks an argument of config/manager")
	}

	for _, want := range []string{
		"Service/legate-xds", "Service/legate-webhook", "ServiceAccount/legate", "PodDisruptionBudget/legate",
		"MutatingWebhookConfiguration/legate-sidecar-injector", "ValidatingWebhookConfiguration/legate-validation",
		"ClusterRoleBinding/legate-legate-system",
	} {
		assert.Contains(t, kinds(objs), want)
	}
	inKustomize, err := filepath.Glob(filepath.Join("..", "..", "config", "crd", "legate.dev_*.yaml"))
	require.NoError(t, err)
	assert.Len(t, crds(t), len(inKustomize), "the chart installs another set of CRDs than config/crd")
}

// The switches turn what they name off: webhooks, leader election, the
// PKI, cluster scope.
func TestSwitches(t *testing.T) {
	objs, err := renderChart(t, "legate-system", map[string]any{
		"replicas": 1, "leaderElection": map[string]any{"enabled": false},
		"webhooks": map[string]any{"admission": false, "injection": false},
		"pki":      map[string]any{"enabled": false, "existingSecret": "legate-xds-files"},
		"scope":    "namespace", "watchNamespace": "team-a",
	})
	require.NoError(t, err)
	got := kinds(objs)
	for _, absent := range []string{
		"MutatingWebhookConfiguration/legate-sidecar-injector", "ValidatingWebhookConfiguration/legate-validation",
		"Service/legate-webhook", "PodDisruptionBudget/legate", "ClusterRoleBinding/legate-legate-system",
	} {
		assert.NotContains(t, got, absent)
	}
	args := toStrings(container(t, find(objs, "Deployment", "legate").Object)["args"])
	assert.Contains(t, args, "--namespace=team-a")
	assert.Contains(t, args, "--xds-client-ca=/etc/legate/xds/ca.crt")
	for _, a := range args {
		assert.False(t, strings.HasPrefix(a, "--webhook-addr") || strings.HasPrefix(a, "--pki-") || a == "--leader-elect", "%s is on", a)
	}
	var bindings []string
	for _, o := range objs {
		if o.GetKind() == "RoleBinding" {
			bindings = append(bindings, o.GetNamespace())
		}
	}
	slices.Sort(bindings)
	assert.Equal(t, []string{"legate-system", "team-a"}, bindings, "the role is granted in the watched namespace and the release's")

	objs, err = renderChart(t, "legate-system", map[string]any{"webhooks": map[string]any{"injection": false}})
	require.NoError(t, err)
	assert.NotContains(t, kinds(objs), "MutatingWebhookConfiguration/legate-sidecar-injector")
	assert.Contains(t, kinds(objs), "ValidatingWebhookConfiguration/legate-validation")
	assert.Contains(t, toStrings(container(t, find(objs, "Deployment", "legate").Object)["args"]), "--no-inject")
}

// Scheduling and resources reach the Pod as given.
func TestSchedulingValues(t *testing.T) {
	objs, err := renderChart(t, "ops", map[string]any{
		"nodeSelector": map[string]any{"kubernetes.io/arch": "arm64"},
		"tolerations":  []any{map[string]any{"key": "dedicated", "operator": "Exists"}},
		"affinity":     map[string]any{"nodeAffinity": map[string]any{}},
		"resources":    map[string]any{"requests": map[string]any{"cpu": "1"}},
		"image":        map[string]any{"repository": "registry.example/legate", "tag": "v9", "pullPolicy": "Always"},
	})
	require.NoError(t, err)
	d := find(objs, "Deployment", "legate")
	require.NotNil(t, d)
	assert.Equal(t, "ops", d.GetNamespace())
	spec := d.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	assert.Equal(t, map[string]any{"kubernetes.io/arch": "arm64"}, spec["nodeSelector"])
	assert.Len(t, spec["tolerations"], 1)
	assert.Equal(t, map[string]any{"nodeAffinity": map[string]any{}}, spec["affinity"])
	c := container(t, d.Object)
	assert.Equal(t, "registry.example/legate:v9", c["image"])
	assert.Equal(t, "Always", c["imagePullPolicy"])
	// Helm merges maps into the defaults: the memory request stays.
	assert.Equal(t, map[string]any{
		"requests": map[string]any{"cpu": "1", "memory": "128Mi"}, "limits": map[string]any{"memory": "512Mi"},
	}, c["resources"])
}
