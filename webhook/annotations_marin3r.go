package webhook

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// MARIN3R's injector (3scale-ops/marin3r, pkg/webhooks/podv1mutator) reads
// a few settings of components legate does not have: a shutdown manager
// (a second container whose HTTP server drains Envoy), an init manager
// (an init container writing the bootstrap) and DiscoveryService objects
// (the xDS server's address). A MARIN3R workload must still be admitted
// unchanged once legate's webhook is installed with failurePolicy Fail, so
// each is read here, checked as MARIN3R would have needed it to be, and
// mapped to what legate does instead where there is an equivalent.

// shutdownManagerEnabled reads shutdown-manager.enabled. legate's sidecar
// drains by itself (its preStop hook POSTs /drain_listeners), so "true" is
// what it does anyway; "false" asks for MARIN3R's behaviour without a
// shutdown manager: no drain hook, Envoy stops at SIGTERM.
func shutdownManagerEnabled(s *Sidecar, name, v string) error {
	on, err := strconv.ParseBool(v)
	if err != nil {
		return fmt.Errorf("annotation %s: %q: want true or false", name, v)
	}
	s.NoDrainHook = !on
	return nil
}

// unusedPort checks a port legate has no use for (shutdown-manager.port:
// legate runs no shutdown manager server) as MARIN3R would have taken it,
// so that a typo does not pass for a setting.
func unusedPort(_ *Sidecar, name, v string) error {
	var p int32
	return port(&p, name, v)
}

// unusedImage checks an image legate has no use for (shutdown-manager.image,
// init-manager.image: legate runs neither container).
func unusedImage(_ *Sidecar, name, v string) error {
	if strings.TrimSpace(v) == "" || strings.ContainsAny(v, " \t\n") {
		return fmt.Errorf("annotation %s: %q: want an image reference (legate does not run it: the sidecar drains itself and its bootstrap is inline)", name, v)
	}
	return nil
}

// discoveryServiceName checks discovery-service.name, MARIN3R's
// DiscoveryService object in the pod's namespace. legate's sidecars dial
// the injector's xDS address whatever it names.
func discoveryServiceName(_ *Sidecar, name, v string) error {
	if errs := validation.IsDNS1123Subdomain(v); len(errs) > 0 {
		return fmt.Errorf("annotation %s: %q: %s", name, v, strings.Join(errs, "; "))
	}
	return nil
}

// extraLifecycleHooks reads shutdown-manager.extra-lifecycle-hooks: the
// pod's containers (by name, comma-separated) that must outlive Envoy's
// drain, usually the app the sidecar sends traffic to. Inject checks that
// they exist (Parse sees only annotations).
func extraLifecycleHooks(s *Sidecar, name, v string) error {
	for _, c := range strings.Split(v, ",") {
		c = strings.TrimSpace(c)
		if errs := validation.IsDNS1123Label(c); len(errs) > 0 {
			return fmt.Errorf("annotation %s: container name %q: %s", name, c, strings.Join(errs, "; "))
		}
		if slices.Contains(s.WaitForDrain, c) {
			return fmt.Errorf("annotation %s: container %q is named twice", name, c)
		}
		s.WaitForDrain = append(s.WaitForDrain, c)
	}
	return nil
}

// addDrainWaits gives each container s.WaitForDrain names a preStop hook
// that keeps it running for the drain time: MARIN3R's shutdown manager
// blocked those containers' preStop until Envoy had drained. Kubernetes'
// own sleep action needs nothing in the app's image; it cannot see Envoy's
// connections end early, so it waits the whole drain time. A container
// with a preStop hook of its own is refused (MARIN3R replaced it silently);
// a sleep hook, which an earlier injection may have added, is kept at the
// longer of the two so that injecting twice gives the same pod.
func addDrainWaits(pod *corev1.Pod, s Sidecar, annotation string) error {
	if len(s.WaitForDrain) == 0 {
		return nil
	}
	for _, name := range s.WaitForDrain {
		i := slices.IndexFunc(pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == name })
		if i < 0 {
			return fmt.Errorf("annotation %s: container %q is not in spec.containers", annotation, name)
		}
		if drainGrace(s) == 0 {
			continue // nothing drains: nothing to wait for
		}
		c := &pod.Spec.Containers[i]
		secs := int64(s.DrainTime.Seconds())
		if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
			pre := c.Lifecycle.PreStop
			if pre.Sleep == nil {
				return fmt.Errorf("annotation %s: spec.containers[%s] has a preStop hook of its own: legate would replace it with a wait for Envoy's drain; remove one", annotation, name)
			}
			secs = max(secs, pre.Sleep.Seconds)
		}
		if c.Lifecycle == nil {
			c.Lifecycle = &corev1.Lifecycle{}
		}
		c.Lifecycle.PreStop = &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: secs}}
	}
	return nil
}
