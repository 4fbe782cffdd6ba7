package webhook

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/legate-dev/legate/pki"
	"github.com/legate-dev/legate/render"
)

// Injection is asked for by a Pod label: legate's, or MARIN3R's for pods
// migrating from it. Annotations under either prefix then say how.
const (
	InjectLabel   = "legate.dev/inject"
	MARIN3RLabel  = "marin3r.3scale.net/status"
	Enabled       = "enabled"
	legatePrefix  = "legate.dev/"
	marin3rPrefix = "marin3r.3scale.net/"
)

// Wants reports whether a Pod with these labels asks for a sidecar.
func Wants(labels map[string]string) bool {
	return labels[InjectLabel] == Enabled || labels[MARIN3RLabel] == Enabled
}

// Defaults of the sidecar, as MARIN3R has them where it has one.
const (
	DefaultContainerName = "envoy-sidecar"
	DefaultConfigVolume  = "envoy-sidecar-bootstrap"
	DefaultTLSVolume     = "envoy-sidecar-tls"
	DefaultAdminPort     = 9901
	// DefaultReadinessPort serves Envoy's /ready (and nothing else of the
	// admin) to the kubelet's probes on the pod IP.
	DefaultReadinessPort    = 9902
	DefaultAdminBindAddress = "127.0.0.1"
	DefaultAdminAccessLog   = "/dev/null"
	DefaultDrainTime        = 300 * time.Second
	DrainGradual            = "gradual"
	DrainImmediate          = "immediate"
	// ModeNative runs the sidecar as a native sidecar: an init container
	// with restartPolicy Always, started before every other container and
	// stopped after them (Kubernetes 1.29 and later).
	ModeNative = "native"
	// ModeClassic runs it as one more entry of the pod's containers, as
	// MARIN3R does.
	ModeClassic = "classic"
)

// Sidecar is what a Pod's annotations ask of its Envoy sidecar.
type Sidecar struct {
	NodeID, ClusterID string
	ContainerName     string
	// Image is empty when the annotations name none (the webhook's
	// default applies).
	Image     string
	Ports     []corev1.ContainerPort
	Resources corev1.ResourceRequirements
	ExtraArgs []string
	// Admin is Envoy's admin interface.
	AdminPort        int32
	AdminBindAddress string
	AdminAccessLog   string
	// ReadinessPort serves only Envoy's /ready, for the kubelet's probes.
	ReadinessPort int32
	// ConfigVolume is accepted for MARIN3R's annotations and unused: the
	// bootstrap is passed inline (--config-yaml).
	ConfigVolume string
	TLSVolume    string
	// ClientCertificate is the Secret holding the proxy's client
	// certificate for xDS; empty when the annotations name none
	// (SecretName).
	ClientCertificate string
	DrainTime         time.Duration
	DrainStrategy     string
	// Mode is ModeNative or ModeClassic, empty when the annotations name
	// none (the injector's default applies).
	Mode string
	// NoDrainHook leaves out the preStop drain (MARIN3R's
	// shutdown-manager.enabled: "false"): Envoy stops at SIGTERM.
	NoDrainHook bool
	// WaitForDrain are the pod's containers kept running for the drain
	// time when the pod stops (MARIN3R's
	// shutdown-manager.extra-lifecycle-hooks).
	WaitForDrain []string
}

// SecretName is the Secret the sidecar mounts its client certificate from:
// the one the client-certificate annotation names, else one per node ID
// (pki.ProxySecretName).
func (s Sidecar) SecretName() string {
	if s.ClientCertificate != "" {
		return s.ClientCertificate
	}
	return pki.ProxySecretName(s.NodeID)
}

// annotation is one setting a Pod may carry under either prefix.
type annotation struct {
	apply func(s *Sidecar, name, value string) error
}

