package envoydeployment

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/webhook"
)

// Labels and annotations of the generated objects.
const (
	// InstanceLabel selects the pods of one EnvoyDeployment.
	InstanceLabel = "legate.dev/envoydeployment"
	// TemplateHashAnnotation is a hash of the pod template legate made, on
	// the template and on the workload: a change of it is a rollout.
	TemplateHashAnnotation = "legate.dev/template-hash"
	// namePrefix keeps the generated objects apart from the user's own of
	// the EnvoyDeployment's name (MARIN3R's examples run a Deployment
	// "kuard" beside an EnvoyDeployment "kuard").
	namePrefix = "envoy-"
)

// marin3rLabels are the pod labels MARIN3R gives an EnvoyDeployment's
// pods: Services written for MARIN3R select them, and keep doing so after
// the move.
func marin3rLabels(name string) map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":      "marin3r",
		"app.kubernetes.io/component": "envoy-deployment",
		"app.kubernetes.io/instance":  name,
	}
}

// Name is the name of every object generated for the EnvoyDeployment
// named edName.
func Name(edName string) string { return namePrefix + edName }

// Objects are what one EnvoyDeployment is made of. Workload is a
// *appsv1.Deployment or a *appsv1.DaemonSet; Service, PDB and HPA are nil
// when the spec asks for none.
type Objects struct {
	ServiceAccount *corev1.ServiceAccount
	Workload       client.Object
	Service        *corev1.Service
	PDB            *policyv1.PodDisruptionBudget
	HPA            *autoscalingv2.HorizontalPodAutoscaler
}

// All lists the objects that exist, the workload's dependencies first.
func (o Objects) All() []client.Object {
	out := []client.Object{o.ServiceAccount, o.Workload}
	if o.Service != nil {
		out = append(out, o.Service)
	}
	if o.PDB != nil {
		out = append(out, o.PDB)
	}
	if o.HPA != nil {
		out = append(out, o.HPA)
	}
	return out
}

// Build computes the objects of ed, whose proxies are node nodeID, with
// the Envoy container injector makes. An error names the field of ed at
// fault. Build is pure: the same input gives the same objects.
func Build(ed *v1alpha1.EnvoyDeployment, nodeID string, injector webhook.PodMutator) (Objects, error) {
	if err := checkName(ed.Name); err != nil {
		return Objects{}, err
	}
	if err := checkSpec(&ed.Spec); err != nil {
		return Objects{}, err
	}
	name := Name(ed.Name)
	selector := map[string]string{InstanceLabel: ed.Name}
	template, err := podTemplate(ed, nodeID, selector, injector)
	if err != nil {
		return Objects{}, err
	}
	meta := func(kind, apiVersion string) (metav1.TypeMeta, metav1.ObjectMeta) {
		return metav1.TypeMeta{Kind: kind, APIVersion: apiVersion}, metav1.ObjectMeta{
			Name: name, Namespace: ed.Namespace, Labels: commonLabels(ed.Name),
			OwnerReferences: []metav1.OwnerReference{ownerRef(ed)},
		}
	}
	var o Objects
	tm, om := meta("ServiceAccount", "v1")
	o.ServiceAccount = &corev1.ServiceAccount{TypeMeta: tm, ObjectMeta: om, AutomountServiceAccountToken: ptr.To(false)}

	patches := ed.Spec.Patch
	if patches == nil {
		patches = &v1alpha1.EnvoyDeploymentPatches{}
	}
	if mode(&ed.Spec) == v1alpha1.ModeDaemonSet {
		tm, om := meta("DaemonSet", "apps/v1")
		om.Annotations = map[string]string{TemplateHashAnnotation: template.Annotations[TemplateHashAnnotation]}
		ds := &appsv1.DaemonSet{TypeMeta: tm, ObjectMeta: om, Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: selector}, Template: template,
		}}
		if o.Workload, err = patched(ds, patches.DaemonSet, "spec.patch.daemonSet"); err != nil {
			return Objects{}, err
		}
	} else {
		tm, om := meta("Deployment", "apps/v1")
		om.Annotations = map[string]string{TemplateHashAnnotation: template.Annotations[TemplateHashAnnotation]}
		d := &appsv1.Deployment{TypeMeta: tm, ObjectMeta: om, Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: selector}, Template: template,
		}}
		// With an autoscaler the count is its to set: leaving it out of the
		// applied fields leaves it to the HPA.
		if r := ed.Spec.Replicas; r == nil || r.Dynamic == nil {
			d.Spec.Replicas = ptr.To[int32](1)
			if r != nil && r.Static != nil {
				d.Spec.Replicas = ptr.To(*r.Static)
			}
		}
		if o.Workload, err = patched(d, patches.Deployment, "spec.patch.deployment"); err != nil {
			return Objects{}, err
		}
		if r := ed.Spec.Replicas; r != nil && r.Dynamic != nil {
			tm, om := meta("HorizontalPodAutoscaler", "autoscaling/v2")
			if o.HPA, err = patched(hpa(tm, om, r.Dynamic), patches.HPA, "spec.patch.hpa"); err != nil {
				return Objects{}, err
			}
		}
	}
	if len(ed.Spec.Ports) > 0 {
		tm, om := meta("Service", "v1")
		if o.Service, err = patched(service(tm, om, &ed.Spec, selector), patches.Service, "spec.patch.service"); err != nil {
			return Objects{}, err
		}
	}
	if b := ed.Spec.PodDisruptionBudget; b != nil {
		tm, om := meta("PodDisruptionBudget", "policy/v1")
		pdb := &policyv1.PodDisruptionBudget{TypeMeta: tm, ObjectMeta: om, Spec: policyv1.PodDisruptionBudgetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: selector}, MinAvailable: b.MinAvailable, MaxUnavailable: b.MaxUnavailable,
		}}
		if o.PDB, err = patched(pdb, patches.PDB, "spec.patch.pdb"); err != nil {
			return Objects{}, err
		}
	}
	return o, nil
}

