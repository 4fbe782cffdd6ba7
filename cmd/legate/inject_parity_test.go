package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/legate-dev/legate/controller"
	"github.com/legate-dev/legate/webhook"
)

// kuardDeployment is MARIN3R's examples/k8s/sidecars/kuard.yaml with every
// annotation MARIN3R's injector reads, apiVersion and all as MARIN3R's
// users have them.
const kuardDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: kuard
  namespace: shop
  labels: {app: kuard}
spec:
  replicas: 1
  selector:
    matchLabels: {app: kuard}
  template:
    metadata:
      labels:
        app: kuard
        marin3r.3scale.net/status: "enabled"
      annotations:
        marin3r.3scale.net/node-id: kuard
        marin3r.3scale.net/cluster-id: kuard-cluster
        marin3r.3scale.net/container-name: envoy-sidecar
        marin3r.3scale.net/ports: envoy-https:8443
        marin3r.3scale.net/host-port-mappings: envoy-https:8443
        marin3r.3scale.net/envoy-image: envoyproxy/envoy:v1.36.2
        marin3r.3scale.net/config-volume: envoy-sidecar-bootstrap
        marin3r.3scale.net/tls-volume: envoy-sidecar-tls
        marin3r.3scale.net/client-certificate: envoy-sidecar-client-cert
        marin3r.3scale.net/envoy-extra-args: "--component-log-level config:debug"
        marin3r.3scale.net/envoy-api-version: v3
        marin3r.3scale.net/discovery-service.name: instance
        marin3r.3scale.net/admin.port: "9901"
        marin3r.3scale.net/admin.bind-address: 127.0.0.1
        marin3r.3scale.net/admin.access-log-path: /dev/null
        marin3r.3scale.net/resources.requests.cpu: 50m
        marin3r.3scale.net/resources.limits.memory: 512Mi
        marin3r.3scale.net/shutdown-manager.enabled: "true"
        marin3r.3scale.net/shutdown-manager.port: "8090"
        marin3r.3scale.net/shutdown-manager.image: quay.io/3scale/marin3r:test
        marin3r.3scale.net/shutdown-manager.extra-lifecycle-hooks: kuard
        marin3r.3scale.net/shutdown-manager.drain-time: "60"
        marin3r.3scale.net/shutdown-manager.drain-strategy: gradual
        marin3r.3scale.net/init-manager.image: quay.io/3scale/marin3r:test
    spec:
      containers:
        - name: kuard
          image: gcr.io/kuar-demo/kuard-amd64:blue
          ports:
            - containerPort: 8080
              name: http
              protocol: TCP
`

// webhookPod admits pod through the admission handler legate controller
// serves with flags, and returns the Pod its patch makes.
func webhookPod(t *testing.T, pod *corev1.Pod, flags ...string) *corev1.Pod {
	t.Helper()
	var hooks webhookFlags
	fl := pflag.NewFlagSet("controller", pflag.ContinueOnError)
	hooks.register(fl)
	require.NoError(t, fl.Parse(append([]string{"--webhook-addr", "127.0.0.1:0"}, flags...)))
	var opts controller.Options
	require.NoError(t, hooks.apply(defaultControllerNamespace(), &opts))
	require.NotNil(t, opts.Injector)
	srv := &webhook.Server{Mutator: opts.Injector, Log: logr.Discard()}

	raw, err := json.Marshal(pod)
	require.NoError(t, err)
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID: "1", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Namespace: "shop",
			Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw},
		},
	})
	require.NoError(t, err)
	r := httptest.NewRequest(http.MethodPost, webhook.MutatePodsPath, bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	srv.Handler().ServeHTTP(w, r)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	var answer admissionv1.AdmissionReview
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &answer))
	require.True(t, answer.Response.Allowed, "%+v", answer.Response.Result)
	patch, err := jsonpatch.DecodePatch(answer.Response.Patch)
	require.NoError(t, err)
	patched, err := patch.Apply(raw)
	require.NoError(t, err)
	var out corev1.Pod
	require.NoError(t, json.Unmarshal(patched, &out))
	return &out
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	require.NoError(t, err)
	return string(data)
}

// legate inject prints, given the same flags, exactly the sidecar
// legate controller's webhook stores: same containers (the app's preStop
// wait included), init containers, volumes and grace period, byte for
// byte, with the defaults (requests and limits among them) and with every
// flag set; a MARIN3R Deployment with all MARIN3R's annotations is
// accepted as it is.
func TestInjectPrintsWhatTheWebhookStores(t *testing.T) {
	for name, flags := range map[string][]string{
		"defaults": nil,
		"flags": {
			"--sidecar-image", "registry.example/envoy:v1.36.2", "--sidecar-mode", "classic",
			"--sidecar-xds-address", "xds.example:18000", "--sidecar-xds-server-name", "legate.example",
			"--sidecar-requests", "cpu=20m,memory=32Mi", "--sidecar-limits", "cpu=1,memory=1Gi",
			"--sidecar-allow-admin-beyond-loopback",
		},
	} {
		t.Run(name, func(t *testing.T) {
			out, stderr, err := injectCLI(t, kuardDeployment, append([]string{"-f", "-"}, flags...)...)
			require.NoError(t, err, stderr)
			var deploy appsv1.Deployment
			require.NoError(t, yaml.UnmarshalStrict([]byte(out), &deploy))
			cli := deploy.Spec.Template

			var in appsv1.Deployment
			require.NoError(t, yaml.UnmarshalStrict([]byte(kuardDeployment), &in))
			hooked := webhookPod(t, &corev1.Pod{ObjectMeta: in.Spec.Template.ObjectMeta, Spec: in.Spec.Template.Spec}, flags...)

			assert.Equal(t, mustJSON(t, hooked.Spec.InitContainers), mustJSON(t, cli.Spec.InitContainers))
			assert.Equal(t, mustJSON(t, hooked.Spec.Containers), mustJSON(t, cli.Spec.Containers))
			assert.Equal(t, mustJSON(t, hooked.Spec.Volumes), mustJSON(t, cli.Spec.Volumes))
			assert.Equal(t, hooked.Spec.TerminationGracePeriodSeconds, cli.Spec.TerminationGracePeriodSeconds)
			assert.Equal(t, hooked.Labels, cli.Labels)
			assert.Equal(t, hooked.Annotations, cli.Annotations)

			all := append(cli.Spec.InitContainers, cli.Spec.Containers...)
			var sidecar *corev1.Container
			for i := range all {
				if all[i].Name == webhook.DefaultContainerName {
					sidecar = &all[i]
				}
			}
			require.NotNil(t, sidecar, "injected")
			if name == "defaults" {
				// The controller's default requests and limits, the
				// annotations winning per resource.
				assert.Equal(t, "50m", sidecar.Resources.Requests.Cpu().String())
				assert.Equal(t, "64Mi", sidecar.Resources.Requests.Memory().String())
				assert.Equal(t, "512Mi", sidecar.Resources.Limits.Memory().String())
				assert.Equal(t, "envoyproxy/envoy:v1.36.2", sidecar.Image, "the annotation wins")
			} else {
				assert.Equal(t, "50m", sidecar.Resources.Requests.Cpu().String())
				assert.Equal(t, "1", sidecar.Resources.Limits.Cpu().String())
			}
		})
	}
}
