package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

const injectInput = `apiVersion: v1
kind: ConfigMap
metadata:
  name: untouched   # comments stay
data:
  a: "1"
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: shop
spec:
  selector: {matchLabels: {app: shop}}
  template:
    metadata:
      labels: {app: shop, legate.dev/inject: enabled}
      annotations: {legate.dev/node-id: shop-edge, legate.dev/ports: "http:8080"}
    spec:
      containers: [{name: shop, image: shop:1}]
---
apiVersion: v1
kind: Pod
metadata:
  name: not-asking
spec:
  containers: [{name: app, image: app:1}]
---
apiVersion: v1
kind: List
items:
  - apiVersion: batch/v1
    kind: CronJob
    metadata: {name: report}
    spec:
      schedule: "@daily"
      jobTemplate:
        spec:
          template:
            metadata:
              labels: {marin3r.3scale.net/status: enabled}
              annotations: {marin3r.3scale.net/node-id: reports}
            spec:
              restartPolicy: Never
              containers: [{name: report, image: report:1}]
`

// injectCLI runs legate inject with stdin and returns stdout and stderr.
func injectCLI(t *testing.T, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := newRootCommand()
	var out, errOut bytes.Buffer
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(append([]string{"inject"}, args...))
	err = cmd.Execute()
	return out.String(), errOut.String(), err
}

// TestInjectPrintsInjectedManifests reads several documents from stdin:
// the Deployment and the CronJob in a List are injected with the flags'
// settings, the ConfigMap and the pod that does not ask come out as read.
func TestInjectPrintsInjectedManifests(t *testing.T) {
	out, stderr, err := injectCLI(t, injectInput, "-f", "-", "--mode", "classic", "--image", "registry.example/envoy:v1.36.2",
		"--xds-address", "legate.example:18000", "--xds-server-name", "xds.legate.example")
	require.NoError(t, err, stderr)
	docs := strings.Split(out, "---\n")
	require.Len(t, docs, 4, out)
	assert.Equal(t, strings.Split(injectInput, "---\n")[0], docs[0], "other kinds pass through as written")
	assert.Equal(t, strings.Split(injectInput, "---\n")[2], docs[2], "a pod that does not ask passes through")

	var deploy appsv1.Deployment
	require.NoError(t, yaml.UnmarshalStrict([]byte(docs[1]), &deploy))
	containers := deploy.Spec.Template.Spec.Containers
	require.Len(t, containers, 2, "classic: one more container")
	sidecar := containers[1]
	assert.Equal(t, "envoy-sidecar", sidecar.Name)
	assert.Equal(t, "registry.example/envoy:v1.36.2", sidecar.Image)
	assert.Contains(t, sidecar.Args[1], `"address":"legate.example","port_value":18000`)
	assert.Contains(t, sidecar.Args[1], `"exact":"xds.legate.example"`)
	assert.Equal(t, "legate-proxy-shop-edge-", deploy.Spec.Template.Spec.Volumes[0].Secret.SecretName[:len("legate-proxy-shop-edge-")])

	var list corev1.List
	require.NoError(t, yaml.UnmarshalStrict([]byte(docs[3]), &list))
	require.Len(t, list.Items, 1)
	assert.Contains(t, string(list.Items[0].Raw), `"name":"envoy-sidecar"`, "the CronJob's pods are injected")
	assert.Contains(t, string(list.Items[0].Raw), `"secretName":"legate-proxy-reports-`, "the Secret of its node ID")

	// Its own output comes out the same.
	again, stderr, err := injectCLI(t, out, "-f", "-", "--mode", "classic", "--image", "registry.example/envoy:v1.36.2",
		"--xds-address", "legate.example:18000", "--xds-server-name", "xds.legate.example")
	require.NoError(t, err, stderr)
	assert.Equal(t, out, again)
}

func TestInjectReadsAFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "deploy.yaml")
	require.NoError(t, os.WriteFile(file, []byte(strings.Split(injectInput, "---\n")[1]), 0o600))
	out, stderr, err := injectCLI(t, "", "-f", file)
	require.NoError(t, err, stderr)
	var deploy appsv1.Deployment
	require.NoError(t, yaml.UnmarshalStrict([]byte(out), &deploy))
	require.Len(t, deploy.Spec.Template.Spec.InitContainers, 1, "native by default")
	assert.Equal(t, "envoyproxy/envoy:v1.36.2", deploy.Spec.Template.Spec.InitContainers[0].Image)
	assert.Contains(t, deploy.Spec.Template.Spec.InitContainers[0].Args[1], `"address":"legate-xds.legate-system.svc","port_value":18000`)
}

// An error names the document, its kind and name, and the annotation.
func TestInjectErrorsNameTheDocument(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{
		{
			strings.Replace(injectInput, `legate.dev/ports: "http:8080"`, `legate.dev/ports: "http"`, 1),
			`standard input: document 2 (Deployment shop): annotation legate.dev/ports: "http": want name:port[:protocol]`,
		},
		{
			strings.Replace(injectInput, `{marin3r.3scale.net/node-id: reports}`, `{marin3r.3scale.net/node-id: reports, marin3r.3scale.net/colour: red}`, 1),
			"document 4 (List items[0]: CronJob report): unknown annotation marin3r.3scale.net/colour",
		},
		{
			strings.Replace(injectInput, "containers: [{name: shop", "contaners: [{name: shop", 1),
			`document 2 (Deployment shop): spec.template: json: unknown field "contaners"`,
		},
		{"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {}\n", "document 1 (Deployment x): spec.template is missing"},
		{"- a list\n", "document 1: not a Kubernetes object"},
	} {
		_, _, err := injectCLI(t, tc.in, "-f", "-")
		require.Error(t, err)
		assert.Contains(t, err.Error(), tc.want)
	}
	_, _, err := injectCLI(t, injectInput, "-f", "-", "--xds-address", "legate")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `xDS address "legate": want host:port`)
	_, _, err = injectCLI(t, injectInput)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"filename" not set`)
}
