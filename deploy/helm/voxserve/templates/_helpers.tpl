{{- define "voxserve.fullname" -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "voxserve.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{- define "voxserve.selector" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "voxserve.secretName" -}}
{{- default (include "voxserve.fullname" .) .Values.existingSecret -}}
{{- end -}}

{{/* The pod's termination grace: the preStop sleep, then the server's drain (VOXSERVE_SHUTDOWN_GRACE_S),
then 5 s for the process to exit. Derived when not set; a value set too short to drain is refused. */}}
{{- define "voxserve.terminationGrace" -}}
{{- $drain := .Values.env.VOXSERVE_SHUTDOWN_GRACE_S | default "10" | float64 | ceil | int -}}
{{- $needed := add (int .Values.preStopSleepSeconds) $drain 5 -}}
{{- $set := .Values.terminationGracePeriodSeconds -}}
{{- if and (not (kindIs "invalid" $set)) (lt (int $set) (int $needed)) -}}
{{- fail (printf "terminationGracePeriodSeconds %v is shorter than preStopSleepSeconds %v + VOXSERVE_SHUTDOWN_GRACE_S %v + 5 s to exit: set it to %v or more, or leave it unset to derive it" $set .Values.preStopSleepSeconds $drain $needed) -}}
{{- end -}}
{{- if kindIs "invalid" $set }}{{ $needed }}{{ else }}{{ int $set }}{{ end -}}
{{- end -}}

{{/* The API keys as VOXSERVE_API_KEYS takes them (comma-separated): each key once, none empty and none
with a comma or surrounding spaces, which the server would split or trim into another key. */}}
{{- define "voxserve.apiKeys" -}}
{{- $keys := .Values.apiKeys -}}
{{- if ne (len $keys) (len (uniq $keys)) -}}
{{- fail "apiKeys lists a key more than once" -}}
{{- end -}}
{{- range $keys -}}
{{- if or (not .) (contains "," .) (ne . (trim .)) -}}
{{- fail "an apiKeys entry is empty, has a comma, or has spaces around it" -}}
{{- end -}}
{{- end -}}
{{- join "," $keys -}}
{{- end -}}
