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
{{- if .Values.apiStreams.enabled -}}
{{- $apps = append $apps "api-streams" -}}
{{- end -}}
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
{{- if eq . "worker-long" -}}workerLong
{{- else if eq . "api-streams" -}}apiStreams
{{- else -}}{{ . }}
{{- end -}}
{{- end -}}

{{/* An app's values: api-streams takes the api's ports. (dict "root" $ "app" "api") */}}
{{- define "mas.appValues" -}}
{{- $a := index .root.Values (include "mas.valuesKey" .app) -}}
{{- if eq .app "api-streams" -}}
{{- $a = merge (dict "port" .root.Values.api.port "metricsPort" .root.Values.api.metricsPort) $a -}}
{{- end -}}
{{- toJson $a -}}
{{- end -}}

{{/* selector labels of one app: (dict "root" $ "app" "api") */}}
{{- define "mas.selector" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .app }}
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

{{/*
The Secret keys each app reads (libs/config/src/config.ts, smtp.ts), one Secret per app with only
these: name -> required. loadConfig refuses to start any app without the four core keys
(DATABASE_URL, MAS_MASTER_KEY, MAS_API_KEY_PEPPER, MAS_PAYLOAD_KEYS), so even the relay and the
projector, which use none of the three keys, must hold them until libs/config asks for them per
app (docs/deploy.md, "Secrets"). The rest go only where they are used:
- MAS_PAYLOAD_KEY_CURRENT: beside MAS_PAYLOAD_KEYS (an id, needed with several keys).
- MAS_MASTER_KEYS_PREVIOUS: where stored model keys and webhook secrets are decrypted (api,
  console, worker, worker-long).
- MAS_API_KEY_PEPPERS_PREVIOUS: where API keys are checked (api).
- MAS_CODEC_TOKEN: the api's codec endpoint only.
- TEMPORAL_API_KEY: what talks to Temporal (api, worker, worker-long, the promote hook).
- KAFKA_SASL_*: what talks to Kafka (api, worker, worker-long, relay, projector).
- SMTP_URL (may hold a password): the console's mail.
"cli" is the migrate and promote hooks' Secret.
*/}}
{{- define "mas.secretKeysByApp" -}}
{{- $core := dict "DATABASE_URL" true "MAS_MASTER_KEY" true "MAS_API_KEY_PEPPER" true "MAS_PAYLOAD_KEYS" true "MAS_PAYLOAD_KEY_CURRENT" false -}}
{{- $kafka := dict "KAFKA_SASL_USERNAME" false "KAFKA_SASL_PASSWORD" false -}}
{{- $temporal := dict "TEMPORAL_API_KEY" false -}}
{{- $decrypts := dict "MAS_MASTER_KEYS_PREVIOUS" false -}}
api: {{ merge (dict "MAS_API_KEY_PEPPERS_PREVIOUS" false "MAS_CODEC_TOKEN" false) $decrypts $temporal $kafka $core | toJson }}
console: {{ merge (dict "SMTP_URL" false) $decrypts $core | toJson }}
worker: {{ merge (dict) $decrypts $temporal $kafka $core | toJson }}
worker-long: {{ merge (dict) $decrypts $temporal $kafka $core | toJson }}
relay: {{ merge (dict) $kafka $core | toJson }}
projector: {{ merge (dict) $kafka $core | toJson }}
cli: {{ merge (dict) $temporal $core | toJson }}
{{- end -}}

{{/* Whose Secret a pod reads: api-streams is the api's code, the hooks are the CLI. */}}
{{- define "mas.secretApp" -}}
{{- if eq . "api-streams" -}}api
{{- else if has . (list "migrate" "promote") -}}cli
{{- else -}}{{ . }}
{{- end -}}
{{- end -}}

{{/* An app's Secret: (dict "root" $ "app" "api"). secrets.existingSecrets.<app>, else
secrets.existingSecret (one Secret for all: each pod still references only its own keys), else
<release>-<app>-secrets (made by the chart with secrets.create). */}}
{{- define "mas.secretNameOf" -}}
{{- $app := include "mas.secretApp" .app -}}
{{- $s := .root.Values.secrets -}}
{{- default (default (printf "%s-%s-secrets" (include "mas.fullname" .root) $app) $s.existingSecret) (index $s.existingSecrets $app) -}}
{{- end -}}

