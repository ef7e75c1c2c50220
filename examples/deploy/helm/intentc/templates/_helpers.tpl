{{/* intentc keeps its inventories, apply locks and leader-election Leases in this namespace (intentc/ir/reserved.py). */}}
{{- define "intentc.namespace" -}}
intentc-system
{{- end }}

{{/* The labels the kustomize base selects on: the Deployment's selector, so it is the same object either way. */}}
{{- define "intentc.selectorLabels" -}}
app.kubernetes.io/name: intentc
app.kubernetes.io/component: drift-daemon
{{- end }}

{{- define "intentc.labels" -}}
{{ include "intentc.selectorLabels" . }}
{{ include "intentc.releaseLabels" . }}
{{- end }}

{{/* Helm's labels, added to the base's own. */}}
{{- define "intentc.releaseLabels" -}}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{/*
The documents of one of the kustomize base's files (files/ links to them), by
kind: the RBAC rules and the admission policy have one source, the base.
Usage: include "intentc.baseDocument" (list . "files/role.yaml" "Role")
*/}}
{{- define "intentc.baseDocument" -}}
{{- $root := index . 0 }}{{ $file := index . 1 }}{{ $kind := index . 2 }}
{{- $found := dict }}
{{- range $doc := regexSplit "(?m)^---[ \t]*$" ($root.Files.Get $file) -1 }}
{{- $obj := fromYaml $doc }}
{{- if and $obj (eq (toString $obj.kind) $kind) }}{{ $_ := set $found "obj" $obj }}{{ end }}
{{- end }}
{{- if not $found.obj }}{{ fail (printf "%s holds no %s (files/ links to the kustomize base)" $file $kind) }}{{ end }}
{{- toYaml $found.obj }}
{{- end }}

{{/* The rules of the base's Role or ClusterRole, verbatim. */}}
{{- define "intentc.baseRules" -}}
{{- $obj := include "intentc.baseDocument" . | fromYaml }}
{{- if not $obj.rules }}{{ fail (printf "%s: the %s has no rules" (index . 1) (index . 2)) }}{{ end }}
{{- toYaml $obj.rules }}
{{- end }}

{{- define "intentc.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}
