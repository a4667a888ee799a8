{{/* Name of the chart's objects (nameOverride wins); at most 63 characters. */}}
{{- define "istio.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels that select one part of the component; never change them (selectors are immutable).
     Call with (dict "ctx" $ "component" "<part>"). */}}
{{- define "istio.selectorLabels" -}}
app.kubernetes.io/name: {{ include "istio.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* All labels of an object. Call with (dict "ctx" $ "component" "<part>"). */}}
{{- define "istio.labels" -}}
{{ include "istio.selectorLabels" . }}
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
app.kubernetes.io/part-of: kyma
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .ctx.Chart.Name .ctx.Chart.Version | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Image reference from global.containerRegistry.path and an image map {name, tag}.
     Call with (dict "ctx" $ "image" .Values.<part>.image). */}}
{{- define "istio.image" -}}
{{- printf "%s/%s:%s" .ctx.Values.global.containerRegistry.path .image.name (toString .image.tag) }}
{{- end }}