{{/* The keys one pod references: (dict "root" $ "app" "migrate"): name -> required. */}}
{{- define "mas.secretKeysOf" -}}
{{- $keys := index (include "mas.secretKeysByApp" .root | fromYaml) (include "mas.secretApp" .app) -}}
{{- if eq .app "migrate" -}}
{{- $keys = omit $keys "TEMPORAL_API_KEY" -}}
{{- end -}}
{{- toJson $keys -}}
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
  value: {{ include "mas.taskQueue" .root | quote }}
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
  value: {{ include "mas.longTaskQueue" .root | quote }}
{{- end }}
{{- if eq .app "worker-long" }}
- name: TEMPORAL_WORKER_ROLE
  value: long-activities
{{- end }}
{{- with .buildId }}
{{- /* The build this worker polls as: its Deployment's, and the promote hook's argument. */}}
- name: TEMPORAL_BUILD_ID
  value: {{ . | quote }}
{{- end }}
- name: TEMPORAL_SDK_METRICS_PORT
  value: {{ $v.worker.sdkMetricsPort | quote }}
- name: RELAY_METRICS_PORT
  value: {{ $v.relay.metricsPort | quote }}
- name: PROJECTOR_METRICS_PORT
  value: {{ $v.projector.metricsPort | quote }}
{{- if not $v.temporal.insecure }}
- name: TEMPORAL_TLS
  value: "true"
{{- with $v.temporal.tls.serverName }}
- name: TEMPORAL_TLS_SERVER_NAME
  value: {{ . | quote }}
{{- end }}
{{- if $v.temporal.tls.caSecret }}
- name: TEMPORAL_TLS_CA_FILE
  value: /etc/mas/tls/temporal-ca/ca.crt
{{- end }}
{{- if $v.temporal.tls.clientSecret }}
- name: TEMPORAL_TLS_CERT_FILE
  value: /etc/mas/tls/temporal-client/tls.crt
- name: TEMPORAL_TLS_KEY_FILE
  value: /etc/mas/tls/temporal-client/tls.key
{{- end }}
{{- end }}
{{- if not $v.kafka.insecure }}
- name: KAFKA_SSL
  value: "true"
{{- if $v.kafka.ssl.caSecret }}
- name: KAFKA_SSL_CA_FILE
  value: /etc/mas/tls/kafka-ca/ca.crt
{{- end }}
{{- if $v.kafka.ssl.clientSecret }}
- name: KAFKA_SSL_CERT_FILE
  value: /etc/mas/tls/kafka-client/tls.crt
- name: KAFKA_SSL_KEY_FILE
  value: /etc/mas/tls/kafka-client/tls.key
{{- end }}
{{- end }}
{{- if not $v.postgres.insecure }}
{{- /* node-postgres: TLS with the certificate checked when DATABASE_URL names no sslmode. */}}
- name: PGSSLMODE
  value: verify-full
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
{{- $secret := include "mas.secretNameOf" (dict "root" .root "app" .app) }}
{{- range $name, $required := include "mas.secretKeysOf" (dict "root" .root "app" .app) | fromJson }}
- name: {{ $name }}
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: {{ $name }}
      {{- if not $required }}
      optional: true
      {{- end }}
{{- end }}
{{- range (index $v.secrets.extraKeys (include "mas.secretApp" .app) | default list) }}
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
- dist/apps/{{ include "mas.codeOf" .app }}/src/main.js
{{- end -}}

{{/* Secrets mounted as files, by volume name: PostgreSQL's CA, and Temporal's and Kafka's when TLS is on. */}}
{{- define "mas.tlsSecrets" -}}
{{- $v := .Values -}}
{{- with $v.postgres.tls.caSecret }}
postgres-tls: {{ . }}
{{- end }}
{{- if not $v.temporal.insecure }}
{{- with $v.temporal.tls.caSecret }}
temporal-ca: {{ . }}
{{- end }}
{{- with $v.temporal.tls.clientSecret }}
temporal-client: {{ . }}
{{- end }}
{{- end }}
{{- if not $v.kafka.insecure }}
{{- with $v.kafka.ssl.caSecret }}
kafka-ca: {{ . }}
{{- end }}
{{- with $v.kafka.ssl.clientSecret }}
kafka-client: {{ . }}
{{- end }}
{{- end }}
{{- end -}}

{{- define "mas.volumeMounts" -}}
- name: tmp
  mountPath: /tmp
{{- range $name, $secret := include "mas.tlsSecrets" . | fromYaml }}
- name: {{ $name }}
  mountPath: /etc/mas/tls/{{ ternary "postgres" $name (eq $name "postgres-tls") }}
  readOnly: true
{{- end }}
{{- end -}}

{{- define "mas.volumes" -}}
{{- /* The root filesystem is read-only (Pod Security restricted, docs/deploy.md): /tmp is the
one place the apps write (PDF and chart work, Node's own temporary files). */}}
- name: tmp
  emptyDir:
    sizeLimit: {{ .Values.tmpSizeLimit }}
{{- range $name, $secret := include "mas.tlsSecrets" . | fromYaml }}
- name: {{ $name }}
  secret:
    secretName: {{ $secret }}
{{- end }}
{{- end -}}


