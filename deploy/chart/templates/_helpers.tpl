{{/* Names and labels shared by every object of the release. */}}
{{- define "reconciler.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "reconciler.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* Selector of one role's pods: call with (list $ "mothership"). */}}
{{- define "reconciler.selector" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: {{ $root.Chart.Name }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{- define "reconciler.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end -}}

{{- define "reconciler.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities:
  drop: [ALL]
{{- end -}}

{{/* The writable places of a read-only root file system. */}}
{{- define "reconciler.scratchVolumes" -}}
- name: tmp
  emptyDir: {}
- name: cache
  emptyDir: {}
{{- end -}}

{{- define "reconciler.scratchMounts" -}}
- name: tmp
  mountPath: /tmp
- name: cache
  mountPath: /var/cache/reconciler
{{- end -}}

{{- define "reconciler.scheme" -}}
{{ if .Values.mothership.tls.enabled }}https{{ else }}http{{ end }}
{{- end -}}

{{/* By the cluster's version, not .Capabilities.APIVersions: offline renders (helm template,
reconciler template) list every version Helm knows, served or not. */}}
{{- define "reconciler.pdbApiVersion" -}}
{{ if semverCompare ">=1.21-0" .Capabilities.KubeVersion.Version }}policy/v1{{ else }}policy/v1beta1{{ end }}
{{- end -}}

{{/* Pod placement and pull secrets of one role: call with (list $ .Values.<role>). */}}
{{- define "reconciler.podPlacement" -}}
{{- $root := index . 0 -}}
{{- $role := index . 1 -}}
{{- with $root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $role.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $role.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $role.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* A role's ServiceAccount: call with (list $ name component automount). */}}
{{- define "reconciler.serviceAccount" -}}
{{- $root := index . 0 -}}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ index . 1 }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "reconciler.labels" $root | nindent 4 }}
    app.kubernetes.io/component: {{ index . 2 }}
{{- if not (index . 3) }}
automountServiceAccountToken: false
{{- end }}
{{- end -}}

{{/* The binding of a role's ClusterRole to its ServiceAccount (both named `name`): call with
(list $ name component). */}}
{{- define "reconciler.clusterRoleBinding" -}}
{{- $root := index . 0 -}}
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {{ index . 1 }}
  labels:
    {{- include "reconciler.labels" $root | nindent 4 }}
    app.kubernetes.io/component: {{ index . 2 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: {{ index . 1 }}
subjects:
  - kind: ServiceAccount
    name: {{ index . 1 }}
    namespace: {{ $root.Release.Namespace }}
{{- end -}}
