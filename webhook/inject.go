package webhook

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/legate-dev/legate/pki"
)

// DefaultImage is the Envoy the sidecar runs when neither the injector
// nor the pod names one: an official envoyproxy/envoy image, which has
// the bash the drain hook needs.
const DefaultImage = "envoyproxy/envoy:v1.36.2"

// DefaultXDSAddress is legate's xDS Service as config/ installs it.
const DefaultXDSAddress = "legate-xds.legate-system.svc:18000"

// InjectedAnnotation marks a pod legate injected; its value is the
// sidecar's container and volume ("container/volume"), which a second
// injection of the same pod removes before injecting again.
const InjectedAnnotation = legatePrefix + "injected"

// ProxyLabel marks a pod legate injected, so that the controller, which
// watches only such pods, issues its proxy's client certificate (into
// Sidecar.SecretName) once the API server has stored the pod.
const ProxyLabel = legatePrefix + "proxy"

// drainMargin is added to the drain time when the pod's grace period is
// shorter: the time the other containers get to stop (the default grace
// period) on top of Envoy's drain.
const drainMargin = 30

// Injector adds the Envoy sidecar a Pod asks for (Wants, Parse).
type Injector struct {
	// Image is the sidecar's image unless the pod's envoy-image
	// annotation names one (default DefaultImage).
	Image string
	// Resources are the sidecar's requests and limits where the pod's
	// annotations set none, per resource: an annotation wins.
	Resources corev1.ResourceRequirements
	// XDSAddress is host:port of legate's xDS Service (default
	// DefaultXDSAddress).
	XDSAddress string
	// XDSServerName is the name legate's server certificate must carry
	// (default: XDSAddress's host).
	XDSServerName string
	// Mode is ModeNative (default) or ModeClassic, unless the pod's
	// sidecar-mode annotation says.
	Mode string
	// AllowAdminBeyondLoopback lets a pod's admin.bind-address annotation
	// put Envoy's admin interface on an address other pods can reach; by
	// default only loopback addresses are accepted (adminscope.go).
	AllowAdminBeyondLoopback bool
}

// withDefaults fills the zero fields.
func (in Injector) withDefaults() Injector {
	if in.Image == "" {
		in.Image = DefaultImage
	}
	if in.XDSAddress == "" {
		in.XDSAddress = DefaultXDSAddress
	}
	if in.Mode == "" {
		in.Mode = ModeNative
	}
	return in
}

// Check reports what is wrong with the injector's own configuration.
func (in Injector) Check() error {
	in = in.withDefaults()
	var errs []error
	host, p, err := net.SplitHostPort(in.XDSAddress)
	if err != nil {
		errs = append(errs, fmt.Errorf("xDS address %q: want host:port", in.XDSAddress))
	} else {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			errs = append(errs, fmt.Errorf("xDS address %q: port %q: want 1 to 65535", in.XDSAddress, p))
		}
		if net.ParseIP(host) == nil && len(validation.IsDNS1123Subdomain(host)) > 0 {
			errs = append(errs, fmt.Errorf("xDS address %q: host %q is neither an IP address nor a DNS name", in.XDSAddress, host))
		}
	}
	if name := in.XDSServerName; name != "" && net.ParseIP(name) == nil && len(validation.IsDNS1123Subdomain(name)) > 0 {
		errs = append(errs, fmt.Errorf("xDS server name %q is neither an IP address nor a DNS name", name))
	}
	if in.Mode != ModeNative && in.Mode != ModeClassic {
		errs = append(errs, fmt.Errorf("sidecar mode %q: want %s or %s", in.Mode, ModeNative, ModeClassic))
	}
	if strings.TrimSpace(in.Image) != in.Image {
		errs = append(errs, fmt.Errorf("image %q has spaces", in.Image))
	}
	if err := requestsWithinLimits(in.Resources, map[string]string{
		"resources.requests.cpu": "default request", "resources.requests.memory": "default request",
		"resources.limits.cpu": "default limit", "resources.limits.memory": "default limit",
	}); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Inject adds the sidecar the pod asks for and reports whether it did.