var annotations = map[string]annotation{
	"node-id":                   {nodeID},
	"cluster-id":                {func(s *Sidecar, n, v string) error { return nonEmpty(&s.ClusterID, n, v) }},
	"container-name":            {func(s *Sidecar, n, v string) error { return dnsLabel(&s.ContainerName, n, v) }},
	"envoy-image":               {func(s *Sidecar, n, v string) error { return nonEmpty(&s.Image, n, v) }},
	"config-volume":             {func(s *Sidecar, n, v string) error { return dnsLabel(&s.ConfigVolume, n, v) }},
	"tls-volume":                {func(s *Sidecar, n, v string) error { return dnsLabel(&s.TLSVolume, n, v) }},
	"client-certificate":        {func(s *Sidecar, n, v string) error { return dnsSubdomain(&s.ClientCertificate, n, v) }},
	"ports":                     {parsePorts},
	"host-port-mappings":        {func(*Sidecar, string, string) error { return nil }}, // read with ports
	"envoy-extra-args":          {func(s *Sidecar, _, v string) error { s.ExtraArgs = strings.Fields(v); return nil }},
	"resources.requests.cpu":    {quantity(corev1.ResourceCPU, false)},
	"resources.requests.memory": {quantity(corev1.ResourceMemory, false)},
	"resources.limits.cpu":      {quantity(corev1.ResourceCPU, true)},
	"resources.limits.memory":   {quantity(corev1.ResourceMemory, true)},
	"admin.port":                {func(s *Sidecar, n, v string) error { return port(&s.AdminPort, n, v) }},
	"readiness-port":            {func(s *Sidecar, n, v string) error { return port(&s.ReadinessPort, n, v) }},
	"sidecar-mode": {func(s *Sidecar, n, v string) error {
		if v != ModeNative && v != ModeClassic {
			return fmt.Errorf("annotation %s: %q: want %s or %s", n, v, ModeNative, ModeClassic)
		}
		s.Mode = v
		return nil
	}},
	"admin.bind-address":          {adminBindAddress},
	"admin.access-log-path":       {func(s *Sidecar, n, v string) error { return absPath(&s.AdminAccessLog, n, v) }},
	"shutdown-manager.drain-time": {drainTime},
	"shutdown-manager.drain-strategy": {func(s *Sidecar, n, v string) error {
		if v != DrainGradual && v != DrainImmediate {
			return fmt.Errorf("annotation %s: %q: want %s or %s", n, v, DrainGradual, DrainImmediate)
		}
		s.DrainStrategy = v
		return nil
	}},
	// MARIN3R's: v3 is the only Envoy API left.
	"envoy-api-version": {func(_ *Sidecar, n, v string) error {
		if v != "v3" {
			return fmt.Errorf("annotation %s: %q: Envoy reads only its v3 API; set v3 or remove it", n, v)
		}
		return nil
	}},
	// MARIN3R's settings of components legate does not run
	// (annotations_marin3r.go).
	"shutdown-manager.enabled":               {shutdownManagerEnabled},
	"shutdown-manager.port":                  {unusedPort},
	"shutdown-manager.image":                 {unusedImage},
	"shutdown-manager.extra-lifecycle-hooks": {extraLifecycleHooks},
	"init-manager.image":                     {unusedImage},
	"discovery-service.name":                 {discoveryServiceName},
	// legate.dev/inject is a label; as an annotation it is tolerated.
	"inject": {func(*Sidecar, string, string) error { return nil }},
	// legate.dev/injected is the mark of an injected pod (Inject).
	"injected": {func(*Sidecar, string, string) error { return nil }},
}

