{{- define "cert-manager.labels" -}}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/part-of: platform
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end }}

{{- define "cert-manager.image" -}}
{{ .root.Values.global.imageRegistry }}/jetstack/cert-manager-{{ .name }}:{{ .root.Values.image.tag }}
{{- end }}
