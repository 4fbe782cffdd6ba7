package webhook

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// envoyUID is the envoy user of the official images.
const envoyUID = 101

// drainScript is the sidecar's preStop hook, run by bash with the admin
// address, port and drain time as $1, $2 and $3. It POSTs
// /drain_listeners?graceful to the admin interface (POST is required, so
// an httpGet hook cannot) through bash's /dev/tcp, then waits until Envoy
// holds no downstream connection or the drain time has passed. Envoy
// refreshes server.total_connections at every stats flush (5 s).
const drainScript = `admin() {
  exec 3<>"/dev/tcp/$1/$2" || return 1
  printf '%s %s HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\nConnection: close\r\n\r\n' "$3" "$4" >&3
  cat <&3
  exec 3<&-
}
admin "$1" "$2" POST '/drain_listeners?graceful' >/dev/null || exit 0
for ((i = 0; i < $3; i++)); do
  case "$(admin "$1" "$2" GET '/stats?filter=server.total_connections')" in
  *'server.total_connections: 0'*) exit 0 ;;
  esac
  sleep 1
done
`

// container is the Envoy sidecar for s. Fields the API server would
// default are written out, so that injecting an injected pod again gives
// the same pod.
func (in Injector) container(s Sidecar) (corev1.Container, error) {
	config, err := in.bootstrap(s)
	if err != nil {
		return corev1.Container{}, err
	}
	args := []string{
		"--config-yaml", config,
		"--disable-hot-restart",
		"--drain-time-s", strconv.Itoa(int(s.DrainTime.Seconds())),
		"--drain-strategy", s.DrainStrategy,
	}
	c := corev1.Container{
		Name:    s.ContainerName,
		Image:   s.Image,
		Command: []string{"envoy"},
		Args:    append(args, s.ExtraArgs...),
		Ports:   s.Ports,
		Env: []corev1.EnvVar{
			fieldEnv(podNameVar, "metadata.name"),
			fieldEnv(podNamespaceVar, "metadata.namespace"),
		},
		Resources:                s.Resources,
		VolumeMounts:             []corev1.VolumeMount{secretMount(s)},
		StartupProbe:             readyProbe(s, 1, 120),
		ReadinessProbe:           readyProbe(s, 5, 3),
		TerminationMessagePath:   corev1.TerminationMessagePathDefault,
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		ImagePullPolicy:          pullPolicy(s.Image),
		SecurityContext: &corev1.SecurityContext{
			RunAsUser:                ptr.To[int64](envoyUID),
			RunAsGroup:               ptr.To[int64](envoyUID),
			RunAsNonRoot:             ptr.To(true),
			AllowPrivilegeEscalation: ptr.To(false),
			ReadOnlyRootFilesystem:   ptr.To(true),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
	}
	if s.DrainTime > 0 && !s.NoDrainHook {
		c.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{
			"bash", "-c", drainScript, "drain",
			adminDialAddress(s), strconv.Itoa(int(s.AdminPort)), strconv.Itoa(int(s.DrainTime.Seconds())),
		}}}}
	}
	if s.Mode == ModeNative {
		c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	}
	return c, nil
}

func fieldEnv(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path},
	}}
}

// readyProbe asks the readiness listener for Envoy's /ready, which
// answers 200 once Envoy has its first listeners and clusters.
func readyProbe(s Sidecar, period, failures int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: readinessPath, Port: intstr.FromInt32(s.ReadinessPort), Scheme: corev1.URISchemeHTTP,
		}},
		TimeoutSeconds: 1, PeriodSeconds: period, SuccessThreshold: 1, FailureThreshold: failures,
	}
}

// pullPolicy is the API server's default: Always for :latest or no tag,
// IfNotPresent otherwise.
func pullPolicy(image string) corev1.PullPolicy {
	if strings.Contains(image, "@") {
		return corev1.PullIfNotPresent
	}
	_, tag, tagged := strings.Cut(image[strings.LastIndex(image, "/")+1:], ":")
	if !tagged || tag == "latest" {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}