// Parse reads the sidecar settings of a Pod's annotations, under
// legate.dev/ and marin3r.3scale.net/ alike (the same setting under both
// must agree). An unknown or malformed one is an error naming it.
func Parse(ann map[string]string) (Sidecar, error) {
	s := Sidecar{
		ContainerName: DefaultContainerName, ConfigVolume: DefaultConfigVolume, TLSVolume: DefaultTLSVolume,
		AdminPort: DefaultAdminPort, ReadinessPort: DefaultReadinessPort, AdminBindAddress: DefaultAdminBindAddress,
		AdminAccessLog: DefaultAdminAccessLog, DrainTime: DefaultDrainTime, DrainStrategy: DrainGradual,
	}
	seen := map[string]string{} // setting → annotation that set it
	for _, name := range slices.Sorted(maps.Keys(ann)) {
		var key string
		switch {
		case strings.HasPrefix(name, legatePrefix):
			key = strings.TrimPrefix(name, legatePrefix)
		case strings.HasPrefix(name, marin3rPrefix):
			key = strings.TrimPrefix(name, marin3rPrefix)
		default:
			continue
		}
		a, known := annotations[key]
		if !known {
			if key == "ads-configmap" {
				return Sidecar{}, fmt.Errorf("annotation %s: legate generates each sidecar's bootstrap; remove it", name)
			}
			if near := closest(key); near != "" {
				return Sidecar{}, fmt.Errorf("unknown annotation %s: did you mean %s%s?", name, name[:len(name)-len(key)], near)
			}
			return Sidecar{}, fmt.Errorf("unknown annotation %s: want one of %s under %s or %s", name, strings.Join(slices.Sorted(maps.Keys(annotations)), ", "), legatePrefix, marin3rPrefix)
		}
		if other, dup := seen[key]; dup {
			if ann[other] != ann[name] {
				return Sidecar{}, fmt.Errorf("annotations %s and %s disagree (%q, %q): keep one", other, name, ann[other], ann[name])
			}
			continue
		}
		seen[key] = name
		if err := a.apply(&s, name, ann[name]); err != nil {
			return Sidecar{}, err
		}
	}
	if s.NodeID == "" {
		return Sidecar{}, fmt.Errorf("annotation %snode-id is required: the node ID whose configuration the sidecar is served", legatePrefix)
	}
	if s.ClusterID == "" {
		s.ClusterID = s.NodeID
	}
	if name, ok := seen["host-port-mappings"]; ok {
		if err := hostPorts(&s, name, ann[name]); err != nil {
			return Sidecar{}, err
		}
	}
	if s.ReadinessPort == s.AdminPort {
		return Sidecar{}, fmt.Errorf("annotations %s and %s both name port %d (Envoy's admin and the sidecar's readiness port): move one", settingName(seen, "admin.port"), settingName(seen, "readiness-port"), s.AdminPort)
	}
	for _, p := range s.Ports {
		switch p.ContainerPort {
		case s.AdminPort:
			return Sidecar{}, fmt.Errorf("annotation %s: port %d is also Envoy's admin port (admin.port)", seen["ports"], p.ContainerPort)
		case s.ReadinessPort:
			return Sidecar{}, fmt.Errorf("annotation %s: port %d is also the sidecar's readiness port (readiness-port)", seen["ports"], p.ContainerPort)
		}
	}
	if err := requestsWithinLimits(s.Resources, seen); err != nil {
		return Sidecar{}, err
	}
	return s, nil
}

// closest is the known setting within a typo of key (at most two edits,
// and fewer than half its length), "" when none is.
func closest(key string) string {
	if len(key) > validation.LabelValueMaxLength {
		return "" // longer than the API server accepts: no guess
	}
	best, bestDist := "", 3
	for _, known := range slices.Sorted(maps.Keys(annotations)) {
		if d := render.EditDistance(key, known); d < bestDist && 2*d < len(key) {
			best, bestDist = known, d
		}
	}
	return best
}

// settingName is the annotation that set key, or legate's name of it
// (the default applies).
func settingName(seen map[string]string, key string) string {
	if name, ok := seen[key]; ok {
		return name
	}
	return legatePrefix + key
}

// requestsWithinLimits refuses a request above the limit of the same
// resource: the API server would refuse the pod with a message about a
// container the user did not write.
func requestsWithinLimits(r corev1.ResourceRequirements, seen map[string]string) error {
	for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, hasReq := r.Requests[res]
		limit, hasLimit := r.Limits[res]
		if hasReq && hasLimit && req.Cmp(limit) > 0 {
			return fmt.Errorf("annotation %s: %s is above %s (%s)", seen["resources.requests."+string(res)], req.String(), seen["resources.limits."+string(res)], limit.String())
		}
	}
	return nil
}

// nodeID reads a node ID its proxy's certificate can name.
func nodeID(s *Sidecar, name, v string) error {
	if err := pki.CheckNodeID(v); err != nil {
		return fmt.Errorf("annotation %s: %q: %w (a node ID is named in the proxy's certificate)", name, v, err)
	}
	s.NodeID = v
	return nil
}