// The pod is left untouched when it does not ask (Wants) and when Inject
// returns an error, which then names the annotation or field at fault.
//
// Injecting a pod Inject injected already gives the same pod again: the
// API server may call the webhook twice (reinvocationPolicy IfNeeded).
func (in Injector) Inject(pod *corev1.Pod) (Sidecar, bool, error) {
	if !Wants(pod.Labels) {
		return Sidecar{}, false, nil
	}
	if err := in.Check(); err != nil {
		return Sidecar{}, false, fmt.Errorf("legate's injector is misconfigured: %w", err)
	}
	in = in.withDefaults()
	s, err := Parse(pod.Annotations)
	if err != nil {
		return Sidecar{}, false, err
	}
	if err := in.checkAdminScope(pod.Annotations, s); err != nil {
		return Sidecar{}, false, err
	}
	if s.Mode == "" {
		s.Mode = in.Mode
	}
	if s.Image == "" {
		s.Image = in.Image
	}
	s.Resources = mergeResources(in.Resources, s.Resources)
	out := pod.DeepCopy()
	if err := removeInjected(out); err != nil {
		return Sidecar{}, false, err
	}
	if err := checkPod(out, s); err != nil {
		return Sidecar{}, false, err
	}
	c, err := in.container(s)
	if err != nil {
		return Sidecar{}, false, err
	}
	if s.Mode == ModeNative {
		out.Spec.InitContainers = append([]corev1.Container{c}, out.Spec.InitContainers...)
	} else {
		out.Spec.Containers = append(out.Spec.Containers, c)
	}
	out.Spec.Volumes = append(out.Spec.Volumes, tlsVolume(s))
	if err := addDrainWaits(out, s, annotationName(pod.Annotations, "shutdown-manager.extra-lifecycle-hooks")); err != nil {
		return Sidecar{}, false, err
	}
	grace := drainGrace(s)
	if grace > 0 && s.Mode == ModeNative && len(s.WaitForDrain) > 0 {
		// A native sidecar stops after the app containers: their wait
		// and then Envoy's drain run one after the other.
		grace += int64(s.DrainTime.Seconds())
	}
	if grace > 0 && (out.Spec.TerminationGracePeriodSeconds == nil || *out.Spec.TerminationGracePeriodSeconds < grace) {
		out.Spec.TerminationGracePeriodSeconds = &grace
	}
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[InjectedAnnotation] = s.ContainerName + "/" + s.TLSVolume
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	out.Labels[ProxyLabel] = "injected"
	*pod = *out
	return s, true, nil
}

// removeInjected takes out what an earlier injection added, as its mark
// records it.
func removeInjected(pod *corev1.Pod) error {
	mark, ok := pod.Annotations[InjectedAnnotation]
	if !ok {
		return nil
	}
	container, volume, found := strings.Cut(mark, "/")
	if !found || container == "" || volume == "" {
		return fmt.Errorf("annotation %s: %q: want container/volume, as legate writes it; remove it", InjectedAnnotation, mark)
	}
	named := func(c corev1.Container) bool { return c.Name == container }
	pod.Spec.InitContainers = slices.DeleteFunc(pod.Spec.InitContainers, named)
	pod.Spec.Containers = slices.DeleteFunc(pod.Spec.Containers, named)
	pod.Spec.Volumes = slices.DeleteFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == volume })
	delete(pod.Annotations, InjectedAnnotation)
	return nil
}

