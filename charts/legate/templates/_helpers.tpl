{{/* The labels every object of the release carries. */}}
{{- define "legate.labels" -}}
app.kubernetes.io/name: legate
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The Pods' selector: stable across upgrades (a Deployment's selector is immutable). */}}
{{- define "legate.selector" -}}
app.kubernetes.io/name: legate
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The image, tagged by the chart's appVersion unless image.tag says. */}}
{{- define "legate.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/*
Checks across values that the schema cannot express; each names the value
to change.
*/}}
{{- define "legate.check" -}}
{{- if and (gt (int .Values.replicas) 1) (not .Values.leaderElection.enabled) -}}
{{- fail "replicas > 1 needs leaderElection.enabled: true (one replica decides; without the Lease every replica would publish and roll back on its own)" -}}
{{- end -}}
{{- if and (eq .Values.scope "namespace") (not .Values.watchNamespace) -}}
{{- fail "scope: namespace needs watchNamespace (the namespace whose EnvoyConfigs and EnvoySources legate reconciles)" -}}
{{- end -}}
{{- if and (eq .Values.scope "cluster") .Values.watchNamespace -}}
{{- fail "watchNamespace is set but scope is cluster: set scope: namespace, or unset watchNamespace" -}}
{{- end -}}
{{- if and (not .Values.pki.enabled) (not .Values.pki.existingSecret) -}}
{{- fail "pki.enabled is false: set pki.existingSecret (tls.crt, tls.key, ca.crt of legate's xDS server), since xDS beyond loopback runs over mutual TLS only" -}}
{{- end -}}
{{- if and (not .Values.pki.enabled) (or .Values.webhooks.admission .Values.webhooks.injection) (not .Values.webhooks.certSecret) -}}
{{- fail "pki.enabled is false and a webhook is on: set webhooks.certSecret and webhooks.caBundle (the API server calls webhooks over TLS only), or turn webhooks.admission and webhooks.injection off" -}}
{{- end -}}
{{- end -}}
