{{/*
Object names are fixed, as the kustomize overlays make them (namePrefix
bind-operator-): the operator is a cluster singleton and its flags
(--webhook-service-name, the webhook configuration names, the FlowSchema
subject) default to these names.
*/}}
{{- define "bind-operator.name" -}}
bind-operator-{{ . }}
{{- end }}

{{/* The labels the Deployment selects its pods by; never change them. */}}
{{- define "bind-operator.selectorLabels" -}}
control-plane: controller-manager
app.kubernetes.io/name: bind-operator
{{- end }}

{{/* Labels of every object. */}}
{{- define "bind-operator.labels" -}}
app.kubernetes.io/name: bind-operator
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of the operator's objects: the common ones and control-plane. */}}
{{- define "bind-operator.managerLabels" -}}
{{ include "bind-operator.labels" . }}
control-plane: controller-manager
{{- end }}

{{- define "bind-operator.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{- define "bind-operator.bindImage" -}}
{{ .Values.bindImage.repository }}:{{ .Values.bindImage.tag | default .Chart.AppVersion }}
{{- end }}

{{/*
bind-operator.quotaValue writes a quota value for its flag: a count as an
integer (a number from a values file arrives as a float), a byte quantity
such as 16Mi as it is.
*/}}
{{- define "bind-operator.quotaValue" -}}
{{- if kindIs "string" . }}{{ . }}{{ else }}{{ int64 . }}{{ end }}
{{- end }}

{{/* The Certificate that serves the webhooks (cert-manager mode). */}}
{{- define "bind-operator.servingCert" -}}
{{ include "bind-operator.name" "serving-cert" }}
{{- end }}

{{/*
bind-operator.generated returns, as a YAML list under "items", the documents
of a file copied from config/ by hack/sync-chart.sh (controller-gen's output,
several documents separated by ---).
*/}}
{{- define "bind-operator.generated" -}}
{{- $items := list }}
{{- range $doc := regexSplit "(?m)^---[ \t]*$" (.Files.Get .file) -1 }}
{{- $obj := fromYaml $doc }}
{{- if $obj.Error }}{{ fail (printf "%s: %s" $.file $obj.Error) }}{{ end }}
{{- if $obj }}{{ $items = append $items $obj }}{{ end }}
{{- end }}
{{- dict "items" $items | toYaml }}
{{- end }}