// checkPod refuses a pod the sidecar cannot join: one on the host's
// network, or whose containers, volumes or ports clash with the sidecar's.
func checkPod(pod *corev1.Pod, s Sidecar) error {
	if pod.Spec.HostNetwork {
		return errors.New("spec.hostNetwork is true: legate does not inject a sidecar into a pod on the node's network (its ports would be the node's); remove the injection label or hostNetwork")
	}
	for _, group := range []struct {
		field      string
		containers []corev1.Container
	}{{"initContainers", pod.Spec.InitContainers}, {"containers", pod.Spec.Containers}} {
		for _, c := range group.containers {
			if c.Name == s.ContainerName {
				return fmt.Errorf("spec.%s has a container named %q, the sidecar's name: rename it or name the sidecar otherwise with annotation %scontainer-name", group.field, c.Name, legatePrefix)
			}
			if err := checkPorts(group.field, c, s); err != nil {
				return err
			}
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if c.Name == s.ContainerName {
			return fmt.Errorf("spec.ephemeralContainers has a container named %q, the sidecar's name: name the sidecar otherwise with annotation %scontainer-name", c.Name, legatePrefix)
		}
	}
	for _, v := range pod.Spec.Volumes {
		if v.Name == s.TLSVolume {
			return fmt.Errorf("spec.volumes has a volume named %q, the sidecar's certificate volume: rename it or name the sidecar's otherwise with annotation %stls-volume", v.Name, legatePrefix)
		}
	}
	return nil
}

// checkPorts refuses a container listening on a port the sidecar takes:
// the pod's containers share one network namespace.
func checkPorts(field string, c corev1.Container, s Sidecar) error {
	type portKey struct {
		port  int32
		proto corev1.Protocol
	}
	taken := map[portKey]string{{s.AdminPort, corev1.ProtocolTCP}: "admin.port", {s.ReadinessPort, corev1.ProtocolTCP}: "readiness-port"}
	for _, p := range s.Ports {
		taken[portKey{p.ContainerPort, p.Protocol}] = "ports"
	}
	for _, p := range c.Ports {
		proto := p.Protocol
		if proto == "" {
			proto = corev1.ProtocolTCP
		}
		if setting, ok := taken[portKey{p.ContainerPort, proto}]; ok {
			return fmt.Errorf("spec.%s[%s] listens on port %d, which the sidecar takes (annotation %s%s): move one", field, c.Name, p.ContainerPort, legatePrefix, setting)
		}
	}
	return nil
}

// tlsVolume holds the proxy's client certificate and the SDS files its
// bootstrap reads.
func tlsVolume(s Sidecar) corev1.Volume {
	mode := int32(0o444)
	return corev1.Volume{Name: s.TLSVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: s.SecretName(), DefaultMode: &mode,
	}}}
}

// drainGrace is the grace period a pod needs for the sidecar to drain,
// 0 when it does not drain.
func drainGrace(s Sidecar) int64 {
	if s.DrainTime == 0 || s.NoDrainHook {
		return 0
	}
	return int64(s.DrainTime.Seconds()) + drainMargin
}

// annotationName is the annotation of the pod that set key: legate's when
// both prefixes carry it (Parse made sure they agree).
func annotationName(ann map[string]string, key string) string {
	if _, ok := ann[legatePrefix+key]; ok {
		return legatePrefix + key
	}
	return marin3rPrefix + key
}

// mergeResources takes the pod's requests and limits per resource and the
// defaults for the rest. Where a default would contradict the pod's own
// value (a default request above the pod's limit, a pod's request above
// the default limit), the pod's value sets both. A limit without a request
// is the request too, as the API server would default it.
func mergeResources(def, pod corev1.ResourceRequirements) corev1.ResourceRequirements {
	out := corev1.ResourceRequirements{}
	merge := func(def, pod corev1.ResourceList) corev1.ResourceList {
		if len(def) == 0 && len(pod) == 0 {
			return nil
		}
		list := corev1.ResourceList{}
		for name, q := range def {
			list[name] = q.DeepCopy()
		}
		for name, q := range pod {
			list[name] = q.DeepCopy()
		}
		return list
	}
	out.Requests, out.Limits = merge(def.Requests, pod.Requests), merge(def.Limits, pod.Limits)
	for name, req := range out.Requests {
		limit, ok := out.Limits[name]
		if !ok || req.Cmp(limit) <= 0 {
			continue
		}
		if _, podLimit := pod.Limits[name]; podLimit {
			out.Requests[name] = limit.DeepCopy()
		} else {
			out.Limits[name] = req.DeepCopy()
		}
	}
	for name, limit := range out.Limits {
		if _, ok := out.Requests[name]; !ok {
			if out.Requests == nil {
				out.Requests = corev1.ResourceList{}
			}
			out.Requests[name] = limit.DeepCopy()
		}
	}
	return out
}

// secretMount is where the sidecar reads its certificate.
func secretMount(s Sidecar) corev1.VolumeMount {
	return corev1.VolumeMount{Name: s.TLSVolume, MountPath: pki.ProxyMountDir, ReadOnly: true}
}