{{/* The workflows' task queue. Under the Temporal Worker Controller it is also the Temporal
Worker Deployment's name, which the controller makes <Kubernetes namespace>/<WorkerDeployment
name>, and which the worker and `mas deploy` take from TEMPORAL_TASK_QUEUE. */}}
{{- define "mas.taskQueue" -}}
{{- if .Values.workerController.enabled -}}
{{- printf "%s/%s" .Release.Namespace .Values.config.taskQueue -}}
{{- else -}}
{{- .Values.config.taskQueue -}}
{{- end -}}
{{- end -}}

{{- define "mas.longTaskQueue" -}}
{{- default (printf "%s-long" (include "mas.taskQueue" .)) .Values.workerLong.taskQueue -}}
{{- end -}}

{{/* The builds of the worker the chart runs, current last: [{id, tag, replicas, current}].
The current one is this release's image (worker.buildId, default the image's tag). */}}
{{- define "mas.workerBuilds" -}}
{{- $v := .Values -}}
{{- $current := toString (default (default .Chart.AppVersion $v.image.tag) $v.worker.buildId) -}}
{{- $builds := list -}}
{{- $seen := list $current -}}
{{- range $v.worker.keepBuilds -}}
{{- $id := toString (required "each of worker.keepBuilds needs its build id (id)" .id) -}}
{{- if has $id $seen -}}
{{- fail (printf "worker.keepBuilds: build %s is listed twice, or is the current build (worker.buildId / image.tag)" $id) -}}
{{- end -}}
{{- $seen = append $seen $id -}}
{{- $builds = append $builds (dict "id" $id "tag" (toString (default $id .tag)) "replicas" (default $v.worker.replicas .replicas) "current" false) -}}
{{- end -}}
{{- $builds = append $builds (dict "id" $current "tag" (default $.Chart.AppVersion $v.image.tag) "replicas" $v.worker.replicas "current" true) -}}
{{- toJson $builds -}}
{{- end -}}

{{/* A build id as a Kubernetes name's and label's part: lower case, [a-z0-9-] (0.1.0+05a7693345c1 -> 0-1-0-05a7693345c1). */}}
{{- define "mas.buildSlug" -}}
{{- regexReplaceAll "[^a-z0-9-]" (lower .) "-" | trunc 40 | trimSuffix "-" -}}
{{- end -}}

{{/* Pod Security `restricted`: the pod's and each container's securityContext. */}}
{{- define "mas.podSecurityContext" -}}
{{- $sc := deepCopy (.Values.podSecurityContext | default dict) -}}
{{- $_ := set $sc "runAsNonRoot" true -}}
{{- $_ = set $sc "seccompProfile" (dict "type" "RuntimeDefault") -}}
{{- toYaml $sc -}}
{{- end -}}
{{- define "mas.containerSecurityContext" -}}
{{- /* set, not merge: sprig's merge takes a value's false for unset and would let it through. */ -}}
{{- $sc := deepCopy (.Values.securityContext | default dict) -}}
{{- $_ := set $sc "allowPrivilegeEscalation" false -}}
{{- $_ = set $sc "readOnlyRootFilesystem" true -}}
{{- $_ = set $sc "runAsNonRoot" true -}}
{{- $_ = set $sc "privileged" false -}}
{{- $_ = set $sc "capabilities" (dict "drop" (list "ALL")) -}}
{{- $_ = set $sc "seccompProfile" (dict "type" "RuntimeDefault") -}}
{{- toYaml $sc -}}
{{- end -}}

{{/* The code an app runs: worker-long is the worker's in another role, api-streams the api's. */}}
{{- define "mas.codeOf" -}}
{{- if eq . "worker-long" -}}worker
{{- else if eq . "api-streams" -}}api
{{- else -}}{{ . }}
{{- end -}}
{{- end -}}

{{/* Values this chart no longer reads, refused rather than ignored: TLS is now on unless
`insecure` (issue 45), so a values file still saying tls.enabled=false would silently get TLS. */}}
{{- define "mas.validate" -}}
{{- if hasKey .Values.temporal.tls "enabled" -}}
{{- fail "temporal.tls.enabled is gone: TLS to Temporal is on unless temporal.insecure is true" -}}
{{- end -}}
{{- if hasKey .Values.kafka.ssl "enabled" -}}
{{- fail "kafka.ssl.enabled is gone: SSL to Kafka is on unless kafka.insecure is true" -}}
{{- end -}}
{{- if kindIs "slice" .Values.secrets.extraKeys -}}
{{- fail "secrets.extraKeys is now by app: { worker: [NAME], ... } (each app's Secret holds only its keys)" -}}
{{- end -}}
{{- end -}}
