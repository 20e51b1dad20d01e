{{- /*
The pod template of one app, for its Deployment (deployments.yaml), a build's worker Deployment
or the controller's WorkerDeployment (workers.yaml). Probes, from what each app serves
(docs/operations.md):
- api, api-streams: liveness GET /healthz (the process answers; never its dependencies, so an
  outage of PostgreSQL, Kafka or Temporal restarts nothing), readiness GET /readyz (503 while
  PostgreSQL, Kafka or Temporal is down: the Service stops sending it requests). Both on PORT.
- console: the same paths on CONSOLE_PORT (its /readyz checks PostgreSQL, all it needs).
- worker, worker-long, relay, projector: they serve no HTTP but GET /metrics on their metrics
  port, which answers while the event loop turns: liveness and readiness on it (they are behind
  no Service; readiness only gates the rollout and the PodDisruptionBudget).
Every app serves /metrics on a `metrics` port of its own, which Prometheus scrapes on the pod (the
annotations) and no Service routes: never on the api's or the console's public port.
(dict "root" $ "app" "worker" "build" (dict "id" .. "tag" ..) "containerName" "worker")
*/ -}}
{{- define "mas.podTemplate" -}}
{{- $root := .root -}}
{{- $app := .app -}}
{{- $a := include "mas.appValues" (dict "root" $root "app" $app) | fromJson -}}
{{- $http := has $app (list "api" "api-streams" "console") -}}
{{- $build := .build | default dict -}}
metadata:
  labels:
    {{- include "mas.selector" (dict "root" $root "app" $app) | nindent 4 }}
    {{- with $build.id }}
    managed-agent-service/build: {{ include "mas.buildSlug" . }}
    {{- end }}
  annotations:
    prometheus.io/scrape: "true"
    prometheus.io/port: {{ $a.metricsPort | quote }}
    prometheus.io/path: /metrics
    {{- with $build.id }}
    managed-agent-service/build-id: {{ . | quote }}
    {{- end }}
    {{- with $root.Values.podAnnotations }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  serviceAccountName: {{ include "mas.serviceAccountName" $root }}
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: {{ $root.Values.terminationGracePeriodSeconds }}
  {{- with $root.Values.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  securityContext:
    {{- include "mas.podSecurityContext" $root | nindent 4 }}
  containers:
    - name: {{ .containerName | default $app }}
      image: {{ printf "%s:%s" $root.Values.image.repository (default (default $root.Chart.AppVersion $root.Values.image.tag) $build.tag) | quote }}
      imagePullPolicy: {{ $root.Values.image.pullPolicy }}
      command:
        {{- include "mas.command" (dict "app" $app "nodeOptions" $a.nodeOptions) | nindent 8 }}
      env:
        {{- include "mas.env" (dict "root" $root "app" $app "extra" $a.extraEnv "buildId" $build.id) | nindent 8 }}
      ports:
        {{- if $http }}
        - name: http
          containerPort: {{ $a.port }}
          protocol: TCP
        {{- end }}
        - name: metrics
          containerPort: {{ $a.metricsPort }}
          protocol: TCP
      {{- if $http }}
      startupProbe:
        httpGet: { path: /healthz, port: http }
        periodSeconds: 2
        failureThreshold: 60
      livenessProbe:
        httpGet: { path: /healthz, port: http }
        periodSeconds: 10
        timeoutSeconds: 3
        failureThreshold: 3
      readinessProbe:
        # /readyz bounds each dependency's check at 2 s.
        httpGet: { path: /readyz, port: http }
        periodSeconds: 5
        timeoutSeconds: 3
        failureThreshold: 2
      lifecycle:
        # Time for the endpoint's removal to reach the load balancers before the drain starts.
        preStop:
          exec: { command: [sleep, "5"] }
      {{- else }}
      startupProbe:
        httpGet: { path: /metrics, port: metrics }
        periodSeconds: 2
        failureThreshold: 60
      livenessProbe:
        httpGet: { path: /metrics, port: metrics }
        periodSeconds: 10
        timeoutSeconds: 5
        failureThreshold: 3
      readinessProbe:
        httpGet: { path: /metrics, port: metrics }
        periodSeconds: 10
        timeoutSeconds: 5
        failureThreshold: 2
      {{- end }}
      resources:
        {{- toYaml $a.resources | nindent 8 }}
      securityContext:
        {{- include "mas.containerSecurityContext" $root | nindent 8 }}
      volumeMounts:
        {{- include "mas.volumeMounts" $root | trim | nindent 8 }}
  volumes:
    {{- include "mas.volumes" $root | trim | nindent 4 }}
  {{- if $root.Values.topologySpread }}
  topologySpreadConstraints:
    - maxSkew: 1
      topologyKey: kubernetes.io/hostname
      whenUnsatisfiable: ScheduleAnyway
      labelSelector:
        matchLabels:
          {{- include "mas.selector" (dict "root" $root "app" $app) | nindent 10 }}
          {{- with $build.id }}
          managed-agent-service/build: {{ include "mas.buildSlug" . }}
          {{- end }}
  {{- end }}
  {{- with $root.Values.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $root.Values.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $root.Values.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}
