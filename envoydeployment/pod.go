package envoydeployment

import (
	"errors"
	"fmt"
	"maps"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/webhook"
)

// podTemplate is the proxies' pod: the injector's Envoy container, as an
// injected sidecar has it (bootstrap, client certificate volume, drain
// hook, grace period), given the EnvoyDeployment's settings through the
// annotations the injector reads, then the fields a gateway has and a
// sidecar does not (its ports, probes, scheduling).
//
// The template keeps the injector's annotations and its proxy label, so
// that legate issues each pod's certificate as it does for a sidecar, and
// drops the injection label: the pods come out of the template injected,
// and the admission webhook has nothing to add.
func podTemplate(ed *v1alpha1.EnvoyDeployment, nodeID string, selector map[string]string, injector webhook.PodMutator) (corev1.PodTemplateSpec, error) {
	spec := &ed.Spec
	ann := map[string]string{
		"legate.dev/node-id":        nodeID,
		"legate.dev/sidecar-mode":   webhook.ModeClassic,
		"legate.dev/container-name": containerName,
	}
	set := func(key string, v *string) {
		if v != nil {
			ann["legate.dev/"+key] = *v
		}
	}
	set("cluster-id", spec.ClusterID)
	set("envoy-image", spec.Image)
	set("admin.access-log-path", spec.AdminAccessLogPath)
	if spec.AdminPort != nil {
		ann["legate.dev/admin.port"] = strconv.Itoa(int(*spec.AdminPort))
	}
	if sm := spec.ShutdownManager; sm != nil {
		if sm.DrainTime != nil {
			ann["legate.dev/shutdown-manager.drain-time"] = strconv.FormatInt(*sm.DrainTime, 10)
		}
		set("shutdown-manager.drain-strategy", sm.DrainStrategy)
	}
	labels := maps.Clone(spec.PodLabels)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, marin3rLabels(ed.Name))
	maps.Copy(labels, selector)
	labels[webhook.InjectLabel] = webhook.Enabled

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: ann},
		Spec: corev1.PodSpec{
			ServiceAccountName:           Name(ed.Name),
			AutomountServiceAccountToken: ptr.To(false),
			Affinity:                     spec.Affinity,
			NodeSelector:                 spec.NodeSelector,
			Tolerations:                  spec.Tolerations,
			TopologySpreadConstraints:    spreadConstraints(spec.TopologySpreadConstraints, selector),
			SecurityContext:              spec.PodSecurityContext,
		},
	}
	if _, ok, err := injector.Inject(pod); err != nil {
		return corev1.PodTemplateSpec{}, fmt.Errorf("the Envoy container: %w", err)
	} else if !ok {
		return corev1.PodTemplateSpec{}, errors.New("the injector made no Envoy container")
	}
	delete(pod.Labels, webhook.InjectLabel)
	c := envoyContainer(pod)
	if c == nil {
		return corev1.PodTemplateSpec{}, errors.New("the injector made no container named " + containerName)
	}
	for _, p := range spec.Ports {
		c.Ports = append(c.Ports, corev1.ContainerPort{Name: p.Name, ContainerPort: p.Port, Protocol: ptr.Deref(p.Protocol, corev1.ProtocolTCP)})
	}
	c.Args = append(c.Args, spec.ExtraArgs...)
	if spec.Resources != nil {
		c.Resources = *spec.Resources.DeepCopy()
	}
	if spec.SecurityContext != nil {
		c.SecurityContext = spec.SecurityContext.DeepCopy()
	}
	if p := spec.ReadinessProbe; p != nil && c.ReadinessProbe != nil {
		timings(c.ReadinessProbe, p)
	}
	if p := spec.LivenessProbe; p != nil && c.ReadinessProbe != nil {
		// Envoy's /ready answers while it serves; a proxy that stops
		// answering it for the whole failure threshold is restarted.
		c.LivenessProbe = c.ReadinessProbe.DeepCopy()
		timings(c.LivenessProbe, p)
	}
	for k, v := range spec.PodAnnotations {
		pod.Annotations[k] = v
	}
	t := corev1.PodTemplateSpec{ObjectMeta: pod.ObjectMeta, Spec: pod.Spec}
	h, err := hashOf(t)
	if err != nil {
		return corev1.PodTemplateSpec{}, err
	}
	t.Annotations[TemplateHashAnnotation] = h
	return t, nil
}

// containerName is the Envoy container's name, as MARIN3R names an
// EnvoyDeployment's.
const containerName = "envoy"

func envoyContainer(pod *corev1.Pod) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == containerName {
			return &pod.Spec.Containers[i]
		}
	}
	return nil
}

func timings(dst *corev1.Probe, p *v1alpha1.ProbeSpec) {
	dst.InitialDelaySeconds = p.InitialDelaySeconds
	dst.TimeoutSeconds = p.TimeoutSeconds
	dst.PeriodSeconds = p.PeriodSeconds
	dst.SuccessThreshold = p.SuccessThreshold
	dst.FailureThreshold = p.FailureThreshold
}

// spreadConstraints gives a constraint without a selector the selector of
// this EnvoyDeployment's pods: spreading "them" is what it means.
func spreadConstraints(in []corev1.TopologySpreadConstraint, selector map[string]string) []corev1.TopologySpreadConstraint {
	if len(in) == 0 {
		return nil
	}
	out := make([]corev1.TopologySpreadConstraint, len(in))
	for i := range in {
		out[i] = *in[i].DeepCopy()
		if out[i].LabelSelector == nil {
			out[i].LabelSelector = &metav1.LabelSelector{MatchLabels: maps.Clone(selector)}
		}
	}
	return out
}
