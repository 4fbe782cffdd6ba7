package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/legate-dev/legate/webhook"
)

// sidecarFlags are the injector's defaults. legate controller (its
// webhook) and legate inject register the same flags with the same
// defaults and build their webhook.Injector with the same function, so
// that given the same flags they inject the same sidecar.
type sidecarFlags struct {
	image, xdsAddress, xdsServerName, mode string
	requests, limits                       map[string]string
	adminBeyondLoopback                    bool
}

// Default requests and limits of an injected sidecar: enough for Envoy
// with a small configuration; a Pod's annotations win.
var (
	defaultSidecarRequests = map[string]string{"cpu": "100m", "memory": "64Mi"}
	defaultSidecarLimits   = map[string]string{"memory": "256Mi"}
)

func (f *sidecarFlags) register(fl *pflag.FlagSet) {
	fl.BoolVar(&f.adminBeyondLoopback, "sidecar-allow-admin-beyond-loopback", false, "let a pod's admin.bind-address annotation put its sidecar's Envoy admin interface (which can dump the configuration and stop the proxy) on an address other pods reach; by default only loopback addresses are accepted")
	fl.StringVar(&f.image, "sidecar-image", webhook.DefaultImage, "Envoy image of injected sidecars (a Pod's envoy-image annotation wins)")
	fl.StringVar(&f.xdsAddress, "sidecar-xds-address", "", "host:port injected sidecars dial for xDS (default legate-xds.<controller namespace>.svc:18000)")
	fl.StringVar(&f.xdsServerName, "sidecar-xds-server-name", "", "name legate's xDS certificate must carry for the sidecars (default: the host of --sidecar-xds-address)")
	fl.StringVar(&f.mode, "sidecar-mode", webhook.ModeNative, "how sidecars are injected unless a Pod says: native (an init container that starts first and stops last) or classic (an extra container)")
	fl.StringToStringVar(&f.requests, "sidecar-requests", copyMap(defaultSidecarRequests), "default resource requests of injected sidecars (cpu=…,memory=…); a Pod's annotations win")
	fl.StringToStringVar(&f.limits, "sidecar-limits", copyMap(defaultSidecarLimits), "default resource limits of injected sidecars")
}

// injector is the Injector the flags describe for a controller running in
// namespace (the default xDS address is its Service).
func (f *sidecarFlags) injector(namespace string) (webhook.Injector, error) {
	in := webhook.Injector{Image: f.image, XDSAddress: f.xdsAddress, XDSServerName: f.xdsServerName, Mode: f.mode, AllowAdminBeyondLoopback: f.adminBeyondLoopback}
	if in.XDSAddress == "" {
		in.XDSAddress = "legate-xds." + namespace + ".svc:18000"
	}
	var err error
	if in.Resources.Requests, err = resourceList("--sidecar-requests", f.requests); err != nil {
		return in, err
	}
	if in.Resources.Limits, err = resourceList("--sidecar-limits", f.limits); err != nil {
		return in, err
	}
	if err := in.Check(); err != nil {
		return in, fmt.Errorf("sidecar injection: %w", err)
	}
	return in, nil
}

// defaultControllerNamespace is --controller-namespace's default:
// $POD_NAMESPACE in a pod, else legate-system, where config/ installs it.
func defaultControllerNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	return "legate-system"
}

// resourceList reads cpu=…,memory=… of flag.
func resourceList(flag string, m map[string]string) (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	for k, v := range m {
		name := corev1.ResourceName(strings.TrimSpace(k))
		if name != corev1.ResourceCPU && name != corev1.ResourceMemory {
			return nil, fmt.Errorf("%s: resource %q: want cpu or memory", flag, k)
		}
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %s=%q is not a quantity (e.g. 100m, 128Mi)", flag, k, v)
		}
		out[name] = q
	}
	return out, nil
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
