{{/* Names and labels. */}}
{{- define "mas.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "mas.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* selector labels of one app: (dict "root" $ "app" "api") */}}
{{- define "mas.selector" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .app }}
{{- end -}}

{{- define "mas.secretName" -}}
{{- default (printf "%s-secrets" (include "mas.fullname" .)) .Values.secrets.existingSecret -}}
{{- end -}}

{{- define "mas.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "mas.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "mas.image" -}}
{{ .Values.image.repository }}:{{ default .Chart.AppVersion .Values.image.tag }}
{{- end -}}

{{/* The secret keys the apps read: name -> required (libs/config/src/config.ts). */}}
{{- define "mas.secretKeys" -}}
DATABASE_URL: true
MAS_MASTER_KEY: true
MAS_API_KEY_PEPPER: true
MAS_PAYLOAD_KEYS: true
MAS_PAYLOAD_KEY_CURRENT: false
MAS_CODEC_TOKEN: false
{{- end -}}

{{/*
The environment of every app and of the migrations Job: settings as values, secrets by reference
(never a secret value in a pod spec). (dict "root" $ "app" "api" "extra" .Values.api.extraEnv)
*/}}
{{- define "mas.env" -}}
{{- $v := .root.Values -}}
- name: MALLOC_ARENA_MAX
  value: "2"
- name: LOG_FORMAT
  value: json
- name: LOG_LEVEL
  value: {{ $v.config.logLevel | quote }}
- name: PORT
  value: {{ $v.api.port | quote }}
- name: PUBLIC_BASE_URL
  value: {{ $v.config.publicBaseUrl | quote }}
- name: KAFKA_BROKERS
  value: {{ required "kafka.brokers is required" $v.kafka.brokers | quote }}
- name: KAFKA_GROUP_PREFIX
  value: {{ $v.config.kafkaGroupPrefix | quote }}
- name: TEMPORAL_ADDRESS
  value: {{ required "temporal.address is required" $v.temporal.address | quote }}
- name: TEMPORAL_NAMESPACE
  value: {{ $v.temporal.namespace | quote }}
- name: TEMPORAL_TASK_QUEUE
  value: {{ $v.config.taskQueue | quote }}
{{- with $v.config.temporalUiUrl }}
- name: TEMPORAL_UI_URL
  value: {{ . | quote }}
{{- end }}
{{- with $v.config.otlpEndpoint }}
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ . | quote }}
{{- end }}
{{- with $v.config.fetchUrlAllowHosts }}
- name: FETCH_URL_ALLOW_HOSTS
  value: {{ . | quote }}
{{- end }}
{{- with $v.config.webhookAllowHosts }}
- name: WEBHOOK_ALLOW_HOSTS
  value: {{ . | quote }}
{{- end }}
- name: RECONCILER_INTERVAL_SECONDS
  value: {{ $v.config.reconcilerIntervalSeconds | quote }}
- name: API_MAX_RUNS_IN_FLIGHT
  value: {{ $v.config.apiMaxRunsInFlight | quote }}
- name: API_RUN_WAIT_MS
  value: {{ $v.config.apiRunWaitMs | quote }}
- name: WORKER_METRICS_PORT
  value: {{ $v.worker.metricsPort | quote }}
- name: TEMPORAL_SDK_METRICS_PORT
  value: {{ $v.worker.sdkMetricsPort | quote }}
- name: RELAY_METRICS_PORT
  value: {{ $v.relay.metricsPort | quote }}
- name: PROJECTOR_METRICS_PORT
  value: {{ $v.projector.metricsPort | quote }}
{{- range $name, $value := $v.config.extraEnv }}
- name: {{ $name }}
  value: {{ $value | quote }}
{{- end }}
{{- range $name, $value := .extra }}
- name: {{ $name }}
  value: {{ $value | quote }}
{{- end }}
{{- $secret := include "mas.secretName" .root }}
{{- range $name, $required := include "mas.secretKeys" .root | fromYaml }}
- name: {{ $name }}
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: {{ $name }}
      {{- if not $required }}
      optional: true
      {{- end }}
{{- end }}
{{- range $v.secrets.extraKeys }}
- name: {{ . }}
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: {{ . }}
{{- end }}
{{- end -}}

{{/* Node's arguments for one app, as scripts/app-process.mjs starts it. */}}
{{- define "mas.command" -}}
- node
{{- range (splitList " " .nodeOptions) }}
{{- if . }}
- {{ . | quote }}
{{- end }}
{{- end }}
- --import
- ./dist/libs/observability/src/source-maps.js
- dist/apps/{{ .app }}/src/main.js
{{- end -}}

{{- define "mas.volumeMounts" -}}
{{- if .Values.postgres.tls.caSecret }}
- name: postgres-tls
  mountPath: /etc/mas/tls/postgres
  readOnly: true
{{- end }}
{{- end -}}

{{- define "mas.volumes" -}}
{{- with .Values.postgres.tls.caSecret }}
- name: postgres-tls
  secret:
    secretName: {{ . }}
{{- end }}
{{- end -}}