func mode(spec *v1alpha1.EnvoyDeploymentSpec) string {
	if spec.Mode != nil {
		return *spec.Mode
	}
	return v1alpha1.ModeDeployment
}

func commonLabels(edName string) map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":       "envoy",
		"app.kubernetes.io/component":  "envoy-deployment",
		"app.kubernetes.io/instance":   edName,
		"app.kubernetes.io/managed-by": "legate",
	}
}

func ownerRef(ed *v1alpha1.EnvoyDeployment) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: v1alpha1.GroupVersion.String(), Kind: "EnvoyDeployment", Name: ed.Name, UID: ed.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}
}

// checkName refuses a name whose generated objects could not be named:
// a Service's name is a DNS label of 63 characters at most.
func checkName(name string) error {
	if errs := validation.IsDNS1035Label(Name(name)); len(errs) > 0 {
		return fmt.Errorf("metadata.name %q: the generated objects are named %q, which %s: rename the EnvoyDeployment (at most %d characters, starting with a letter)",
			name, Name(name), strings.Join(errs, "; "), validation.DNS1035LabelMaxLength-len(namePrefix))
	}
	return nil
}

// checkSpec refuses what the API server's schema cannot: ports that clash
// with the proxy's own, and pod labels or annotations in legate's or
// MARIN3R's name space, which would change how the pods are served.
func checkSpec(spec *v1alpha1.EnvoyDeploymentSpec) error {
	admin := int32(webhook.DefaultAdminPort)
	if spec.AdminPort != nil {
		admin = *spec.AdminPort
	}
	seen := map[int32]string{admin: "the admin port", webhook.DefaultReadinessPort: "the readiness listener"}
	if admin == webhook.DefaultReadinessPort {
		return fmt.Errorf("spec.adminPort: %d is the readiness listener's port; choose another", admin)
	}
	for i, p := range spec.Ports {
		if what, taken := seen[p.Port]; taken {
			return fmt.Errorf("spec.ports[%d].port: %d is %s's; choose another", i, p.Port, what)
		}
		seen[p.Port] = fmt.Sprintf("spec.ports[%s]", p.Name)
	}
	for field, m := range map[string]map[string]string{"spec.podLabels": spec.PodLabels, "spec.podAnnotations": spec.PodAnnotations} {
		for k := range m {
			if strings.HasPrefix(k, "legate.dev/") || strings.HasPrefix(k, "marin3r.3scale.net/") {
				return fmt.Errorf("%s[%s]: keys under legate.dev/ and marin3r.3scale.net/ are legate's to set; use the EnvoyDeployment's fields", field, k)
			}
		}
	}
	return nil
}

func hpa(tm metav1.TypeMeta, om metav1.ObjectMeta, d *v1alpha1.DynamicReplicasSpec) *autoscalingv2.HorizontalPodAutoscaler {
	metrics := d.Metrics
	if len(metrics) == 0 {
		metrics = []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
			Name:   corev1.ResourceCPU,
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](80)},
		}}}
	}
	return &autoscalingv2.HorizontalPodAutoscaler{TypeMeta: tm, ObjectMeta: om, Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: om.Name},
		MinReplicas:    ptr.To(ptr.Deref(d.MinReplicas, 1)),
		MaxReplicas:    d.MaxReplicas,
		Metrics:        metrics,
		Behavior:       d.Behavior,
	}}
}

func service(tm metav1.TypeMeta, om metav1.ObjectMeta, spec *v1alpha1.EnvoyDeploymentSpec, selector map[string]string) *corev1.Service {
	svc := &corev1.Service{TypeMeta: tm, ObjectMeta: om, Spec: corev1.ServiceSpec{Selector: selector, Type: corev1.ServiceTypeClusterIP}}
	for _, p := range spec.Ports {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{
			Name: p.Name, Port: ptr.Deref(p.ServicePort, p.Port), TargetPort: intstr.FromString(p.Name),
			Protocol: ptr.Deref(p.Protocol, corev1.ProtocolTCP),
		})
	}
	s := spec.Service
	if s == nil {
		return svc
	}
	if s.Type != nil {
		svc.Spec.Type = *s.Type
	}
	if len(s.Annotations) > 0 {
		svc.Annotations = s.Annotations
	}
	for k, v := range s.Labels {
		if _, ours := svc.Labels[k]; !ours {
			svc.Labels[k] = v
		}
	}
	svc.Spec.LoadBalancerClass = s.LoadBalancerClass
	svc.Spec.LoadBalancerSourceRanges = s.LoadBalancerSourceRanges
	if s.ExternalTrafficPolicy != nil {
		svc.Spec.ExternalTrafficPolicy = *s.ExternalTrafficPolicy
	}
	return svc
}

// hashOf is a short hash of v's JSON.
func hashOf(v any) (string, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8]), nil
}