func nonEmpty(dst *string, name, v string) error {
	if strings.TrimSpace(v) == "" {
		return fmt.Errorf("annotation %s is empty", name)
	}
	*dst = v
	return nil
}

func dnsLabel(dst *string, name, v string) error {
	if errs := validation.IsDNS1123Label(v); len(errs) > 0 {
		return fmt.Errorf("annotation %s: %q: %s", name, v, strings.Join(errs, "; "))
	}
	*dst = v
	return nil
}

func dnsSubdomain(dst *string, name, v string) error {
	if errs := validation.IsDNS1123Subdomain(v); len(errs) > 0 {
		return fmt.Errorf("annotation %s: %q: %s", name, v, strings.Join(errs, "; "))
	}
	*dst = v
	return nil
}

func absPath(dst *string, name, v string) error {
	if !strings.HasPrefix(v, "/") {
		return fmt.Errorf("annotation %s: %q: want an absolute path", name, v)
	}
	*dst = v
	return nil
}

// port reads a port number a non-root Envoy may listen on (1024–65535).
func port(dst *int32, name, v string) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1024 || n > 65535 {
		return fmt.Errorf("annotation %s: %q: want a port number from 1024 to 65535 (Envoy runs as non-root)", name, v)
	}
	*dst = int32(n)
	return nil
}

// parsePorts reads "name:port[:protocol],…".
func parsePorts(s *Sidecar, name, v string) error {
	names := map[string]bool{}
	for _, spec := range strings.Split(v, ",") {
		parts := strings.Split(strings.TrimSpace(spec), ":")
		if len(parts) < 2 || len(parts) > 3 {
			return fmt.Errorf("annotation %s: %q: want name:port[:protocol], comma-separated", name, spec)
		}
		p := corev1.ContainerPort{Name: parts[0], Protocol: corev1.ProtocolTCP}
		if errs := validation.IsValidPortName(p.Name); len(errs) > 0 {
			return fmt.Errorf("annotation %s: port name %q: %s", name, p.Name, strings.Join(errs, "; "))
		}
		if names[p.Name] {
			return fmt.Errorf("annotation %s: port name %q is used twice", name, p.Name)
		}
		names[p.Name] = true
		if err := port(&p.ContainerPort, name, parts[1]); err != nil {
			return err
		}
		if len(parts) == 3 {
			switch proto := corev1.Protocol(parts[2]); proto {
			case corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
				p.Protocol = proto
			default:
				return fmt.Errorf("annotation %s: protocol %q of port %s: want TCP, UDP or SCTP", name, parts[2], p.Name)
			}
		}
		s.Ports = append(s.Ports, p)
	}
	return nil
}

// hostPorts reads "name:hostPort,…" for ports declared in ports.
func hostPorts(s *Sidecar, name, v string) error {
	for _, spec := range strings.Split(v, ",") {
		portName, hostPort, ok := strings.Cut(strings.TrimSpace(spec), ":")
		if !ok {
			return fmt.Errorf("annotation %s: %q: want name:hostPort, comma-separated", name, spec)
		}
		i := slices.IndexFunc(s.Ports, func(p corev1.ContainerPort) bool { return p.Name == portName })
		if i < 0 {
			return fmt.Errorf("annotation %s: port %q is not in the ports annotation", name, portName)
		}
		if err := port(&s.Ports[i].HostPort, name, hostPort); err != nil {
			return err
		}
	}
	return nil
}

func quantity(res corev1.ResourceName, limit bool) func(*Sidecar, string, string) error {
	return func(s *Sidecar, name, v string) error {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return fmt.Errorf("annotation %s: %q is not a quantity (e.g. 100m, 128Mi)", name, v)
		}
		list := &s.Resources.Requests
		if limit {
			list = &s.Resources.Limits
		}
		if *list == nil {
			*list = corev1.ResourceList{}
		}
		(*list)[res] = q
		return nil
	}
}

func drainTime(s *Sidecar, name, v string) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > 3600 {
		return fmt.Errorf("annotation %s: %q: want whole seconds from 0 to 3600", name, v)
	}
	s.DrainTime = time.Duration(n) * time.Second
	return nil
}
