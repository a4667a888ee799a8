{{- define "serverless.labels" -}}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/part-of: platform
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}
