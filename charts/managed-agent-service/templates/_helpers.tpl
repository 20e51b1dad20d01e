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

{{/* The apps the chart deploys: worker-long (the bulkhead) and the console only when enabled. */}}
{{- define "mas.apps" -}}
{{- $apps := list "api" "worker" "relay" "projector" -}}
{{- if .Values.workerLong.enabled -}}
{{- $apps = append $apps "worker-long" -}}
{{- end -}}
{{- if .Values.console.enabled -}}
{{- $apps = append $apps "console" -}}
{{- end -}}
{{- join " " $apps -}}
{{- end -}}

{{/* An app's key in values.yaml (a Kubernetes name has no capitals, a values key no hyphen). */}}
{{- define "mas.valuesKey" -}}
{{- ternary "workerLong" . (eq . "worker-long") -}}
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
MAS_MASTER_KEYS_PREVIOUS: false
MAS_API_KEY_PEPPER: true
MAS_API_KEY_PEPPERS_PREVIOUS: false
MAS_PAYLOAD_KEYS: true
MAS_PAYLOAD_KEY_CURRENT: false
MAS_CODEC_TOKEN: false
TEMPORAL_API_KEY: false
KAFKA_SASL_USERNAME: false
KAFKA_SASL_PASSWORD: false
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
- name: CONSOLE_PORT
  value: {{ $v.console.port | quote }}
- name: CONSOLE_PUBLIC_URL
  value: {{ $v.config.consolePublicUrl | quote }}
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
- name: TRUSTED_PROXY_HOPS
  value: {{ $v.config.trustedProxyHops | quote }}
- name: CONSOLE_TRUSTED_PROXY_HOPS
  value: {{ $v.config.trustedProxyHops | quote }}
- name: METRICS_HOST
  value: {{ $v.config.metricsHost | quote }}
- name: API_METRICS_PORT
  value: {{ $v.api.metricsPort | quote }}
- name: CONSOLE_METRICS_PORT
  value: {{ $v.console.metricsPort | quote }}
- name: WORKER_METRICS_PORT
  value: {{ (ternary $v.workerLong $v.worker (eq .app "worker-long")).metricsPort | quote }}
{{- if $v.workerLong.enabled }}
{{- /* Every app names the bulkhead's queue: the api puts it in each run's input (docs/operations.md). */}}
- name: TEMPORAL_LONG_ACTIVITY_TASK_QUEUE
  value: {{ default (printf "%s-long" $v.config.taskQueue) $v.workerLong.taskQueue | quote }}
{{- end }}
{{- if eq .app "worker-long" }}
- name: TEMPORAL_WORKER_ROLE
  value: long-activities
{{- end }}
- name: TEMPORAL_SDK_METRICS_PORT
  value: {{ $v.worker.sdkMetricsPort | quote }}
- name: RELAY_METRICS_PORT
  value: {{ $v.relay.metricsPort | quote }}
- name: PROJECTOR_METRICS_PORT
  value: {{ $v.projector.metricsPort | quote }}
{{- with $v.temporal.tls }}
{{- if .enabled }}
- name: TEMPORAL_TLS
  value: "true"
{{- with .serverName }}
- name: TEMPORAL_TLS_SERVER_NAME
  value: {{ . | quote }}
{{- end }}
{{- if .caSecret }}
- name: TEMPORAL_TLS_CA_FILE
  value: /etc/mas/tls/temporal-ca/ca.crt
{{- end }}
{{- if .clientSecret }}
- name: TEMPORAL_TLS_CERT_FILE
  value: /etc/mas/tls/temporal-client/tls.crt
- name: TEMPORAL_TLS_KEY_FILE
  value: /etc/mas/tls/temporal-client/tls.key
{{- end }}
{{- end }}
{{- end }}
{{- with $v.kafka.ssl }}
{{- if .enabled }}
- name: KAFKA_SSL
  value: "true"
{{- if .caSecret }}
- name: KAFKA_SSL_CA_FILE
  value: /etc/mas/tls/kafka-ca/ca.crt
{{- end }}
{{- if .clientSecret }}
- name: KAFKA_SSL_CERT_FILE
  value: /etc/mas/tls/kafka-client/tls.crt
- name: KAFKA_SSL_KEY_FILE
  value: /etc/mas/tls/kafka-client/tls.key
{{- end }}
{{- end }}
{{- end }}
{{- with $v.kafka.sasl.mechanism }}
- name: KAFKA_SASL_MECHANISM
  value: {{ . | quote }}
{{- end }}
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
- dist/apps/{{ ternary "worker" .app (eq .app "worker-long") }}/src/main.js
{{- end -}}

{{/* Secrets mounted as files, by volume name: PostgreSQL's CA, and Temporal's and Kafka's when TLS is on. */}}
{{- define "mas.tlsSecrets" -}}
{{- $v := .Values -}}
{{- with $v.postgres.tls.caSecret }}
postgres-tls: {{ . }}
{{- end }}
{{- if $v.temporal.tls.enabled }}
{{- with $v.temporal.tls.caSecret }}
temporal-ca: {{ . }}
{{- end }}
{{- with $v.temporal.tls.clientSecret }}
temporal-client: {{ . }}
{{- end }}
{{- end }}
{{- if $v.kafka.ssl.enabled }}
{{- with $v.kafka.ssl.caSecret }}
kafka-ca: {{ . }}
{{- end }}
{{- with $v.kafka.ssl.clientSecret }}
kafka-client: {{ . }}
{{- end }}
{{- end }}
{{- end -}}

{{- define "mas.volumeMounts" -}}
{{- range $name, $secret := include "mas.tlsSecrets" . | fromYaml }}
- name: {{ $name }}
  mountPath: /etc/mas/tls/{{ ternary "postgres" $name (eq $name "postgres-tls") }}
  readOnly: true
{{- end }}
{{- end -}}

{{- define "mas.volumes" -}}
{{- range $name, $secret := include "mas.tlsSecrets" . | fromYaml }}
- name: {{ $name }}
  secret:
    secretName: {{ $secret }}
{{- end }}
{{- end -}}
